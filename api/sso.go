package api

import (
	"crypto/subtle"
	"errors"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/auth/sso"
)

func (s *server) ssoRoutes(v1 routes) {
	v1.get("/sso", public(), s.ssoInfo)
	v1.get("/sso/login", public(), s.ssoLogin)
	v1.get("/sso/callback", public(), s.ssoCallback)
}

type ssoInfoView struct {
	Enabled  bool   `json:"enabled"`
	LoginURL string `json:"login_url,omitempty"`
}

// ssoInfo tells a login page whether to offer single sign-on.
func (s *server) ssoInfo(c *fiber.Ctx) error {
	if s.sso == nil {
		return c.JSON(ssoInfoView{})
	}
	return c.JSON(ssoInfoView{Enabled: true, LoginURL: "/api/v1/sso/login"})
}

func (s *server) ssoOff() error {
	return &apiError{Status: fiber.StatusNotFound, Code: codeNotFound, Message: "single sign-on is not configured on this server (auth.sso)"}
}

// ssoStateCookie binds a sign-in to the browser that started it: it holds
// the state of the login in flight, and the callback must come with it, so a
// callback URL made in someone else's sign-in (login CSRF: the victim ends up
// signed in as the attacker) is refused.
const ssoStateCookie = "ringjob_sso_state"

// ssoStatePath limits the state cookie to the callback.
const ssoStatePath = "/api/v1/sso/callback"

func (s *server) ssoStateCookieOf(c *fiber.Ctx, value string, expires time.Time) *fiber.Cookie {
	return &fiber.Cookie{Name: ssoStateCookie, Value: value, Path: ssoStatePath, Expires: expires, HTTPOnly: true,
		Secure: s.secureCookies || c.Protocol() == "https", SameSite: fiber.CookieSameSiteLaxMode}
}

// sameOriginPath rebuilds a return_to value as a path on this server: it is
// parsed, anything but path, query and fragment refused, and put together
// again, so what the browser is sent to is a path by construction, never
// another origin ("//host", "/\thost", or "/%0B/host", which some
// browsers and servers turn into "//host").
func sameOriginPath(raw string) (string, bool) {
	if raw == "" || raw[0] != '/' || len(raw) > 255 {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "", false
	}
	for _, part := range []string{raw, u.Path, u.RawQuery, u.Fragment} {
		if strings.IndexFunc(part, func(r rune) bool { return r == '\\' || unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0 {
			return "", false
		}
	}
	out := (&url.URL{Path: "/" + strings.TrimLeft(u.Path, "/"), RawQuery: u.RawQuery, Fragment: u.Fragment}).String()
	if !strings.HasPrefix(out, "/") || strings.HasPrefix(out, "//") {
		return "", false
	}
	return out, true
}

// ssoLogin redirects the browser to the identity provider.
func (s *server) ssoLogin(c *fiber.Ctx) error {
	if s.sso == nil {
		return s.ssoOff()
	}
	raw := c.Query("return_to", "/")
	returnTo, ok := sameOriginPath(raw)
	if !ok {
		return badRequest("return_to", "must be a path on this server such as /jobs, got %q", raw)
	}
	st, err := s.sso.Begin(c.UserContext())
	if err != nil {
		return &apiError{Status: fiber.StatusBadGateway, Code: codeTargetError, Message: "the identity provider cannot be reached; try again later"}
	}
	if err := s.id.SSOBegin(c.UserContext(), st.State, st.Verifier, st.Nonce, returnTo); err != nil {
		return err
	}
	c.Cookie(s.ssoStateCookieOf(c, st.State, time.Now().Add(identity.SSOStateTTL)))
	return c.Redirect(st.URL, fiber.StatusFound)
}

// ssoCallback finishes a login: state once, and only in the browser that
// started it (the state cookie); code exchange with PKCE, ID token verified,
// user created or refreshed, session cookie set.
func (s *server) ssoCallback(c *fiber.Ctx) error {
	if s.sso == nil {
		return s.ssoOff()
	}
	ctx := c.UserContext()
	bound := c.Cookies(ssoStateCookie)
	c.Cookie(s.ssoStateCookieOf(c, "", time.Unix(0, 0))) // one callback per login, whatever it ends in
	if e := c.Query("error"); e != "" {
		s.id.SSOLoginFailed(ctx, "provider error: "+e)
		return &apiError{Status: fiber.StatusUnauthorized, Code: codeUnauthenticated, Message: "the identity provider refused the sign-in: " + truncateMsg(e+" "+c.Query("error_description"))}
	}
	state := c.Query("state")
	if bound == "" || subtle.ConstantTimeCompare([]byte(bound), []byte(state)) != 1 {
		s.id.SSOLoginFailed(ctx, "callback in a browser that did not start this sign-in")
		return &apiError{Status: fiber.StatusUnauthorized, Code: codeUnauthenticated,
			Message: "this sign-in was not started in this browser (or its cookie expired); start again from /api/v1/sso/login"}
	}
	x, err := s.id.SSOTake(ctx, state)
	if err != nil {
		return err
	}
	id, err := s.sso.Finish(ctx, c.Query("code"), x.Verifier, x.Nonce)
	if err != nil {
		s.id.SSOLoginFailed(ctx, err.Error())
		if errors.Is(err, sso.ErrRefused) {
			return &apiError{Status: fiber.StatusUnauthorized, Code: codeUnauthenticated, Message: err.Error()}
		}
		return &apiError{Status: fiber.StatusBadGateway, Code: codeTargetError, Message: "the identity provider cannot be reached; try again later"}
	}
	res, err := s.id.LoginSSO(ctx, identity.SSOIdentity{Subject: id.Subject, Username: id.Username, Email: id.Email, Groups: id.Groups}, s.clientAddr(c))
	if err != nil {
		return err
	}
	c.Cookie(s.sessionCookie(c, res.Cookie, timeMs(res.Session.ExpiresMs)))
	returnTo, ok := sameOriginPath(x.ReturnTo)
	if !ok {
		returnTo = "/"
	}
	return c.Redirect(returnTo, fiber.StatusFound)
}

func truncateMsg(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}

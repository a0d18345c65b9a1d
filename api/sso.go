package api

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/auth/sso"
	"github.com/ringjob/ringjob/service"
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

// ssoLogin redirects the browser to the identity provider.
func (s *server) ssoLogin(c *fiber.Ctx) error {
	if s.sso == nil {
		return s.ssoOff()
	}
	returnTo := c.Query("return_to", "/")
	if !strings.HasPrefix(returnTo, "/") || strings.HasPrefix(returnTo, "//") || strings.ContainsAny(returnTo, "\\\r\n") || len(returnTo) > 255 {
		return badRequest("return_to", "must be a path on this server such as /jobs, got %q", returnTo)
	}
	st, err := s.sso.Begin(c.UserContext())
	if err != nil {
		return &apiError{Status: fiber.StatusBadGateway, Code: codeTargetError, Message: "the identity provider cannot be reached; try again later"}
	}
	if err := s.svc.SSOBegin(c.UserContext(), st.State, st.Verifier, st.Nonce, returnTo); err != nil {
		return err
	}
	return c.Redirect(st.URL, fiber.StatusFound)
}

// ssoCallback finishes a login: state once, code exchange with PKCE, ID
// token verified, user created or refreshed, session cookie set.
func (s *server) ssoCallback(c *fiber.Ctx) error {
	if s.sso == nil {
		return s.ssoOff()
	}
	ctx := c.UserContext()
	if e := c.Query("error"); e != "" {
		s.svc.SSOLoginFailed(ctx, "provider error: "+e)
		return &apiError{Status: fiber.StatusUnauthorized, Code: codeUnauthenticated, Message: "the identity provider refused the sign-in: " + truncateMsg(e+" "+c.Query("error_description"))}
	}
	x, err := s.svc.SSOTake(ctx, c.Query("state"))
	if err != nil {
		return err
	}
	id, err := s.sso.Finish(ctx, c.Query("code"), x.Verifier, x.Nonce)
	if err != nil {
		s.svc.SSOLoginFailed(ctx, err.Error())
		if errors.Is(err, sso.ErrRefused) {
			return &apiError{Status: fiber.StatusUnauthorized, Code: codeUnauthenticated, Message: err.Error()}
		}
		return &apiError{Status: fiber.StatusBadGateway, Code: codeTargetError, Message: "the identity provider cannot be reached; try again later"}
	}
	res, err := s.svc.LoginSSO(ctx, service.SSOIdentity{Subject: id.Subject, Username: id.Username, Email: id.Email, Groups: id.Groups}, c.IP())
	if err != nil {
		return err
	}
	c.Cookie(s.sessionCookie(c, res.Cookie, timeMs(res.Session.ExpiresMs)))
	return c.Redirect(x.ReturnTo, fiber.StatusFound)
}

func truncateMsg(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}

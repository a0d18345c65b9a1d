package api

import (
	"crypto/subtle"
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/service"
)

// Credentials and their names on the wire.
const (
	// SessionCookie holds a browser session (HttpOnly, SameSite=Lax, Secure
	// over TLS).
	SessionCookie = "rj_session"
	// DeviceCookie holds a device's proof of a recent successful password
	// login (HttpOnly, SameSite=Strict, Secure over TLS, sent to the login
	// endpoint only): it exempts the device from the user-wide login limit,
	// which anybody can trip, while the per-address limits still apply.
	DeviceCookie = "rj_device"
	// devicePath is the only path the device cookie is sent to: the login.
	devicePath = "/api/v1/session"
	// CSRFHeader must carry the session's CSRF token (from POST
	// /api/v1/session or GET /api/v1/me) on every state-changing request made
	// with the session cookie. Requests with an API token need none.
	CSRFHeader = "X-CSRF-Token"

	localPrincipal = "principal"
	localAuthErr   = "auth_error"
)

// authenticate finds who a /api/v1 request acts as, from "Authorization:
// Bearer <token>" or else the session cookie, and puts it (with the client
// address and request id, for the audit log) into the request's context.
// It refuses nothing by itself: each route's rule (authorize) decides, so a
// stale cookie does not stand in the way of logging in again. Credentials are
// never logged.
func (s *server) authenticate(c *fiber.Ctx) error {
	var p *access.Principal
	var authErr error
	if h := c.Get(fiber.HeaderAuthorization); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			authErr = &apiError{Status: fiber.StatusUnauthorized, Code: codeUnauthenticated,
				Message: "the Authorization header must be \"Bearer <token>\""}
		} else {
			p, authErr = s.id.AuthenticateToken(c.UserContext(), strings.TrimSpace(token))
		}
	} else if cookie := c.Cookies(SessionCookie); cookie != "" {
		p, authErr = s.id.AuthenticateSession(c.UserContext(), cookie)
	}
	if authErr != nil {
		if !errors.Is(authErr, identity.ErrUnauthenticated) {
			var ae *apiError
			if !errors.As(authErr, &ae) {
				return authErr // the database failed: 500, not "bad token"
			}
		}
		c.Locals(localAuthErr, authErr)
		p = nil
	}
	if p != nil {
		c.Locals(localPrincipal, p)
	}
	rid, _ := c.Locals(localRequestID).(string)
	c.SetUserContext(service.WithActor(c.UserContext(), service.Actor{Principal: p, ClientAddr: s.clientAddr(c), RequestID: rid}))
	return c.Next()
}

// principal returns who the request acts as (nil before authorize passed a
// public route).
func principal(c *fiber.Ctx) *access.Principal {
	p, _ := c.Locals(localPrincipal).(*access.Principal)
	return p
}

// unauthenticated is the 401 for a route that needs credentials.
func unauthenticated(c *fiber.Ctx) error {
	if err, ok := c.Locals(localAuthErr).(error); ok {
		var ae *apiError
		if errors.As(err, &ae) {
			return ae
		}
		return &apiError{Status: fiber.StatusUnauthorized, Code: codeUnauthenticated, Message: err.Error()}
	}
	return &apiError{Status: fiber.StatusUnauthorized, Code: codeUnauthenticated,
		Message: "not authenticated; send \"Authorization: Bearer <token>\" (an API token, or the admin token printed at the first start), or log in with POST /api/v1/session"}
}

// checkCSRF requires the session's CSRF token on a state-changing request
// made with a session cookie.
func checkCSRF(c *fiber.Ctx, p *access.Principal) error {
	if p.SessionID == 0 {
		return nil
	}
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return nil
	}
	got := c.Get(CSRFHeader)
	if got == "" {
		return &apiError{Status: fiber.StatusForbidden, Code: codeCSRF,
			Message: "missing " + CSRFHeader + " header; a request made with the session cookie that changes something must carry the csrf_token from POST /api/v1/session or GET /api/v1/me"}
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(p.CSRFToken)) != 1 {
		return &apiError{Status: fiber.StatusForbidden, Code: codeCSRF,
			Message: "the " + CSRFHeader + " header does not match this session; read csrf_token again from GET /api/v1/me"}
	}
	return nil
}

// requireAdmin lets only admin principals through (after authenticate): for
// /debug/pprof, outside /api/v1.
func (s *server) requireAdmin(c *fiber.Ctx) error {
	p := principal(c)
	if p == nil {
		return unauthenticated(c)
	}
	if err := p.Check(access.PermSystemManage, 0); err != nil {
		return err
	}
	return c.Next()
}

package api

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
)

const localPrincipal = "principal"

// authenticate requires "Authorization: Bearer <token>" on every /api/v1
// route. The token is never logged.
func (s *server) authenticate(c *fiber.Ctx) error {
	h := c.Get(fiber.HeaderAuthorization)
	if h == "" {
		return &apiError{Status: fiber.StatusUnauthorized, Code: codeUnauthenticated,
			Message: "missing Authorization header; send \"Authorization: Bearer <token>\" with the API token printed at the first start or set in the config"}
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return &apiError{Status: fiber.StatusUnauthorized, Code: codeUnauthenticated,
			Message: "the Authorization header must be \"Bearer <token>\""}
	}
	p, err := s.svc.Authenticate(c.UserContext(), strings.TrimSpace(token))
	if err != nil {
		if err == service.ErrUnauthenticated {
			return &apiError{Status: fiber.StatusUnauthorized, Code: codeUnauthenticated,
				Message: "the API token is not valid; check it, or create a new one"}
		}
		return err
	}
	c.Locals(localPrincipal, p)
	return c.Next()
}

// requireAdmin lets only admin principals through (after authenticate).
func (s *server) requireAdmin(c *fiber.Ctx) error {
	if p, ok := c.Locals(localPrincipal).(service.Principal); !ok || (p.Role != store.RoleAdmin && p.Role != "") {
		return &apiError{Status: fiber.StatusForbidden, Code: codeForbidden, Message: "only admin tokens may read profiles"}
	}
	return c.Next()
}

package api

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/service"
)

// Error codes in the error envelope.
const (
	codeInvalidArgument  = "invalid_argument"
	codeNotFound         = "not_found"
	codeConflict         = "conflict"
	codeKeyReused        = "idempotency_key_reused"
	codePrecondition     = "precondition_failed"
	codeUnauthenticated  = "unauthenticated"
	codePayloadTooLarge  = "payload_too_large"
	codeMethodNotAllowed = "method_not_allowed"
	codeTargetError      = "target_error"
	codeUnavailable      = "unavailable"
	codeInternal         = "internal"
	codePermissionDenied = "permission_denied"
	codeCSRF             = "csrf_failed"
	codeTooManyRequests  = "too_many_requests"
	codeChangedSincePlan = "changed_since_plan"
)

// apiError is an error with its HTTP status and envelope fields.
type apiError struct {
	Status     int
	Code       string
	Message    string
	Field      string
	Permission string // the missing permission of a 403
	RetryAfter int    // seconds, for a 429
	// Problems lists every problem of an invalid declaration (plan, apply).
	Problems []problemView
	// Objects names what changed since a plan (changed_since_plan).
	Objects []string
}

// problemView is one problem of a declaration: the object and the field.
type problemView struct {
	Kind    string `json:"kind"`
	Group   string `json:"group"`
	Name    string `json:"name,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return e.Message }

// errorBody is the JSON error envelope: {"error": {"code", "message", "field"}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	// Permission names what a 403 permission_denied lacks ("jobs.write").
	Permission string `json:"permission,omitempty"`
	RequestID  string `json:"request_id,omitempty"`
	// Problems: every problem of an invalid declaration (POST /plan, /apply).
	Problems []problemView `json:"problems,omitempty"`
	// Objects: what changed since the plan (changed_since_plan), "app_name" or "app_name/name".
	Objects []string `json:"objects,omitempty"`
}

func badRequest(field, format string, args ...any) *apiError {
	return &apiError{Status: fiber.StatusBadRequest, Code: codeInvalidArgument, Field: field, Message: fmt.Sprintf(format, args...)}
}

// toAPIError maps an error from a handler, the service or Fiber to its HTTP form.
func toAPIError(err error) (ae *apiError, internal bool) {
	var (
		a   *apiError
		ve  *service.ValidationError
		nf  *service.NotFoundError
		ce  *service.ConflictError
		pe  *service.PreconditionError
		te  *service.TargetError
		kr  *service.KeyReusedError
		ai  *service.ApplyInvalidError
		pc  *service.PlanConflictError
		de  *access.Denied
		th  *identity.ThrottledError
		be  *identity.BusyError
		fe  *fiber.Error
		msg = err.Error()
	)
	switch {
	case errors.As(err, &a):
		return a, a.Status >= 500 && a.Code == codeInternal
	case errors.As(err, &de):
		return &apiError{Status: fiber.StatusForbidden, Code: codePermissionDenied, Permission: string(de.Perm), Message: de.Error()}, false
	case errors.As(err, &th):
		return &apiError{Status: fiber.StatusTooManyRequests, Code: codeTooManyRequests, Message: th.Error(), RetryAfter: int(th.RetryAfter.Seconds()) + 1}, false
	case errors.As(err, &be):
		return &apiError{Status: fiber.StatusServiceUnavailable, Code: codeUnavailable, Message: be.Error(), RetryAfter: max(1, int(be.RetryAfter.Seconds()))}, false
	case errors.Is(err, identity.ErrLoginFailed):
		return &apiError{Status: fiber.StatusUnauthorized, Code: codeUnauthenticated, Message: msg}, false
	case errors.As(err, &ai):
		ps := make([]problemView, len(ai.Problems))
		for i, p := range ai.Problems {
			ps[i] = problemView{Kind: p.Kind, Group: p.Group, Name: p.Name, Field: p.Field, Message: p.Message}
		}
		return &apiError{Status: fiber.StatusBadRequest, Code: codeInvalidArgument, Message: msg, Problems: ps}, false
	case errors.As(err, &pc):
		return &apiError{Status: fiber.StatusConflict, Code: codeChangedSincePlan, Message: msg, Objects: pc.Objects}, false
	case errors.As(err, &ve):
		return &apiError{Status: fiber.StatusBadRequest, Code: codeInvalidArgument, Field: ve.Field, Message: ve.Message}, false
	case errors.As(err, &nf):
		return &apiError{Status: fiber.StatusNotFound, Code: codeNotFound, Message: msg}, false
	case errors.As(err, &pe):
		return &apiError{Status: fiber.StatusPreconditionFailed, Code: codePrecondition, Field: "If-Match", Message: msg}, false
	case errors.As(err, &ce):
		return &apiError{Status: fiber.StatusConflict, Code: codeConflict, Field: ce.Field, Message: ce.Message}, false
	case errors.As(err, &kr):
		return &apiError{Status: fiber.StatusUnprocessableEntity, Code: codeKeyReused, Field: "Idempotency-Key", Message: msg}, false
	case errors.As(err, &te):
		return &apiError{Status: fiber.StatusBadGateway, Code: codeTargetError, Message: msg}, false
	case errors.Is(err, identity.ErrUnauthenticated):
		return &apiError{Status: fiber.StatusUnauthorized, Code: codeUnauthenticated, Message: msg}, false
	case errors.Is(err, service.ErrNoScheduler):
		return &apiError{Status: fiber.StatusServiceUnavailable, Code: codeUnavailable, Message: msg}, false
	case errors.As(err, &fe):
		switch fe.Code {
		case fiber.StatusRequestEntityTooLarge:
			return &apiError{Status: fe.Code, Code: codePayloadTooLarge, Message: "the request body is larger than this server accepts; send less data (job params are limited to 64 KiB)"}, false
		case fiber.StatusNotFound:
			return &apiError{Status: fe.Code, Code: codeNotFound, Message: fe.Message + "; the API is described at /api/v1/openapi.json"}, false
		case fiber.StatusMethodNotAllowed:
			return &apiError{Status: fe.Code, Code: codeMethodNotAllowed, Message: fe.Message}, false
		}
		if fe.Code >= 400 && fe.Code < 500 {
			return &apiError{Status: fe.Code, Code: codeInvalidArgument, Message: fe.Message}, false
		}
	}
	return &apiError{Status: fiber.StatusInternalServerError, Code: codeInternal,
		Message: "internal error; the server log has the details under this request id"}, true
}

// errorHandler writes the envelope. Internal errors are logged with the
// request id; their details never reach the client.
func (s *server) errorHandler(c *fiber.Ctx, err error) error {
	ae, internal := toAPIError(err)
	rid, _ := c.Locals(localRequestID).(string)
	if internal {
		s.log.WithFields(logrus.Fields{"request_id": rid, "method": c.Method(), "path": c.Path()}).WithError(err).Error("request failed")
	}
	if ae.Status == fiber.StatusUnauthorized {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="ringjob"`)
	}
	if ae.RetryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(ae.RetryAfter))
	}
	msg := ae.Message
	if ae.Field != "" && !strings.HasPrefix(msg, ae.Field) {
		msg = ae.Field + ": " + msg // messages read on their own
	}
	body := errorBody{Error: errorDetail{Code: ae.Code, Message: msg, Field: ae.Field, Permission: ae.Permission, Problems: ae.Problems, Objects: ae.Objects}}
	if internal {
		body.Error.RequestID = rid
	}
	return c.Status(ae.Status).JSON(body)
}

package api

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/auth/access"
)

// localAuditRunID is the run a write created (a trigger), for its log line.
const localAuditRunID = "audit_run_id"

// isWrite: the methods whose requests change something.
func isWrite(method string) bool {
	switch method {
	case fiber.MethodPost, fiber.MethodPut, fiber.MethodPatch, fiber.MethodDelete:
		return true
	}
	return false
}

// auditFields are what a write's log line says besides the request: who
// (the principal the request authenticated as) and what (the group, job or
// run it names or created). Extend principalFields when principals carry
// more than a token.
func auditFields(c *fiber.Ctx) logrus.Fields {
	f := logrus.Fields{}
	if p := principal(c); p != nil {
		for k, v := range principalFields(p) {
			f[k] = v
		}
	}
	route := c.Route().Path
	if id, err := strconv.ParseInt(c.Params("id"), 10, 64); err == nil {
		switch {
		case strings.HasPrefix(route, "/api/v1/jobs/"):
			f["job_id"] = id
		case strings.HasPrefix(route, "/api/v1/groups/"):
			f["group_id"] = id
		case strings.HasPrefix(route, "/api/v1/runs/"):
			f["run_id"] = id
		}
	}
	if id, ok := c.Locals(localAuditRunID).(int64); ok {
		f["run_id"] = id
	}
	return f
}

func principalFields(p *access.Principal) logrus.Fields {
	f := logrus.Fields{"principal": p.Name, "principal_kind": string(p.Kind), "admin": p.IsAdmin()}
	if p.TokenID != 0 {
		f["token_id"], f["token_name"] = p.TokenID, p.TokenName
	}
	if p.SessionID != 0 {
		f["session_id"] = p.SessionID
	}
	return f
}

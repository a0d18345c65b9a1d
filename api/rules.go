package api

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/service"
)

// Scope says which group a route's permission is checked on.
type Scope string

// The scopes of route rules.
const (
	// ScopePublic routes need no credentials (login, SSO redirects).
	ScopePublic Scope = "public"
	// ScopeAuthenticated routes need any principal (who am I, own tokens,
	// schedule preview); the handler narrows further where needed.
	ScopeAuthenticated Scope = "authenticated"
	// ScopeSystem routes need a system permission (admins only).
	ScopeSystem Scope = "system"
	// ScopeGroup routes check the permission on the group whose id is the
	// :id path parameter.
	ScopeGroup Scope = "group"
	// ScopeJob routes check it on the group of the job :id.
	ScopeJob Scope = "job"
	// ScopeRun routes check it on the group of the run :id.
	ScopeRun Scope = "run"
	// ScopeJobName routes check it on the group named by the :app_name path
	// parameter (the job :name is looked up within it).
	ScopeJobName Scope = "job_name"
	// ScopeWorkflow routes check it on the group of the workflow :id.
	ScopeWorkflow Scope = "workflow"
	// ScopeWorkflowRun routes check it on the group of the workflow run :id.
	ScopeWorkflowRun Scope = "workflow_run"
	// ScopeHandler routes need the permission on at least one group; the
	// handler then checks the group named in the body, or lists only what
	// the principal may see.
	ScopeHandler Scope = "handler"
)

// Rule is the permission rule of one route: the permission a principal needs
// and where it is checked. It is declared where the route is registered.
type Rule struct {
	Perm  access.Perm
	Scope Scope
}

// Rule constructors, for short route tables.
func public() Rule                        { return Rule{Scope: ScopePublic} }
func authenticated() Rule                 { return Rule{Scope: ScopeAuthenticated} }
func system(p access.Perm) Rule           { return Rule{Perm: p, Scope: ScopeSystem} }
func onGroup(p access.Perm) Rule          { return Rule{Perm: p, Scope: ScopeGroup} }
func onJob(p access.Perm) Rule            { return Rule{Perm: p, Scope: ScopeJob} }
func onRun(p access.Perm) Rule            { return Rule{Perm: p, Scope: ScopeRun} }
func onJobName(p access.Perm) Rule        { return Rule{Perm: p, Scope: ScopeJobName} }
func checkedInHandler(p access.Perm) Rule { return Rule{Perm: p, Scope: ScopeHandler} }
func onWorkflow(p access.Perm) Rule       { return Rule{Perm: p, Scope: ScopeWorkflow} }
func onWorkflowRun(p access.Perm) Rule    { return Rule{Perm: p, Scope: ScopeWorkflowRun} }

// routeNamePrefix marks a route's name as its rule ("rule:job:jobs.read"),
// so the rule can be read back from the router itself (ParseRouteRule).
const routeNamePrefix = "rule:"

// String is the rule as a route name.
func (r Rule) String() string { return routeNamePrefix + string(r.Scope) + ":" + string(r.Perm) }

// ParseRouteRule reads the rule of a route from its name; ok is false for a
// route registered without one.
func ParseRouteRule(name string) (Rule, bool) {
	rest, ok := strings.CutPrefix(name, routeNamePrefix)
	if !ok {
		return Rule{}, false
	}
	sc, perm, ok := strings.Cut(rest, ":")
	if !ok {
		return Rule{}, false
	}
	return Rule{Perm: access.Perm(perm), Scope: Scope(sc)}, true
}

// routes registers /api/v1 routes, each with its rule.
type routes struct {
	s *server
	r fiber.Router
}

func (rt routes) add(method, path string, rule Rule, h fiber.Handler) {
	rt.r.Add(method, path, rt.s.authorize(rule), h).Name(rule.String())
}

func (rt routes) get(path string, rule Rule, h fiber.Handler) { rt.add(fiber.MethodGet, path, rule, h) }
func (rt routes) post(path string, rule Rule, h fiber.Handler) {
	rt.add(fiber.MethodPost, path, rule, h)
}
func (rt routes) put(path string, rule Rule, h fiber.Handler) { rt.add(fiber.MethodPut, path, rule, h) }
func (rt routes) patch(path string, rule Rule, h fiber.Handler) {
	rt.add(fiber.MethodPatch, path, rule, h)
}
func (rt routes) delete(path string, rule Rule, h fiber.Handler) {
	rt.add(fiber.MethodDelete, path, rule, h)
}

// authorize enforces a rule: 401 without a principal, 403 naming the missing
// permission, 403 without the CSRF token on a cookie session's write.
func (s *server) authorize(rule Rule) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if rule.Scope == ScopePublic {
			return c.Next()
		}
		p := principal(c)
		if p == nil {
			return unauthenticated(c)
		}
		if err := checkCSRF(c, p); err != nil {
			return err
		}
		switch rule.Scope {
		case ScopeAuthenticated:
		case ScopeSystem:
			if err := p.Check(rule.Perm, 0); err != nil {
				return err
			}
		case ScopeHandler:
			if !p.CanSomewhere(rule.Perm) {
				return &access.Denied{Perm: rule.Perm}
			}
		case ScopeGroup, ScopeJob, ScopeRun, ScopeJobName, ScopeWorkflow, ScopeWorkflowRun:
			if p.IsAdmin() {
				break
			}
			group, found, err := s.groupOf(c, rule.Scope)
			if err != nil {
				return err
			}
			if !found {
				// Let the handler answer 400/404, but only to someone who
				// could act on some group.
				if !p.CanSomewhere(rule.Perm) {
					return &access.Denied{Perm: rule.Perm}
				}
				break
			}
			if err := p.Check(rule.Perm, group); err != nil {
				return err
			}
		default:
			return fmt.Errorf("route %s %s: unknown rule scope %q", c.Method(), c.Route().Path, rule.Scope)
		}
		return c.Next()
	}
}

// groupOf finds the group a :id path parameter belongs to; found is false
// when the id is malformed or names nothing.
func (s *server) groupOf(c *fiber.Ctx, sc Scope) (group int64, found bool, err error) {
	if sc == ScopeJobName {
		app, perr := url.PathUnescape(c.Params("app_name"))
		if perr != nil {
			return 0, false, nil
		}
		g, err := s.svc.GroupIDByAppName(c.UserContext(), app)
		return g, err == nil, ignoreNotFound(err)
	}
	id, perr := strconv.ParseInt(c.Params("id"), 10, 64)
	if perr != nil || id <= 0 {
		return 0, false, nil
	}
	ctx := c.UserContext()
	switch sc {
	case ScopeGroup:
		return id, true, nil
	case ScopeJob:
		g, err := s.id.GroupOfJob(ctx, id)
		return g, err == nil, ignoreNotFound(err)
	case ScopeRun:
		g, err := s.id.GroupOfRun(ctx, id)
		return g, err == nil, ignoreNotFound(err)
	case ScopeWorkflow, ScopeWorkflowRun:
		return s.groupOfWorkflow(ctx, sc, id)
	}
	return 0, false, nil
}

func ignoreNotFound(err error) error {
	var nf *service.NotFoundError
	if err == nil || errors.As(err, &nf) {
		return nil
	}
	return err
}

// require checks perm on group inside a handler (ScopeHandler routes).
func require(c *fiber.Ctx, perm access.Perm, group int64) error {
	p := principal(c)
	if p == nil {
		return unauthenticated(c)
	}
	return p.Check(perm, group)
}

// visibleGroups is the OnlyGroups filter of a listing: nil for an admin (all
// groups), else the groups where the principal holds perm.
func visibleGroups(c *fiber.Ctx, perm access.Perm) []int64 {
	ids, all := principal(c).GroupsWith(perm)
	if all {
		return nil
	}
	if ids == nil {
		ids = []int64{}
	}
	return ids
}

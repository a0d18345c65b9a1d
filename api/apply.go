package api

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/apitypes"
	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/service"
)

// DefaultApplyBodyLimit caps the decompressed body of POST /api/v1/plan and
// /apply: a declaration of tens of thousands of jobs (10,000 jobs are about
// 3 MB of JSON, 100 KB gzip-compressed). The compressed body must fit the
// server's ordinary body limit, so an oversized request is still refused
// from its headers.
const DefaultApplyBodyLimit = 32 << 20

// applyRequest is the body of POST /api/v1/plan and /api/v1/apply: a
// declared state in the jobs-as-code format (docs/jobs-as-code.md).
type applyRequest struct {
	Groups []applyGroup `json:"groups"`
	Jobs   []applyJob   `json:"jobs"`
	Scope  []string     `json:"scope"`
	Prune  bool         `json:"prune"`
	// Expect (apply only) is the plan the caller reviewed; null applies
	// whatever the plan is now.
	Expect []changeView `json:"expect"`
}

type applyGroup struct {
	AppName             string   `json:"app_name"`
	Title               string   `json:"title"`
	Members             []string `json:"members"`
	Protocol            string   `json:"protocol"`
	AcceptRegistrations *bool    `json:"accept_registrations"`
	FailureDestination  string   `json:"failure_destination"`
}

type applyJob struct {
	Group string `json:"group"`
	Name  string `json:"name"`
	apitypes.JobFields
	Children []string `json:"children"`
	apitypes.JobLimits
	Enabled bool `json:"enabled"`
}

// changeView is one change of a plan.
type changeView struct {
	Op      service.ChangeOp               `json:"op"`
	Kind    string                         `json:"kind"`
	Group   string                         `json:"group"`
	Name    string                         `json:"name,omitempty"`
	Version string                         `json:"version,omitempty"`
	Diff    map[string]service.FieldChange `json:"diff,omitempty"`
}

type planView struct {
	Changes []changeView   `json:"changes"`
	Summary map[string]int `json:"summary"`
	Applied bool           `json:"applied"`
}

func (r applyRequest) params() service.ApplyParams {
	p := service.ApplyParams{Scope: r.Scope, Prune: r.Prune}
	for _, g := range r.Groups {
		p.Groups = append(p.Groups, service.ApplyGroup{AppName: g.AppName, Title: g.Title, Members: g.Members, Protocol: g.Protocol, AcceptRegistrations: g.AcceptRegistrations,
			FailureDestination: g.FailureDestination})
	}
	for _, j := range r.Jobs {
		aj := service.ApplyJob{Group: j.Group, Enabled: j.Enabled, JobSpec: service.JobSpec{
			Name: j.Name, Description: j.Description, ScheduleType: j.ScheduleType, ScheduleConf: j.ScheduleConf, TimeZone: j.TimeZone,
			MisfirePolicy: j.MisfirePolicy, Handler: j.Handler, Params: j.Params, RouteStrategy: j.RouteStrategy, BlockStrategy: j.BlockStrategy,
			TimeoutSec: j.TimeoutSec, RetryCount: j.RetryCount, ShardCount: j.ShardCount, PinnedTargets: j.PinnedTargets,
			RetryBackoff: j.RetryBackoff, RetryDelaySec: j.RetryDelaySec, RetryMaxDelaySec: j.RetryMaxDelaySec,
			MaxInFlight: j.MaxInFlight, AlarmChannels: j.AlarmChannels,
		}}
		optionsSpec(&aj.JobSpec, j.JobOptions)
		for _, c := range j.Children {
			aj.Children = append(aj.Children, parseJobRef(c, j.Group))
		}
		p.Jobs = append(p.Jobs, aj)
	}
	if r.Expect != nil {
		p.Expect = make([]service.Change, 0, len(r.Expect))
		for _, e := range r.Expect {
			p.Expect = append(p.Expect, service.Change{Op: e.Op, Kind: e.Kind, Group: e.Group, Name: e.Name, Version: e.Version})
		}
	}
	return p
}

// parseJobRef reads "app_name/name", or a bare name in group def (app
// names have no '/', so the first one separates).
func parseJobRef(s, def string) service.JobRef {
	if app, name, ok := strings.Cut(s, "/"); ok {
		return service.JobRef{Group: app, Name: name}
	}
	return service.JobRef{Group: def, Name: s}
}

func viewPlan(p service.Plan) planView {
	out := planView{Changes: make([]changeView, 0, len(p.Changes)), Summary: map[string]int{}, Applied: p.Applied}
	for _, op := range []service.ChangeOp{service.OpCreate, service.OpUpdate, service.OpDelete, service.OpUnchanged} {
		out.Summary[string(op)] = 0
	}
	for _, c := range p.Changes {
		out.Changes = append(out.Changes, changeView{Op: c.Op, Kind: c.Kind, Group: c.Group, Name: c.Name, Version: c.Version, Diff: c.Diff})
		out.Summary[string(c.Op)]++
	}
	return out
}

// planApply answers POST /api/v1/plan: what applying the declaration would
// change, written nowhere. It needs jobs.read on the groups it covers.
func (s *server) planApply(c *fiber.Ctx) error {
	return s.runApply(c, false)
}

// applyPlan answers POST /api/v1/apply: the plan, applied in one
// transaction. It needs jobs.write on the groups it covers (groups.edit on
// a group it changes, groups.create for a new group).
func (s *server) applyPlan(c *fiber.Ctx) error {
	return s.runApply(c, true)
}

func (s *server) runApply(c *fiber.Ctx, write bool) error {
	body, err := s.applyBody(c)
	if err != nil {
		return err
	}
	var req applyRequest
	if err := decodeJSONBytes(body, &req, false); err != nil {
		return err
	}
	p := req.params()
	p.Write = write
	if !write {
		p.Expect = nil
	}
	pr := principal(c)
	p.Authorize = func(perm access.Perm, group int64) error { return pr.Check(perm, group) }
	plan, err := s.svc.Apply(c.UserContext(), p)
	if err != nil {
		return err
	}
	return c.JSON(viewPlan(plan))
}

// applyBody is the request body, decompressed when it is sent with
// Content-Encoding: gzip (up to applyLimit bytes).
func (s *server) applyBody(c *fiber.Ctx) ([]byte, error) {
	switch enc := strings.ToLower(strings.TrimSpace(c.Get(fiber.HeaderContentEncoding))); enc {
	case "", "identity":
		return c.Request().Body(), nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(c.Request().Body()))
		if err != nil {
			return nil, badRequest("Content-Encoding", "the body is not gzip data: %v", err)
		}
		body, err := io.ReadAll(io.LimitReader(zr, int64(s.applyLimit)+1))
		if err != nil {
			return nil, badRequest("Content-Encoding", "the body is not valid gzip data: %v", err)
		}
		if len(body) > s.applyLimit {
			return nil, &apiError{Status: fiber.StatusRequestEntityTooLarge, Code: codePayloadTooLarge,
				Message: fmt.Sprintf("the declaration is larger than %d bytes decompressed; apply it in parts (per group, with --group)", s.applyLimit)}
		}
		return body, nil
	default:
		return nil, badRequest("Content-Encoding", "%q is not supported; send gzip or no encoding", enc)
	}
}

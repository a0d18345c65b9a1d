package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/apitypes"
	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
)

func (s *server) listRuns(c *fiber.Ctx) error {
	var p service.RunListParams
	var err error
	if p.Limit, err = queryInt(c, "limit"); err != nil {
		return err
	}
	if p.JobID, err = queryID(c, "job_id"); err != nil {
		return err
	}
	if p.GroupID, err = queryID(c, "group_id"); err != nil {
		return err
	}
	if p.From, err = queryTime(c, "from"); err != nil {
		return err
	}
	if p.To, err = queryTime(c, "to"); err != nil {
		return err
	}
	for _, st := range queryList(c, "state") {
		p.States = append(p.States, kind.RunState(st))
	}
	p.TriggerType = kind.Trigger(c.Query("trigger_type"))
	p.Target = c.Query("target")
	p.Cursor = c.Query("cursor")
	if p.GroupID > 0 {
		if err := require(c, access.PermRunsRead, p.GroupID); err != nil {
			return err
		}
	}
	p.OnlyGroups = visibleGroups(c, access.PermRunsRead)
	page, err := s.svc.ListRuns(c.UserContext(), p)
	if err != nil {
		return err
	}
	items, err := s.runViews(c.UserContext(), page.Items...)
	if err != nil {
		return err
	}
	return c.JSON(apitypes.Page[apitypes.Run]{Items: items, NextCursor: page.NextCursor})
}

func (s *server) getRun(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	r, err := s.svc.GetRun(c.UserContext(), id)
	if err != nil {
		return err
	}
	v, err := s.runView(c.UserContext(), r)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

// runRelatedView is a run's retry chain, child runs and parent run.
type runRelatedView struct {
	RetryChain     []apitypes.Run `json:"retry_chain"`
	Children       []apitypes.Run `json:"children"`
	ChildrenHidden int            `json:"children_hidden"`
	Parent         *apitypes.Run  `json:"parent"`
}

func (s *server) runRelated(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	rel, err := s.svc.RunRelations(c.UserContext(), id, visibleGroups(c, access.PermRunsRead))
	if err != nil {
		return err
	}
	all := append(append([]store.Run{}, rel.RetryChain...), rel.Children...)
	if rel.Parent != nil {
		all = append(all, *rel.Parent)
	}
	views, err := s.runViews(c.UserContext(), all...)
	if err != nil {
		return err
	}
	v := runRelatedView{RetryChain: views[:len(rel.RetryChain):len(rel.RetryChain)], ChildrenHidden: rel.ChildrenHidden}
	v.Children = views[len(rel.RetryChain) : len(rel.RetryChain)+len(rel.Children) : len(rel.RetryChain)+len(rel.Children)]
	if rel.Parent != nil {
		v.Parent = &views[len(views)-1]
	}
	return c.JSON(v)
}

func (s *server) runLog(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	from := 1
	if c.Query("from_line") != "" {
		if from, err = queryInt(c, "from_line"); err != nil {
			return err
		}
	}
	chunk, err := s.svc.RunLog(c.UserContext(), id, from)
	if err != nil {
		return err
	}
	return c.JSON(chunk)
}

// killScope says what a kill of the run would stop; it changes nothing.
func (s *server) killScope(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	p, err := s.svc.KillPreview(c.UserContext(), id)
	if err != nil {
		return err
	}
	stops, err := s.runViews(c.UserContext(), p.Stops...) // named, as every run the API shows
	if err != nil {
		return err
	}
	return c.JSON(apitypes.KillScope{RunID: p.Run.ID, State: string(p.Run.State), Killable: p.Killable, Target: p.Run.Target,
		KillsWholeJob: p.KillsWholeJob, Stops: stops, Summary: p.Summary})
}

func (s *server) killRun(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	r, err := s.svc.KillRun(c.UserContext(), id)
	if err != nil {
		return err
	}
	status := fiber.StatusAccepted // the target reports the outcome later
	if r.State.Final() {
		status = fiber.StatusOK
	}
	v, err := s.runView(c.UserContext(), r)
	if err != nil {
		return err
	}
	return c.Status(status).JSON(v)
}

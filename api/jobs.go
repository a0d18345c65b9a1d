package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/apitypes"
	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
)

// jobRequest is the body of POST and PUT /api/v1/jobs[/{id}].
type jobRequest struct {
	GroupID int64  `json:"group_id"`
	Name    string `json:"name"`
	apitypes.JobFields
	ChildJobIDs []int64 `json:"child_job_ids"`
	apitypes.JobLimits
	Enabled *bool `json:"enabled"`

	// The read-only fields of a job's GET output are accepted and ignored,
	// so GET-edit-PUT works; id, when sent, must be the job's own.
	ID         int64           `json:"id"`
	ChildJobs  json.RawMessage `json:"child_jobs"`
	AlarmState json.RawMessage `json:"alarm_state"`
	NextFireAt json.RawMessage `json:"next_fire_at"`
	LastFireAt json.RawMessage `json:"last_fire_at"`
	// last_outcome, last_finished_at, last_run_id and last_run_purged: see apitypes.Job.
	LastOutcome    json.RawMessage `json:"last_outcome"`
	LastFinishedAt json.RawMessage `json:"last_finished_at"`
	LastRunID      json.RawMessage `json:"last_run_id"`
	LastRunPurged  json.RawMessage `json:"last_run_purged"`
	CreatedAt      json.RawMessage `json:"created_at"`
	UpdatedAt      json.RawMessage `json:"updated_at"`
}

func (r jobRequest) spec() service.JobSpec {
	spec := service.JobSpec{
		GroupID: r.GroupID, Name: r.Name, Description: r.Description,
		ScheduleType: r.ScheduleType, ScheduleConf: r.ScheduleConf, TimeZone: r.TimeZone, MisfirePolicy: r.MisfirePolicy,
		Handler: r.Handler, Params: r.Params, RouteStrategy: r.RouteStrategy, BlockStrategy: r.BlockStrategy,
		TimeoutSec: r.TimeoutSec, RetryCount: r.RetryCount, ShardCount: r.ShardCount, PinnedTargets: r.PinnedTargets,
		RetryBackoff: r.RetryBackoff, RetryDelaySec: r.RetryDelaySec, RetryMaxDelaySec: r.RetryMaxDelaySec,
		ChildJobIDs: r.ChildJobIDs, MaxInFlight: r.MaxInFlight, AlarmChannels: r.AlarmChannels,
	}
	optionsSpec(&spec, r.JobOptions)
	return spec
}

// triggerRequest is the optional body of POST /api/v1/jobs/{id}/trigger.
type triggerRequest struct {
	Params *string `json:"params"`
	// Target sends this run to one of the job's candidates instead of routing.
	Target string `json:"target"`
	// ShardTotal and ShardIndex: see service.TriggerParams.
	ShardTotal *int `json:"shard_total"`
	ShardIndex *int `json:"shard_index"`
}

// previewRequest is the body of POST /api/v1/next-fires.
type previewRequest = apitypes.PreviewInput

func (s *server) createJob(c *fiber.Ctx) error {
	var req jobRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	if req.GroupID > 0 {
		if err := require(c, access.PermJobsWrite, req.GroupID); err != nil {
			return err
		}
	}
	p := service.JobCreateParams{JobSpec: req.spec()}
	if req.Enabled != nil {
		p.Enabled = *req.Enabled
	}
	j, err := s.svc.CreateJob(c.UserContext(), p)
	if err != nil {
		return err
	}
	c.Location("/api/v1/jobs/" + strconv.FormatInt(j.ID, 10))
	c.Status(fiber.StatusCreated)
	return s.sendJob(c, j)
}

func (s *server) listJobs(c *fiber.Ctx) error {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	groupID, err := queryID(c, "group_id")
	if err != nil {
		return err
	}
	enabled, err := queryBool(c, "enabled")
	if err != nil {
		return err
	}
	if groupID > 0 {
		if err := require(c, access.PermJobsRead, groupID); err != nil {
			return err
		}
	}
	p, err := s.svc.ListJobs(c.UserContext(), service.JobListParams{
		GroupID: groupID, OnlyGroups: visibleGroups(c, access.PermJobsRead), Name: c.Query("name"),
		Search: c.Query("q"), ScheduleType: c.Query("schedule_type"), Enabled: enabled, LastOutcome: c.Query("last_outcome"),
		Sort: c.Query("sort"), Cursor: c.Query("cursor"), Limit: limit,
	})
	if err != nil {
		return err
	}
	views, err := s.jobViews(c, p.Items...)
	if err != nil {
		return err
	}
	return c.JSON(apitypes.Page[apitypes.Job]{Items: views, NextCursor: p.NextCursor})
}

func (s *server) getJob(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	j, err := s.svc.GetJob(c.UserContext(), id)
	if err != nil {
		return err
	}
	return s.sendJob(c, j)
}

// sendJob answers a job with its ETag.
func (s *server) sendJob(c *fiber.Ctx, j store.Job) error {
	views, err := s.jobViews(c, j)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderETag, objectETag(j.ID, j.Version))
	return c.JSON(views[0])
}

// jobViews views jobs with whether their last run is purged and their
// child jobs' names, each read once for all of them.
func (s *server) jobViews(c *fiber.Ctx, js ...store.Job) ([]apitypes.Job, error) {
	purged, err := s.svc.PurgedLastRuns(c.UserContext(), js)
	if err != nil {
		return nil, err
	}
	names, err := s.svc.ChildJobNames(c.UserContext(), js, visibleGroups(c, access.PermJobsRead))
	if err != nil {
		return nil, err
	}
	out := make([]apitypes.Job, len(js))
	for i, j := range js {
		out[i] = viewJob(j, purged[j.ID])
		for k, id := range out[i].ChildJobIDs {
			if n, ok := names[id]; ok {
				out[i].ChildJobs[k] = n
			}
		}
	}
	return out, nil
}

func (s *server) updateJob(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	ifVersion, err := ifMatchVersion(c, "job", id)
	if err != nil {
		return err
	}
	var req jobRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	return s.replaceJob(c, id, req, ifVersion)
}

// replaceJob saves req as job id's fields, if the job is still at version
// ifVersion (0: any).
func (s *server) replaceJob(c *fiber.Ctx, id int64, req jobRequest, ifVersion int64) error {
	if req.ID != 0 && req.ID != id {
		return badRequest("id", "is read-only: it is %d in the body but the path names job %d; leave it out or send the job's own id", req.ID, id)
	}
	if req.GroupID > 0 { // moving a job needs the permission on its new group too
		if err := require(c, access.PermJobsWrite, req.GroupID); err != nil {
			return err
		}
	}
	j, err := s.svc.UpdateJob(c.UserContext(), service.JobUpdateParams{ID: id, JobSpec: req.spec(), Enabled: req.Enabled, IfVersion: ifVersion})
	if err != nil {
		return err
	}
	return s.sendJob(c, j)
}

// patchJob applies a JSON merge patch (RFC 7386) to the job's GET output
// and saves the result as PUT would. The save is conditional on the
// version the patch was applied to, so an edit in between is never
// overwritten: with If-Match it is a 412, without it the patch is applied
// again to the new version.
func (s *server) patchJob(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	want, err := ifMatchVersion(c, "job", id)
	if err != nil {
		return err
	}
	var patch map[string]any
	if err := decodeJSON(c, &patch, false); err != nil {
		return err
	}
	if _, ok := patch["child_jobs"]; ok {
		// Ignoring it, as PUT does, would drop the change the patch asks for.
		return badRequest("child_jobs", "is read-only (the names of child_job_ids); set the children with child_job_ids")
	}
	for attempt := 1; ; attempt++ {
		cur, err := s.svc.GetJob(c.UserContext(), id)
		if err != nil {
			return err
		}
		if want != 0 && cur.Version != want {
			return &service.PreconditionError{Resource: "job", ID: id, Version: cur.Version}
		}
		raw, err := json.Marshal(viewJob(cur, false)) // read-only fields are ignored
		if err != nil {
			return fmt.Errorf("patch job %d: encode: %w", id, err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("patch job %d: decode: %w", id, err)
		}
		merged, err := json.Marshal(mergePatch(doc, patch))
		if err != nil {
			return fmt.Errorf("patch job %d: encode: %w", id, err)
		}
		var req jobRequest
		dec := json.NewDecoder(bytes.NewReader(merged))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return jsonError(err)
		}
		err = s.replaceJob(c, id, req, cur.Version)
		var pe *service.PreconditionError
		if want == 0 && attempt < 3 && errors.As(err, &pe) {
			continue // changed between our read and write: patch the new version
		}
		return err
	}
}

func (s *server) deleteJob(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	ifVersion, err := ifMatchVersion(c, "job", id)
	if err != nil {
		return err
	}
	if err := s.svc.DeleteJobIf(c.UserContext(), id, ifVersion); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// jobByName resolves /groups/{app_name}/jobs/{name} to the job's id for the
// handlers that take one.
func (s *server) jobByName(next fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		app, err := url.PathUnescape(c.Params("app_name"))
		if err != nil {
			return badRequest("app_name", "is not a valid path segment: %v", err)
		}
		name, err := url.PathUnescape(c.Params("name"))
		if err != nil {
			return badRequest("name", "is not a valid path segment: %v", err)
		}
		j, err := s.svc.GetJobByName(c.UserContext(), app, name)
		if err != nil {
			return err
		}
		c.Locals(localJobID, j.ID)
		return next(c)
	}
}

func (s *server) startJob(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	j, err := s.svc.StartJob(c.UserContext(), id)
	if err != nil {
		return err
	}
	return s.sendJob(c, j)
}

func (s *server) stopJob(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	j, err := s.svc.StopJob(c.UserContext(), id)
	if err != nil {
		return err
	}
	return s.sendJob(c, j)
}

func (s *server) triggerJob(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var req triggerRequest
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	run, created, err := s.svc.TriggerJob(c.UserContext(), service.TriggerParams{
		JobID: id, Params: req.Params, IdempotencyKey: c.Get("Idempotency-Key"), Target: req.Target,
		ShardTotal: req.ShardTotal, ShardIndex: req.ShardIndex,
	})
	if err != nil {
		return err
	}
	status := fiber.StatusOK
	if created {
		status = fiber.StatusCreated
	}
	c.Locals(localAuditRunID, run.ID)
	c.Location("/api/v1/runs/" + strconv.FormatInt(run.ID, 10))
	v, err := s.runView(c.UserContext(), run)
	if err != nil {
		return err
	}
	return c.Status(status).JSON(v)
}

func (s *server) jobNextFires(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	n, err := queryInt(c, "n")
	if err != nil {
		return err
	}
	if c.Query("n") != "" && n == 0 {
		return badRequest("n", "must be 1..%d, got 0", service.MaxPreviewN)
	}
	nf, err := s.svc.JobNextFires(c.UserContext(), id, n)
	if err != nil {
		return err
	}
	return c.JSON(viewNextFires(nf))
}

func (s *server) previewSchedule(c *fiber.Ctx) error {
	var req previewRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	nf, err := s.svc.PreviewSchedule(c.UserContext(), service.PreviewParams{
		ScheduleType: req.ScheduleType, ScheduleConf: req.ScheduleConf, TimeZone: req.TimeZone, N: req.N,
		Name: req.Name, ActiveFrom: req.ActiveFrom, ActiveUntil: req.ActiveUntil, FlexibleWindowMin: req.FlexibleWindowMin,
	})
	if err != nil {
		return err
	}
	return c.JSON(viewNextFires(nf))
}

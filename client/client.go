// Package client is a typed Go client of Ringjob's REST API (v1), the one
// the ringjob CLI uses. Its types mirror the schemas of api/openapi.json
// (a test keeps them in step); errors from the server are *Error with the
// HTTP status and the envelope's code, message and field.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ringjob/ringjob/apitypes"
)

// Client talks to one Ringjob server.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New returns a client of the server at baseURL (http://HOST:PORT) that
// authenticates with token. hc nil uses a client with a 60 s timeout.
func New(baseURL, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), token: token, http: hc}
}

// Error is an error answer of the server.
type Error struct {
	Status    int    `json:"-"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	Field     string `json:"field,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// Problems lists every problem of an invalid declaration (plan, apply).
	Problems []Problem `json:"problems,omitempty"`
	// Objects names what changed since a plan (code changed_since_plan).
	Objects []string `json:"objects,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (HTTP %d %s)", e.Message, e.Status, e.Code)
}

// IsNotFound tells whether err is a 404 answer.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// The REST API's bodies, declared once in apitypes (the server builds the
// same types), so the client cannot drift from the server.
type (
	Group        = apitypes.Group
	GroupInput   = apitypes.GroupInput
	Job          = apitypes.Job
	JobInput     = apitypes.JobInput
	JobFields    = apitypes.JobFields
	JobLimits    = apitypes.JobLimits
	JobOptions   = apitypes.JobOptions
	Run          = apitypes.Run
	KillScope    = apitypes.KillScope
	TriggerInput = apitypes.TriggerInput
	PreviewInput = apitypes.PreviewInput
	NextFires    = apitypes.NextFires
)

// Page is one page of a list.
type Page[T any] = apitypes.Page[T]

// LogChunk is a piece of a run's log.
type LogChunk struct {
	FromLine int    `json:"from_line"`
	ToLine   int    `json:"to_line"`
	Content  string `json:"content"`
	IsEnd    bool   `json:"end"`
	// ServerLog: for a run whose log is its executor's, the lines the
	// server wrote on the run (later outcomes it ignored, alarm results).
	ServerLog string `json:"server_log,omitempty"`
}

// ListOptions page through a list and filter it (filters by name, as the
// server names its query parameters).
type ListOptions struct {
	Limit   int
	Cursor  string
	Filters map[string]string
}

func (o ListOptions) query() string {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	for k, v := range o.Filters {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// JobRef names a job by its identity: its group's app name and its name.
type JobRef struct {
	AppName, Name string
}

func (r JobRef) path() string {
	return "/api/v1/groups/" + url.PathEscape(r.AppName) + "/jobs/" + url.PathEscape(r.Name)
}

// String is "app_name/name".
func (r JobRef) String() string { return r.AppName + "/" + r.Name }

// ParseJobRef reads "APP_NAME/NAME" (the name may contain further slashes).
func ParseJobRef(s string) (JobRef, error) {
	app, name, ok := strings.Cut(s, "/")
	if !ok || app == "" || name == "" {
		return JobRef{}, fmt.Errorf("%q is not a job reference; write GROUP_APP_NAME/JOB_NAME", s)
	}
	return JobRef{AppName: app, Name: name}, nil
}

// do sends a request and decodes a JSON answer into out (nil: discard).
func (c *Client) do(ctx context.Context, method, path string, hdr map[string]string, body, out any) (http.Header, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode body: %w", method, path, err)
		}
		if hdr["Content-Encoding"] == "gzip" {
			if raw, err = gzipped(raw); err != nil {
				return nil, fmt.Errorf("%s %s: compress body: %w", method, path, err)
			}
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range hdr {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the server at %s: %w", c.base, unwrapURLError(err))
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return res.Header, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if res.StatusCode >= 400 {
		var env struct {
			Error Error `json:"error"`
		}
		if json.Unmarshal(raw, &env) != nil || env.Error.Message == "" {
			env.Error = Error{Code: "http_error", Message: strings.TrimSpace(string(raw))}
			if env.Error.Message == "" {
				env.Error.Message = http.StatusText(res.StatusCode)
			}
		}
		env.Error.Status = res.StatusCode
		if res.StatusCode == http.StatusUnauthorized {
			env.Error.Message = "the server refused the token (missing, wrong or expired): " + env.Error.Message
		}
		return res.Header, &env.Error
	}
	if out != nil && len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return res.Header, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return res.Header, nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func id(n int64) string { return strconv.FormatInt(n, 10) }

// Groups.

// ListGroups lists one page of groups.
func (c *Client) ListGroups(ctx context.Context, o ListOptions) (Page[Group], error) {
	var p Page[Group]
	_, err := c.do(ctx, http.MethodGet, "/api/v1/groups"+o.query(), nil, nil, &p)
	return p, err
}

// AllGroups lists every group.
func (c *Client) AllGroups(ctx context.Context) ([]Group, error) {
	return all(ctx, func(cur string) (Page[Group], error) {
		return c.ListGroups(ctx, ListOptions{Limit: 500, Cursor: cur})
	})
}

func (c *Client) group(ctx context.Context, method, path string, hdr map[string]string, body any) (Group, error) {
	var g Group
	h, err := c.do(ctx, method, path, hdr, body, &g)
	if err == nil && h != nil {
		g.ETag = h.Get("ETag")
	}
	return g, err
}

// GetGroup reads a group by id.
func (c *Client) GetGroup(ctx context.Context, groupID int64) (Group, error) {
	return c.group(ctx, http.MethodGet, "/api/v1/groups/"+id(groupID), nil, nil)
}

// CreateGroup creates a group.
func (c *Client) CreateGroup(ctx context.Context, in GroupInput) (Group, error) {
	return c.group(ctx, http.MethodPost, "/api/v1/groups", nil, in)
}

// UpdateGroup replaces a group's fields; ifMatch ("" = unconditional) makes
// the server refuse with 412 when the group changed since it was read.
func (c *Client) UpdateGroup(ctx context.Context, groupID int64, in GroupInput, ifMatch string) (Group, error) {
	return c.group(ctx, http.MethodPut, "/api/v1/groups/"+id(groupID), map[string]string{"If-Match": ifMatch}, in)
}

// DeleteGroup deletes an empty group; ifMatch as for UpdateGroup.
func (c *Client) DeleteGroup(ctx context.Context, groupID int64, ifMatch string) error {
	_, err := c.do(ctx, http.MethodDelete, "/api/v1/groups/"+id(groupID), map[string]string{"If-Match": ifMatch}, nil, nil)
	return err
}

// Jobs.

// ListJobs lists one page of jobs; filters group_id, name, enabled.
func (c *Client) ListJobs(ctx context.Context, o ListOptions) (Page[Job], error) {
	var p Page[Job]
	_, err := c.do(ctx, http.MethodGet, "/api/v1/jobs"+o.query(), nil, nil, &p)
	return p, err
}

// AllJobs lists every job matching the filters.
func (c *Client) AllJobs(ctx context.Context, filters map[string]string) ([]Job, error) {
	return all(ctx, func(cur string) (Page[Job], error) {
		return c.ListJobs(ctx, ListOptions{Limit: 500, Cursor: cur, Filters: filters})
	})
}

func (c *Client) job(ctx context.Context, method, path string, hdr map[string]string, body any) (Job, error) {
	var j Job
	h, err := c.do(ctx, method, path, hdr, body, &j)
	if err == nil && h != nil {
		j.ETag = h.Get("ETag")
	}
	return j, err
}

// GetJob reads a job by id.
func (c *Client) GetJob(ctx context.Context, jobID int64) (Job, error) {
	return c.job(ctx, http.MethodGet, "/api/v1/jobs/"+id(jobID), nil, nil)
}

// GetJobByName reads a job by its identity.
func (c *Client) GetJobByName(ctx context.Context, ref JobRef) (Job, error) {
	return c.job(ctx, http.MethodGet, ref.path(), nil, nil)
}

// CreateJob creates a job.
func (c *Client) CreateJob(ctx context.Context, in JobInput) (Job, error) {
	return c.job(ctx, http.MethodPost, "/api/v1/jobs", nil, in)
}

// UpdateJob replaces a job's fields; ifMatch ("" = unconditional) makes the
// server refuse with 412 when the job changed since it was read.
func (c *Client) UpdateJob(ctx context.Context, ref JobRef, in JobInput, ifMatch string) (Job, error) {
	return c.job(ctx, http.MethodPut, ref.path(), map[string]string{"If-Match": ifMatch}, in)
}

// PatchJob applies a JSON merge patch to a job.
func (c *Client) PatchJob(ctx context.Context, ref JobRef, patch map[string]any, ifMatch string) (Job, error) {
	return c.job(ctx, http.MethodPatch, ref.path(), map[string]string{"If-Match": ifMatch, "Content-Type": "application/merge-patch+json"}, patch)
}

// DeleteJob deletes a job and its runs.
func (c *Client) DeleteJob(ctx context.Context, ref JobRef, ifMatch string) error {
	_, err := c.do(ctx, http.MethodDelete, ref.path(), map[string]string{"If-Match": ifMatch}, nil, nil)
	return err
}

// StartJob starts a job.
func (c *Client) StartJob(ctx context.Context, ref JobRef) (Job, error) {
	return c.job(ctx, http.MethodPost, ref.path()+"/start", nil, nil)
}

// StopJob stops a job.
func (c *Client) StopJob(ctx context.Context, ref JobRef) (Job, error) {
	return c.job(ctx, http.MethodPost, ref.path()+"/stop", nil, nil)
}

// TriggerJob runs a job once now. created is false when idempotencyKey
// found an earlier run.
func (c *Client) TriggerJob(ctx context.Context, ref JobRef, in TriggerInput, idempotencyKey string) (Run, error) {
	var r Run
	_, err := c.do(ctx, http.MethodPost, ref.path()+"/trigger", map[string]string{"Idempotency-Key": idempotencyKey}, in, &r)
	return r, err
}

// PreviewSchedule answers the next fire times of an unsaved schedule.
func (c *Client) PreviewSchedule(ctx context.Context, in PreviewInput) (NextFires, error) {
	var nf NextFires
	_, err := c.do(ctx, http.MethodPost, "/api/v1/next-fires", nil, in, &nf)
	return nf, err
}

// Runs.

// ListRuns lists one page of runs; filters job_id, group_id, state,
// trigger_type, from, to.
func (c *Client) ListRuns(ctx context.Context, o ListOptions) (Page[Run], error) {
	var p Page[Run]
	_, err := c.do(ctx, http.MethodGet, "/api/v1/runs"+o.query(), nil, nil, &p)
	return p, err
}

// GetRun reads a run.
func (c *Client) GetRun(ctx context.Context, runID int64) (Run, error) {
	var r Run
	_, err := c.do(ctx, http.MethodGet, "/api/v1/runs/"+id(runID), nil, nil, &r)
	return r, err
}

// RunLog reads a run's log from a line on.
func (c *Client) RunLog(ctx context.Context, runID int64, fromLine int) (LogChunk, error) {
	var l LogChunk
	_, err := c.do(ctx, http.MethodGet, "/api/v1/runs/"+id(runID)+"/log?from_line="+strconv.Itoa(fromLine), nil, nil, &l)
	return l, err
}

// RunKillScope says what a kill of the run would stop (every run, with its
// shard and target, and a summary sentence) without killing anything.
func (c *Client) RunKillScope(ctx context.Context, runID int64) (KillScope, error) {
	var s KillScope
	_, err := c.do(ctx, http.MethodGet, "/api/v1/runs/"+id(runID)+"/kill-scope", nil, nil, &s)
	return s, err
}

// KillRun asks the run's target to kill it.
func (c *Client) KillRun(ctx context.Context, runID int64) (Run, error) {
	var r Run
	_, err := c.do(ctx, http.MethodPost, "/api/v1/runs/"+id(runID)+"/kill", nil, nil, &r)
	return r, err
}

// WaitRun polls a run until it ends or ctx ends.
func (c *Client) WaitRun(ctx context.Context, runID int64, every time.Duration) (Run, error) {
	for {
		r, err := c.GetRun(ctx, runID)
		if err != nil || r.Final() {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(every):
		}
	}
}

func all[T any](ctx context.Context, page func(cursor string) (Page[T], error)) ([]T, error) {
	var out []T
	cur := ""
	for {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		p, err := page(cur)
		if err != nil {
			return out, err
		}
		out = append(out, p.Items...)
		if p.NextCursor == "" {
			return out, nil
		}
		cur = p.NextCursor
	}
}

// Me is the caller as the server knows it (GET /api/v1/me).
type Me struct {
	ID                int64              `json:"id"`
	Name              string             `json:"name"`
	Kind              string             `json:"kind"`
	Auth              string             `json:"auth"`
	TokenName         string             `json:"token_name"`
	Admin             bool               `json:"admin"`
	SSOGroups         []string           `json:"sso_groups"`
	Roles             []RoleOnGroup      `json:"roles"`
	SystemPermissions []string           `json:"system_permissions"`
	GroupPermissions  map[int64][]string `json:"group_permissions"`
	CSRFToken         string             `json:"csrf_token"`
}

// RoleOnGroup is a role the caller holds on a group.
type RoleOnGroup struct {
	GroupID int64  `json:"group_id"`
	Role    string `json:"role"`
}

// Me answers who the token belongs to; a wrong or expired token is a 401.
func (c *Client) Me(ctx context.Context) (Me, error) {
	var m Me
	_, err := c.do(ctx, http.MethodGet, "/api/v1/me", nil, nil, &m)
	return m, err
}

// RegisteredExecutor is an executor that registered by heartbeat
// (GET /api/v1/executors).
type RegisteredExecutor struct {
	GroupID        int64   `json:"group_id"`
	AppName        string  `json:"app_name"`
	Address        string  `json:"address"`
	Protocol       string  `json:"protocol"`
	RegisteredAt   *string `json:"registered_at"`
	HeartbeatAt    *string `json:"heartbeat_at"`
	HeartbeatAgeMs int64   `json:"heartbeat_age_ms"`
	// Running counts the runs running on this executor now; Busy is
	// Running > 0.
	Running int  `json:"running"`
	Busy    bool `json:"busy"`
}

// ListExecutors lists the executors registered by heartbeat, of one group
// (groupID > 0) or of every group the caller may read.
func (c *Client) ListExecutors(ctx context.Context, groupID int64) ([]RegisteredExecutor, error) {
	path := "/api/v1/executors"
	if groupID > 0 {
		path += "?group_id=" + id(groupID)
	}
	var out struct {
		Items []RegisteredExecutor `json:"items"`
	}
	_, err := c.do(ctx, http.MethodGet, path, nil, nil, &out)
	return out.Items, err
}

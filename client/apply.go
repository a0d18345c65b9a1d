package client

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
)

// Jobs as code (POST /api/v1/plan and /api/v1/apply; docs/jobs-as-code.md).

// ApplyGroup is a declared group (schema ApplyGroup). Its executor token is
// never declared.
type ApplyGroup struct {
	AppName             string   `json:"app_name" yaml:"app_name"`
	Title               string   `json:"title,omitempty" yaml:"title,omitempty"`
	Members             []string `json:"members,omitempty" yaml:"members,omitempty"`
	Protocol            string   `json:"protocol,omitempty" yaml:"protocol,omitempty"`
	AcceptRegistrations *bool    `json:"accept_registrations,omitempty" yaml:"accept_registrations,omitempty"`
	FailureDestination  string   `json:"failure_destination,omitempty" yaml:"failure_destination,omitempty"`
}

// ApplyJob is a declared job (schema ApplyJob): every editable field of a
// job, its group by app name and its children by identity ("app_name/name").
// Omitted fields take the server's defaults.
type ApplyJob struct {
	Group     string `json:"group" yaml:"group"`
	Name      string `json:"name" yaml:"name"`
	JobFields `yaml:",inline"`
	Children  []string `json:"children,omitempty" yaml:"children,omitempty"`
	JobLimits `yaml:",inline"`
	Enabled   bool `json:"enabled" yaml:"enabled"`
}

// ApplyInput is the body of POST /api/v1/plan and /api/v1/apply.
type ApplyInput struct {
	Groups []ApplyGroup `json:"groups"`
	Jobs   []ApplyJob   `json:"jobs"`
	// Scope names groups covered on top of those declared or holding
	// declared jobs (prune deletes their undeclared jobs).
	Scope []string `json:"scope,omitempty"`
	Prune bool     `json:"prune,omitempty"`
	// Expect (apply) is the plan that was reviewed; nil applies the plan as
	// it is now.
	Expect []PlanChange `json:"expect,omitempty"`
}

// FieldChange is one field of a change.
type FieldChange struct {
	Before any `json:"before"`
	After  any `json:"after"`
}

// PlanChange is one object of a plan (schema PlanChange).
type PlanChange struct {
	Op      string                 `json:"op"` // create, update, delete, unchanged
	Kind    string                 `json:"kind"`
	Group   string                 `json:"group"`
	Name    string                 `json:"name,omitempty"`
	Version string                 `json:"version,omitempty"`
	Diff    map[string]FieldChange `json:"diff,omitempty"`
}

// Ref is "app_name" for a group, "app_name/name" for a job.
func (c PlanChange) Ref() string {
	if c.Kind == "group" {
		return c.Group
	}
	return c.Group + "/" + c.Name
}

// Plan is what a declaration changes (schema Plan).
type Plan struct {
	Changes []PlanChange   `json:"changes"`
	Summary map[string]int `json:"summary"`
	Applied bool           `json:"applied"`
}

// Changed tells whether the plan changes anything.
func (p Plan) Changed() bool {
	for _, c := range p.Changes {
		if c.Op != "unchanged" {
			return true
		}
	}
	return false
}

// Problem is one problem of an invalid declaration (Error.Problems).
type Problem struct {
	Kind    string `json:"kind"`
	Group   string `json:"group"`
	Name    string `json:"name,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// PlanApply computes what applying in would change; nothing is written.
func (c *Client) PlanApply(ctx context.Context, in ApplyInput) (Plan, error) {
	in.Expect = nil
	var p Plan
	_, err := c.do(ctx, http.MethodPost, "/api/v1/plan", map[string]string{"Content-Encoding": "gzip"}, in, &p)
	return p, err
}

// Apply applies in in one transaction. With in.Expect set to a reviewed
// plan's changes, anything changed since is refused (an *Error with code
// changed_since_plan and the objects in Objects) and nothing is applied.
func (c *Client) Apply(ctx context.Context, in ApplyInput) (Plan, error) {
	var p Plan
	_, err := c.do(ctx, http.MethodPost, "/api/v1/apply", map[string]string{"Content-Encoding": "gzip"}, in, &p)
	return p, err
}

// gzipped compresses a declaration: the server takes large ones (up to 32
// MiB of JSON) only so, and 10,000 jobs shrink ~30 times.
func gzipped(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

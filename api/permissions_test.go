package api_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/api"
	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
)

// The roles of the permission matrix, as the issue spells them.
var matrixRoles = []string{"admin", "owner", "operator", "viewer", "no role", "anonymous"}

// specPerms is what each group role may do, written out here on its own so
// that a change to access's role table shows up as a failing test.
var specPerms = map[string][]access.Perm{
	"viewer":   {access.PermGroupsRead, access.PermJobsRead, access.PermRunsRead},
	"operator": {access.PermGroupsRead, access.PermJobsRead, access.PermRunsRead, access.PermJobsOperate, access.PermRunsKill},
	"owner": {access.PermGroupsRead, access.PermJobsRead, access.PermRunsRead, access.PermJobsOperate, access.PermRunsKill,
		access.PermJobsWrite, access.PermGroupsEdit},
}

// caller is one principal of the matrix.
type caller struct {
	role        string
	token       string // "" = anonymous
	principalID int64
	tokenID     int64
}

// matrixFixture holds the objects the requests act on.
type matrixFixture struct {
	b         *bundle
	groupA    int64
	groupB    int64
	jobs      map[int64]int64 // group -> job
	workflows map[int64]int64 // group -> workflow
	wfRuns    map[int64]int64 // group -> workflow run
	runs      map[int64]int64 // group -> run
	userID    int64           // a local user (password known)
	password  string
	n         int
	spareSA   int64
	callers   map[string]*caller
	appNameOf map[int64]string
}

// jobPath is the by-name path of a job as it is named now.
func (f *matrixFixture) jobPath(id int64) string {
	j, err := f.b.st.JobGet(context.Background(), id)
	require.NoError(f.b.t, err)
	g, err := f.b.st.GroupGet(context.Background(), j.GroupID)
	require.NoError(f.b.t, err)
	return "/api/v1/groups/" + url.PathEscape(g.AppName) + "/jobs/" + url.PathEscape(j.Name)
}

func (f *matrixFixture) uniq(prefix string) string {
	f.n++
	return fmt.Sprintf("%s-%d", prefix, f.n)
}

func (f *matrixFixture) freshJob(group int64) int64 {
	j := f.b.job(map[string]any{"group_id": group, "name": f.uniq("job"), "schedule_type": "cron", "schedule_conf": "0 0 3 * * ?", "handler": "h"})
	return id(j)
}

func (f *matrixFixture) jobBody(group int64, name string) map[string]any {
	return map[string]any{"group_id": group, "name": name, "schedule_type": "cron", "schedule_conf": "0 0 3 * * ?", "handler": "h"}
}

// matrixRow is the expected rule of a route and how to call it on an object
// of group g (ignored for routes not scoped to a group).
type matrixRow struct {
	rule api.Rule
	req  func(f *matrixFixture, c *caller, g int64) (path string, body any)
}

// unfilteredLists are listings without a group filter: called once, they
// answer only what the caller may see (TestListsShowOnlyWhatMayBeSeen).
var unfilteredLists = map[string]bool{"GET /api/v1/groups": true, "GET /api/v1/alarm-channels": true}

// hiddenAsAbsent are routes that answer a group the caller cannot read as a
// group that does not exist (400), so that they tell nothing about it.
var hiddenAsAbsent = map[string]bool{"POST /api/v1/apply": true, "POST /api/v1/plan": true}

func fixed(path string, body any) func(*matrixFixture, *caller, int64) (string, any) {
	return func(*matrixFixture, *caller, int64) (string, any) { return path, body }
}

// permissionMatrix has a row for every /api/v1 route. A route registered
// without a row fails TestPermissionMatrix: add the rule where the route is
// registered (api.go) and the row here.
var permissionMatrix = map[string]matrixRow{
	"GET /api/v1/openapi.json": {api.Rule{Scope: api.ScopePublic}, fixed("/api/v1/openapi.json", nil)},

	"POST /api/v1/groups": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermGroupsCreate}, func(f *matrixFixture, _ *caller, _ int64) (string, any) {
		return "/api/v1/groups", map[string]any{"app_name": f.uniq("grp"), "members": []string{"local://echo"}}
	}},
	"GET /api/v1/groups": {api.Rule{Scope: api.ScopeHandler, Perm: access.PermGroupsRead}, fixed("/api/v1/groups", nil)},
	"GET /api/v1/groups/:id": {api.Rule{Scope: api.ScopeGroup, Perm: access.PermGroupsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/groups/%d", g), nil
	}},
	"PUT /api/v1/groups/:id": {api.Rule{Scope: api.ScopeGroup, Perm: access.PermGroupsEdit}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/groups/%d", g), map[string]any{"title": f.uniq("title"), "members": []string{"local://echo"}}
	}},
	"PUT /api/v1/groups/:id/executor-token": {api.Rule{Scope: api.ScopeGroup, Perm: access.PermGroupsEdit}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/groups/%d/executor-token", g), map[string]any{"executor_token": f.uniq("matrix-executor-token")}
	}},
	"POST /api/v1/groups/:id/executor-token/rotate": {api.Rule{Scope: api.ScopeGroup, Perm: access.PermGroupsEdit}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/groups/%d/executor-token/rotate", g), nil
	}},
	"DELETE /api/v1/groups/:id": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermGroupsDelete}, func(f *matrixFixture, _ *caller, _ int64) (string, any) {
		return fmt.Sprintf("/api/v1/groups/%d", f.b.group(f.uniq("doomed"), "local://echo")), nil
	}},

	"POST /api/v1/jobs": {api.Rule{Scope: api.ScopeHandler, Perm: access.PermJobsWrite}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return "/api/v1/jobs", f.jobBody(g, f.uniq("new-job"))
	}},
	"GET /api/v1/jobs": {api.Rule{Scope: api.ScopeHandler, Perm: access.PermJobsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/jobs?group_id=%d", g), nil
	}},
	"GET /api/v1/jobs/:id": {api.Rule{Scope: api.ScopeJob, Perm: access.PermJobsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/jobs/%d", f.jobs[g]), nil
	}},
	"PUT /api/v1/jobs/:id": {api.Rule{Scope: api.ScopeJob, Perm: access.PermJobsWrite}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/jobs/%d", f.jobs[g]), f.jobBody(g, f.uniq("renamed"))
	}},
	"DELETE /api/v1/jobs/:id": {api.Rule{Scope: api.ScopeJob, Perm: access.PermJobsWrite}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/jobs/%d", f.freshJob(g)), nil
	}},
	"POST /api/v1/jobs/:id/start": {api.Rule{Scope: api.ScopeJob, Perm: access.PermJobsOperate}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/jobs/%d/start", f.jobs[g]), nil
	}},
	"POST /api/v1/jobs/:id/stop": {api.Rule{Scope: api.ScopeJob, Perm: access.PermJobsOperate}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/jobs/%d/stop", f.jobs[g]), nil
	}},
	"POST /api/v1/jobs/:id/trigger": {api.Rule{Scope: api.ScopeJob, Perm: access.PermJobsOperate}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/jobs/%d/trigger", f.jobs[g]), nil
	}},
	"PATCH /api/v1/jobs/:id": {api.Rule{Scope: api.ScopeJob, Perm: access.PermJobsWrite}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/jobs/%d", f.jobs[g]), map[string]any{"description": f.uniq("patched")}
	}},
	"GET /api/v1/groups/:app_name/jobs/:name": {api.Rule{Scope: api.ScopeJobName, Perm: access.PermJobsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return f.jobPath(f.jobs[g]), nil
	}},
	"PUT /api/v1/groups/:app_name/jobs/:name": {api.Rule{Scope: api.ScopeJobName, Perm: access.PermJobsWrite}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return f.jobPath(f.jobs[g]), f.jobBody(g, f.uniq("renamed"))
	}},
	"PATCH /api/v1/groups/:app_name/jobs/:name": {api.Rule{Scope: api.ScopeJobName, Perm: access.PermJobsWrite}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return f.jobPath(f.jobs[g]), map[string]any{"description": f.uniq("patched")}
	}},
	"DELETE /api/v1/groups/:app_name/jobs/:name": {api.Rule{Scope: api.ScopeJobName, Perm: access.PermJobsWrite}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return f.jobPath(f.freshJob(g)), nil
	}},
	"POST /api/v1/groups/:app_name/jobs/:name/start": {api.Rule{Scope: api.ScopeJobName, Perm: access.PermJobsOperate}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return f.jobPath(f.jobs[g]) + "/start", nil
	}},
	"POST /api/v1/groups/:app_name/jobs/:name/stop": {api.Rule{Scope: api.ScopeJobName, Perm: access.PermJobsOperate}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return f.jobPath(f.jobs[g]) + "/stop", nil
	}},
	"POST /api/v1/groups/:app_name/jobs/:name/trigger": {api.Rule{Scope: api.ScopeJobName, Perm: access.PermJobsOperate}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return f.jobPath(f.jobs[g]) + "/trigger", nil
	}},
	"GET /api/v1/jobs/:id/next-fires": {api.Rule{Scope: api.ScopeJob, Perm: access.PermJobsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/jobs/%d/next-fires", f.jobs[g]), nil
	}},
	"POST /api/v1/next-fires": {api.Rule{Scope: api.ScopeAuthenticated}, fixed("/api/v1/next-fires", map[string]any{"schedule_type": "cron", "schedule_conf": "0 0 3 * * ?"})},

	"GET /api/v1/runs": {api.Rule{Scope: api.ScopeHandler, Perm: access.PermRunsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/runs?group_id=%d", g), nil
	}},
	"GET /api/v1/runs/:id": {api.Rule{Scope: api.ScopeRun, Perm: access.PermRunsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/runs/%d", f.runs[g]), nil
	}},
	"GET /api/v1/runs/:id/log": {api.Rule{Scope: api.ScopeRun, Perm: access.PermRunsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/runs/%d/log", f.runs[g]), nil
	}},
	"GET /api/v1/runs/:id/related": {api.Rule{Scope: api.ScopeRun, Perm: access.PermRunsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/runs/%d/related", f.runs[g]), nil
	}},
	"GET /api/v1/runs/:id/kill-scope": {api.Rule{Scope: api.ScopeRun, Perm: access.PermRunsKill}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/runs/%d/kill-scope", f.runs[g]), nil
	}},
	"POST /api/v1/runs/:id/kill": {api.Rule{Scope: api.ScopeRun, Perm: access.PermRunsKill}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/runs/%d/kill", f.runs[g]), nil
	}},

	"POST /api/v1/plan": {api.Rule{Scope: api.ScopeHandler, Perm: access.PermJobsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return "/api/v1/plan", map[string]any{"jobs": []any{map[string]any{"group": f.appNameOf[g], "name": f.uniq("declared")}}}
	}},
	"POST /api/v1/apply": {api.Rule{Scope: api.ScopeHandler, Perm: access.PermJobsWrite}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return "/api/v1/apply", map[string]any{"jobs": []any{map[string]any{"group": f.appNameOf[g], "name": f.uniq("declared")}}}
	}},

	"GET /api/v1/stats": {api.Rule{Scope: api.ScopeHandler, Perm: access.PermRunsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/stats?group_id=%d", g), nil
	}},

	"GET /api/v1/job-counts": {api.Rule{Scope: api.ScopeHandler, Perm: access.PermJobsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/job-counts?group_id=%d", g), nil
	}},
	"GET /api/v1/executors": {api.Rule{Scope: api.ScopeHandler, Perm: access.PermGroupsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/executors?group_id=%d", g), nil
	}},
	"GET /api/v1/replicas": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermSystemRead}, fixed("/api/v1/replicas", nil)},

	"GET /api/v1/alarm-channels": {api.Rule{Scope: api.ScopeHandler, Perm: access.PermJobsWrite}, fixed("/api/v1/alarm-channels", nil)},
	// No channel is configured here: the admin's call is a 404, past the check.
	"POST /api/v1/alarm-channels/:name/test": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermSystemManage}, fixed("/api/v1/alarm-channels/pager/test", nil)},

	"POST /api/v1/session": {api.Rule{Scope: api.ScopePublic}, func(f *matrixFixture, _ *caller, _ int64) (string, any) {
		return "/api/v1/session", map[string]any{"username": "matrix-user", "password": f.password}
	}},
	"DELETE /api/v1/session": {api.Rule{Scope: api.ScopeAuthenticated}, fixed("/api/v1/session", nil)},
	"GET /api/v1/me":         {api.Rule{Scope: api.ScopeAuthenticated}, fixed("/api/v1/me", nil)},
	// The callers are service accounts (no password: 400, past the check).
	"PUT /api/v1/me/password": {api.Rule{Scope: api.ScopeAuthenticated}, fixed("/api/v1/me/password", map[string]any{"old_password": "x", "new_password": "a long enough password"})},

	"GET /api/v1/users": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermUsersManage}, fixed("/api/v1/users", nil)},
	"POST /api/v1/users": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermUsersManage}, func(f *matrixFixture, _ *caller, _ int64) (string, any) {
		return "/api/v1/users", map[string]any{"name": f.uniq("user"), "password": "a long enough password"}
	}},
	"GET /api/v1/users/:id": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermUsersManage}, func(f *matrixFixture, _ *caller, _ int64) (string, any) {
		return fmt.Sprintf("/api/v1/users/%d", f.userID), nil
	}},
	"DELETE /api/v1/users/:id": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermUsersManage}, func(f *matrixFixture, _ *caller, _ int64) (string, any) {
		u := f.b.must(201, "POST", "/api/v1/users", map[string]any{"name": f.uniq("doomed-user"), "password": "a long enough password"})
		return fmt.Sprintf("/api/v1/users/%d", id(u)), nil
	}},
	"PATCH /api/v1/users/:id": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermUsersManage}, func(f *matrixFixture, _ *caller, _ int64) (string, any) {
		return fmt.Sprintf("/api/v1/users/%d", f.userID), map[string]any{"email": f.uniq("matrix") + "@example.com"}
	}},
	"PUT /api/v1/users/:id/password": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermUsersManage}, func(f *matrixFixture, _ *caller, _ int64) (string, any) {
		return fmt.Sprintf("/api/v1/users/%d/password", f.userID), map[string]any{"password": f.password}
	}},

	"GET /api/v1/service-accounts": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermUsersManage}, fixed("/api/v1/service-accounts", nil)},
	"POST /api/v1/service-accounts": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermUsersManage}, func(f *matrixFixture, _ *caller, _ int64) (string, any) {
		return "/api/v1/service-accounts", map[string]any{"name": f.uniq("sa")}
	}},
	"GET /api/v1/service-accounts/:id": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermUsersManage}, func(f *matrixFixture, _ *caller, _ int64) (string, any) {
		return fmt.Sprintf("/api/v1/service-accounts/%d", f.spareSA), nil
	}},
	"PATCH /api/v1/service-accounts/:id": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermUsersManage}, func(f *matrixFixture, _ *caller, _ int64) (string, any) {
		return fmt.Sprintf("/api/v1/service-accounts/%d", f.spareSA), map[string]any{"name": f.uniq("spare")}
	}},
	"DELETE /api/v1/service-accounts/:id": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermUsersManage}, func(f *matrixFixture, _ *caller, _ int64) (string, any) {
		sa := f.b.must(201, "POST", "/api/v1/service-accounts", map[string]any{"name": f.uniq("doomed-sa")})
		return fmt.Sprintf("/api/v1/service-accounts/%d", id(sa)), nil
	}},

	// Tokens: every principal reaches its own; the calls below use the
	// caller's own tokens, so everyone with credentials may make them.
	"GET /api/v1/tokens":  {api.Rule{Scope: api.ScopeAuthenticated}, fixed("/api/v1/tokens", nil)},
	"POST /api/v1/tokens": {api.Rule{Scope: api.ScopeAuthenticated}, fixed("/api/v1/tokens", map[string]any{"name": "another", "expires_in_sec": 3600})},
	"GET /api/v1/tokens/:id": {api.Rule{Scope: api.ScopeAuthenticated}, func(f *matrixFixture, c *caller, _ int64) (string, any) {
		return fmt.Sprintf("/api/v1/tokens/%d", c.tokenID), nil
	}},
	"DELETE /api/v1/tokens/:id": {api.Rule{Scope: api.ScopeAuthenticated}, func(f *matrixFixture, c *caller, _ int64) (string, any) {
		owner := c.principalID
		if owner == 0 {
			owner = f.spareSA
		}
		t := f.b.must(201, "POST", "/api/v1/tokens", map[string]any{"name": "to revoke", "principal_id": owner})
		return fmt.Sprintf("/api/v1/tokens/%d", id(t)), nil
	}},

	"GET /api/v1/role-bindings": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermUsersManage}, fixed("/api/v1/role-bindings", nil)},
	"POST /api/v1/role-bindings": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermUsersManage}, func(f *matrixFixture, _ *caller, _ int64) (string, any) {
		sa := f.b.must(201, "POST", "/api/v1/service-accounts", map[string]any{"name": f.uniq("bound-sa")})
		return "/api/v1/role-bindings", map[string]any{"role": "viewer", "group_id": f.groupA, "principal_id": id(sa)}
	}},
	"DELETE /api/v1/role-bindings/:id": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermUsersManage}, func(f *matrixFixture, _ *caller, _ int64) (string, any) {
		rb := f.b.must(201, "POST", "/api/v1/role-bindings", map[string]any{"role": "viewer", "group_id": f.groupA, "sso_group": f.uniq("idp-group")})
		return fmt.Sprintf("/api/v1/role-bindings/%d", id(rb)), nil
	}},

	// SSO is off in this test: the routes answer 404, past the (public) rule.
	"GET /api/v1/sso":          {api.Rule{Scope: api.ScopePublic}, fixed("/api/v1/sso", nil)},
	"GET /api/v1/sso/login":    {api.Rule{Scope: api.ScopePublic}, fixed("/api/v1/sso/login", nil)},
	"GET /api/v1/sso/callback": {api.Rule{Scope: api.ScopePublic}, fixed("/api/v1/sso/callback?state=x&code=y", nil)},

	"GET /api/v1/audit": {api.Rule{Scope: api.ScopeSystem, Perm: access.PermAuditRead}, fixed("/api/v1/audit", nil)},

	"POST /api/v1/workflows": {api.Rule{Scope: api.ScopeHandler, Perm: access.PermJobsWrite}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return "/api/v1/workflows", f.workflowBody(g, f.uniq("wf"))
	}},
	"GET /api/v1/workflows": {api.Rule{Scope: api.ScopeHandler, Perm: access.PermJobsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/workflows?group_id=%d", g), nil
	}},
	"GET /api/v1/workflows/:id": {api.Rule{Scope: api.ScopeWorkflow, Perm: access.PermJobsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/workflows/%d", f.workflows[g]), nil
	}},
	"PUT /api/v1/workflows/:id": {api.Rule{Scope: api.ScopeWorkflow, Perm: access.PermJobsWrite}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/workflows/%d", f.workflows[g]), f.workflowBody(g, f.uniq("wf-renamed"))
	}},
	"DELETE /api/v1/workflows/:id": {api.Rule{Scope: api.ScopeWorkflow, Perm: access.PermJobsWrite}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/workflows/%d", f.freshWorkflow(g)), nil
	}},
	"POST /api/v1/workflows/:id/trigger": {api.Rule{Scope: api.ScopeWorkflow, Perm: access.PermJobsOperate}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/workflows/%d/trigger", f.workflows[g]), map[string]any{"input": map[string]any{"day": "mon"}}
	}},
	"GET /api/v1/workflow-runs": {api.Rule{Scope: api.ScopeHandler, Perm: access.PermRunsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/workflow-runs?workflow_id=%d", f.workflows[g]), nil
	}},
	"GET /api/v1/workflow-runs/:id": {api.Rule{Scope: api.ScopeWorkflowRun, Perm: access.PermRunsRead}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/workflow-runs/%d", f.wfRuns[g]), nil
	}},
	"POST /api/v1/workflow-runs/:id/cancel": {api.Rule{Scope: api.ScopeWorkflowRun, Perm: access.PermRunsKill}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/workflow-runs/%d/cancel", f.wfRuns[g]), nil
	}},
	"POST /api/v1/workflow-runs/:id/nodes/:node/retry": {api.Rule{Scope: api.ScopeWorkflowRun, Perm: access.PermJobsOperate}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/workflow-runs/%d/nodes/only/retry", f.wfRuns[g]), nil
	}},
	"POST /api/v1/workflow-runs/:id/nodes/:node/mark-succeeded": {api.Rule{Scope: api.ScopeWorkflowRun, Perm: access.PermJobsOperate}, func(f *matrixFixture, _ *caller, g int64) (string, any) {
		return fmt.Sprintf("/api/v1/workflow-runs/%d/nodes/only/mark-succeeded", f.wfRuns[g]), nil
	}},
}

// workflowBody is a workflow of group g with one node running the
// group's job.
func (f *matrixFixture) workflowBody(g int64, name string) map[string]any {
	return map[string]any{"group_id": g, "name": name, "definition": map[string]any{"nodes": []any{map[string]any{"name": "only", "job_id": f.jobs[g]}}}}
}

func (f *matrixFixture) freshWorkflow(g int64) int64 {
	return id(f.b.must(201, "POST", "/api/v1/workflows", f.workflowBody(g, f.uniq("doomed-wf"))))
}

// expectAllowed is the matrix's verdict: may role make a call ruled by r on
// an object of group g?
func expectAllowed(role string, r api.Rule, g, groupA int64) bool {
	switch r.Scope {
	case api.ScopePublic:
		return true
	case api.ScopeAuthenticated:
		return role != "anonymous"
	case api.ScopeSystem:
		return role == "admin"
	}
	if role == "admin" {
		return true
	}
	if g != groupA {
		return false
	}
	for _, p := range specPerms[role] {
		if p == r.Perm {
			return true
		}
	}
	return false
}

func groupScoped(r api.Rule) bool {
	switch r.Scope {
	case api.ScopeGroup, api.ScopeJob, api.ScopeRun, api.ScopeJobName, api.ScopeHandler, api.ScopeWorkflow, api.ScopeWorkflowRun:
		return true
	}
	return false
}

func setupMatrix(t *testing.T, b *bundle) *matrixFixture {
	ctx := context.Background()
	f := &matrixFixture{b: b, jobs: map[int64]int64{}, runs: map[int64]int64{}, workflows: map[int64]int64{}, wfRuns: map[int64]int64{}, callers: map[string]*caller{}, password: "matrix password 0123"}
	f.groupA = b.group("group-a", "local://echo")
	f.groupB = b.group("group-b", "local://echo")
	f.appNameOf = map[int64]string{f.groupA: "group-a", f.groupB: "group-b"}
	for _, g := range []int64{f.groupA, f.groupB} {
		f.jobs[g] = f.freshJob(g)
		// Two runs per group: one for each kill (the second kill finds the
		// run ended, which is a 409, still past the permission check).
		r, _, err := b.st.RunCreate(ctx, store.RunCreateParams{JobID: f.jobs[g], GroupID: g, ScheduledMs: time.Now().Add(time.Hour).UnixMilli(),
			ShardTotal: 1, TriggerType: kind.TriggerManual, Owner: "nobody", CreatedMs: time.Now().UnixMilli()})
		require.NoError(t, err)
		f.runs[g] = r.ID
		w := b.must(201, "POST", "/api/v1/workflows", f.workflowBody(g, "wf"))
		f.workflows[g] = id(w)
		f.wfRuns[g] = id(b.must(201, "POST", fmt.Sprintf("/api/v1/workflows/%d/trigger", id(w)), nil))
	}
	u := b.must(201, "POST", "/api/v1/users", map[string]any{"name": "matrix-user", "password": f.password})
	f.userID = id(u)
	f.spareSA = id(b.must(201, "POST", "/api/v1/service-accounts", map[string]any{"name": "spare"}))
	for _, role := range matrixRoles {
		c := &caller{role: role}
		f.callers[role] = c
		if role == "anonymous" {
			continue
		}
		sa := b.must(201, "POST", "/api/v1/service-accounts", map[string]any{"name": "sa-" + strings.ReplaceAll(role, " ", "-")})
		c.principalID = id(sa)
		switch role {
		case "admin":
			b.must(201, "POST", "/api/v1/role-bindings", map[string]any{"role": "admin", "principal_id": c.principalID})
		case "owner", "operator", "viewer":
			b.must(201, "POST", "/api/v1/role-bindings", map[string]any{"role": role, "group_id": f.groupA, "principal_id": c.principalID})
		}
		tok := b.must(201, "POST", "/api/v1/tokens", map[string]any{"name": "matrix", "principal_id": c.principalID})
		c.token, c.tokenID = tok["token"].(string), id(tok)
	}
	return f
}

// TestPermissionMatrix walks every route registered on the router, as the
// router itself lists them, with each role on objects of group A (where the
// group roles are held) and group B (where they are not), and checks: the
// route declares a rule, the rule is the one this matrix expects, and the
// answer is 401 without credentials, 403 naming the permission when the role
// lacks it, and past the check (neither 401 nor 403) when it holds it. It
// writes the result as the table in docs/permissions.md and fails when that
// file is out of date (RINGJOB_UPDATE_DOCS=1 rewrites it).
func TestPermissionMatrix(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{noSched: true})
	f := setupMatrix(t, b)

	type key struct{ method, path string }
	var routes []key
	seen := map[key]bool{}
	for _, r := range b.app.GetRoutes(true) {
		if r.Method == "HEAD" || !strings.HasPrefix(r.Path, "/api/v1/") {
			continue
		}
		k := key{r.Method, r.Path}
		if seen[k] {
			continue
		}
		seen[k] = true
		routes = append(routes, k)
		rule, ok := api.ParseRouteRule(r.Name)
		if !assertTrue(t, ok, "route %s %s has no permission rule: register it through the routes helper in api.go with a rule (see api/rules.go)", r.Method, r.Path) {
			continue
		}
		row, ok := permissionMatrix[r.Method+" "+r.Path]
		if !assertTrue(t, ok, "route %s %s (rule %s) has no row in permissionMatrix (api/permissions_test.go): add one", r.Method, r.Path, rule) {
			continue
		}
		assertTrue(t, row.rule == rule, "route %s %s declares %s, the matrix expects %s", r.Method, r.Path, rule, row.rule)
	}
	for k := range permissionMatrix {
		method, path, _ := strings.Cut(k, " ")
		assertTrue(t, seen[key{method, path}], "permissionMatrix has %s, which the router does not serve", k)
	}
	sort.Slice(routes, func(i, j int) bool {
		if routes[i].path != routes[j].path {
			return routes[i].path < routes[j].path
		}
		return routes[i].method < routes[j].method
	})
	if t.Failed() {
		return
	}

	var doc strings.Builder
	doc.WriteString(docHeader)
	for _, rt := range routes {
		row := permissionMatrix[rt.method+" "+rt.path]
		groups := []int64{f.groupA}
		if groupScoped(row.rule) && !unfilteredLists[rt.method+" "+rt.path] {
			groups = []int64{f.groupA, f.groupB}
		}
		perm := string(row.rule.Perm)
		if perm == "" {
			perm = "—"
		}
		fmt.Fprintf(&doc, "| `%s %s` | %s | %s |", rt.method, rt.path, perm, row.rule.Scope)
		for _, role := range matrixRoles {
			c := f.callers[role]
			var cells []string
			for _, g := range groups {
				path, body := row.req(f, c, g)
				hdr := []string{"Authorization", ""}
				if c.token != "" {
					hdr = []string{"Authorization", "Bearer " + c.token}
				}
				res := b.call(rt.method, path, body, hdr...)
				want := expectAllowed(role, row.rule, g, f.groupA)
				where := fmt.Sprintf("%s %s as %s on group %d (%s)", rt.method, path, role, g, res.Body)
				switch {
				case want:
					assertTrue(t, res.Status != 401 && res.Status != 403, "%s: want past the permission check, got %d", where, res.Status)
				case role == "anonymous":
					assertTrue(t, res.Status == 401, "%s: want 401, got %d", where, res.Status)
				case hiddenAsAbsent[rt.method+" "+rt.path] && g != f.groupA && expectAllowed(role, row.rule, f.groupA, f.groupA):
					if assertTrue(t, res.Status == 400, "%s: want 400 (the group answered as absent), got %d", where, res.Status) {
						assertTrue(t, strings.Contains(string(res.Body), "does not exist or is not visible to you"), "%s: want the absent group's answer", where)
					}
				default:
					if assertTrue(t, res.Status == 403, "%s: want 403, got %d", where, res.Status) {
						code, _, _ := res.errCode(t)
						assertTrue(t, code == "permission_denied", "%s: want code permission_denied", where)
						e := res.JSON(t)["error"].(map[string]any)
						assertTrue(t, e["permission"] == string(row.rule.Perm), "%s: the 403 must name %s", where, row.rule.Perm)
					}
				}
				if want {
					cells = append(cells, "✓")
				} else {
					cells = append(cells, "✗")
				}
			}
			fmt.Fprintf(&doc, " %s |", strings.Join(cells, " / "))
		}
		doc.WriteString("\n")
	}
	checkDoc(t, filepath.Join("..", "docs", "permissions.md"), doc.String())
}

const docHeader = `# Permissions

Generated by ` + "`TestPermissionMatrix`" + ` (api/permissions_test.go) from the routes the
router serves; the test fails when this file is out of date (run it with
RINGJOB_UPDATE_DOCS=1 to rewrite it). Every call in the table was made by the test.

Roles: **admin** (global), and per group **owner**, **operator**, **viewer**, held on
group A only; **no role** is a principal with a valid token and no binding;
**anonymous** sends no credentials. For routes on a group's objects a cell reads
"group A / group B". ✓ = allowed (the request passes the permission check), ✗ =
refused (403 naming the permission, or 401 when anonymous). ` + "`/apply` and `/plan`" + ` answer a
group the caller cannot read exactly as a group that does not exist (400, "does not
exist or is not visible to you"), so their ✗ on group B is that 400.

Scopes: *public* needs no credentials; *authenticated* needs any principal (tokens:
your own, or every one with users.manage); *system* is admin only; *group*, *job*,
*run*, *job_name* check the permission on the group of the object in the path; *handler* needs
it on the group named in the body or query, and lists show only the groups where the
principal holds it.

A request is checked on every group it touches, not only the group in its path or body:
a job's new child jobs (` + "`child_job_ids`, `children:` in `/apply`" + `) need jobs.operate on each
child's group, since a child runs whenever its parent succeeds; a child in a group the
caller cannot read is answered as a job that does not exist; a group's static members may
not be addresses that another group's executors registered, and a job's pinned targets must
be targets of its own group. Which credential the server sends where is in security.md.

| Route | Permission | Scope | admin | owner | operator | viewer | no role | anonymous |
|---|---|---|---|---|---|---|---|---|
`

// assertTrue reports a failure without stopping the walk, so one run lists
// every wrong cell.
func assertTrue(t *testing.T, ok bool, format string, args ...any) bool {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
	return ok
}

func checkDoc(t *testing.T, path, want string) {
	t.Helper()
	if os.Getenv("RINGJOB_UPDATE_DOCS") == "1" {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		return
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err, "run the test with RINGJOB_UPDATE_DOCS=1 to write %s", path)
	require.Equal(t, want, string(got), "%s is out of date: run `RINGJOB_UPDATE_DOCS=1 go test ./api -run TestPermissionMatrix`", path)
}

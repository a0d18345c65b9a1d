package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/executor"
	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/xxlwire"
)

// The credentials of the isolation test.
const (
	isoAdminToken  = "isolation-admin-token-0123456789abcdef"
	isoGlobalToken = "isolation-global-executor-token-01"
	isoTokenA      = "isolation-team-a-token-0123456"
	isoTokenB      = "isolation-team-b-token-0123456"
)

// capturedCall is one request an executor address received.
type capturedCall struct{ Path, Token, AppName string }

// captureExecutor is an address the attacker controls: it answers as an
// XXL-JOB executor and records what it was sent.
type captureExecutor struct {
	*httptest.Server
	mu    sync.Mutex
	calls []capturedCall
}

func startCapture(t *testing.T) *captureExecutor {
	c := &captureExecutor{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.calls = append(c.calls, capturedCall{r.URL.Path, r.Header.Get(xxlwire.HeaderAccessToken), r.Header.Get(xxlwire.HeaderAppName)})
		c.mu.Unlock()
		fmt.Fprint(w, `{"code":200,"msg":null}`)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *captureExecutor) seen() []capturedCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]capturedCall(nil), c.calls...)
}

// TestTenantIsolation performs the attacks of issue 27 against a real server
// process (SQLite and MariaDB) as a principal that owns group A only, and
// checks that each is refused and changed nothing, beside the legitimate
// path: an owner of A and B chains A to B; a group with its own executor
// token sends that token, a group without one the global token.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	for _, dbKind := range []string{"sqlite", "mysql"} {
		t.Run(dbKind, func(t *testing.T) {
			t.Parallel()
			dbURL := "sqlite://" + dbtest.SQLitePath(t)
			if dbKind == "mysql" {
				dbURL = mysqlURL(t, dbtest.MySQL(t))
			}
			s := startServerWith(t, dbURL, isoAdminToken, freePort(t), fmt.Sprintf("executors: {access_token: %q}\n", isoGlobalToken))
			testTenantIsolation(t, s)
		})
	}
}

func testTenantIsolation(t *testing.T, s *server) {
	ctx := context.Background()
	must := func(want int, method, path string, body any) map[string]any {
		t.Helper()
		code, out := s.call(method, path, body, nil)
		require.Equal(t, want, code, "%s %s: %v", method, path, out)
		return out
	}
	groupA := num(must(201, "POST", "/api/v1/groups", map[string]any{"app_name": "team-a", "title": "A", "members": []string{"local://hello"}, "executor_token": isoTokenA})["id"])
	groupB := num(must(201, "POST", "/api/v1/groups", map[string]any{"app_name": "team-b", "title": "B", "executor_token": isoTokenB})["id"])
	groupC := num(must(201, "POST", "/api/v1/groups", map[string]any{"app_name": "team-c", "title": "C"})["id"])
	// principal creates a service account bound as owner on groups, with a token.
	principal := func(name string, groups ...int64) string {
		sa := must(201, "POST", "/api/v1/service-accounts", map[string]any{"name": name})
		for _, g := range groups {
			must(201, "POST", "/api/v1/role-bindings", map[string]any{"role": "owner", "group_id": g, "principal_id": num(sa["id"])})
		}
		return must(201, "POST", "/api/v1/tokens", map[string]any{"name": "t", "principal_id": num(sa["id"])})["token"].(string)
	}
	mallory := principal("mallory", groupA)
	both := principal("owner-of-both", groupA, groupB)

	// B's real executor (the Go SDK on a socket) with B's token, counting runs.
	var bRuns atomic.Int32
	var bParams sync.Map
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	bAddr := "http://" + ln.Addr().String() + "/"
	ex, err := executor.New(executor.WithAdminAddresses(s.base), executor.WithAccessToken(isoTokenB), executor.WithAppName("team-b"),
		executor.WithLogDir(t.TempDir()), executor.WithAddress(bAddr), executor.WithShutdownGrace(200*time.Millisecond),
		executor.WithRegistryInterval(200*time.Millisecond))
	require.NoError(t, err)
	work := func(_ context.Context, j *executor.Job) error {
		bRuns.Add(1)
		bParams.Store(j.Params, true)
		return nil
	}
	ex.Register("work", work)
	ex.Register("attacker-handler", work)
	ectx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Serve(ectx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool {
		_, p := s.call("GET", fmt.Sprintf("/api/v1/executors?group_id=%d", groupB), nil, nil)
		items, _ := p["items"].([]any)
		return len(items) == 1
	}, 15*time.Second, 50*time.Millisecond, "B's executor registers")

	bJob := num(must(201, "POST", "/api/v1/jobs", map[string]any{"group_id": groupB, "name": "b-secret", "handler": "work", "params": "b-private-params", "schedule_type": "none"})["id"])
	bRunCount := func() int {
		_, p := s.call("GET", fmt.Sprintf("/api/v1/runs?job_id=%d", bJob), nil, nil)
		items, _ := p["items"].([]any)
		return len(items)
	}
	aJobCount := func() int {
		_, p := s.call("GET", fmt.Sprintf("/api/v1/jobs?group_id=%d", groupA), nil, nil)
		items, _ := p["items"].([]any)
		return len(items)
	}
	waitRun := func(id int64, states ...string) map[string]any {
		t.Helper()
		var r map[string]any
		require.Eventually(t, func() bool {
			_, r = s.call("GET", fmt.Sprintf("/api/v1/runs/%d", id), nil, nil)
			for _, st := range states {
				if r["state"] == st {
					return true
				}
			}
			return false
		}, 20*time.Second, 50*time.Millisecond, "run %d never reached %v: %v", id, states, r)
		return r
	}
	trigger := func(tok string, job int64) int64 {
		t.Helper()
		code, r := s.callAs(tok, "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", job), map[string]any{}, nil)
		require.Equal(t, 201, code, "%v", r)
		return num(r["id"])
	}
	errMsg := func(out map[string]any) string {
		e, _ := out["error"].(map[string]any)
		m, _ := e["message"].(string)
		return m
	}

	t.Run("child jobs cannot cross into a group the caller cannot read", func(t *testing.T) {
		before := aJobCount()
		code, out := s.callAs(mallory, "POST", "/api/v1/jobs", map[string]any{"group_id": groupA, "name": "parent", "schedule_type": "none", "child_job_ids": []int64{bJob}}, nil)
		require.Equal(t, 400, code, "%v", out)
		require.Contains(t, errMsg(out), "child_job_ids[0]")
		code, absent := s.callAs(mallory, "POST", "/api/v1/jobs", map[string]any{"group_id": groupA, "name": "parent", "schedule_type": "none", "child_job_ids": []int64{bJob + 100000}}, nil)
		require.Equal(t, 400, code)
		require.Equal(t, strings.Replace(errMsg(out), fmt.Sprint(bJob), fmt.Sprint(bJob+100000), 1), errMsg(absent), "the answer is the one for a job that does not exist")
		require.Equal(t, before, aJobCount(), "no job was created")

		parent := num(must(201, "POST", "/api/v1/jobs", map[string]any{"group_id": groupA, "name": "parent", "schedule_type": "none"})["id"])
		for _, method := range []string{"PATCH", "PUT"} {
			code, out := s.callAs(mallory, method, fmt.Sprintf("/api/v1/jobs/%d", parent), map[string]any{"group_id": groupA, "name": "parent", "schedule_type": "none", "child_job_ids": []int64{bJob}}, nil)
			require.Equal(t, 400, code, "%s: %v", method, out)
			require.Contains(t, errMsg(out), "child_job_ids[0]")
		}
		got := must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d", parent), nil)
		require.Empty(t, got["child_job_ids"], "the job was not changed")

		for _, path := range []string{"/api/v1/apply", "/api/v1/plan"} {
			decl := func(child string) map[string]any {
				return map[string]any{"jobs": []map[string]any{{"group": "team-a", "name": "parent", "schedule_type": "none", "children": []string{child}}}}
			}
			code, out := s.callAs(mallory, "POST", path, decl("team-b/b-secret"), nil)
			require.Equal(t, 400, code, "%s: %v", path, out)
			code, absent := s.callAs(mallory, "POST", path, decl("team-b/no-such-job"), nil)
			require.Equal(t, 400, code)
			require.Equal(t, strings.Replace(errMsg(out), "b-secret", "no-such-job", -1), errMsg(absent), "%s tells an existing job of B from a missing one", path)
			// Naming B's jobs directly: B answers as a group that does not exist.
			code, out = s.callAs(mallory, "POST", path, map[string]any{"jobs": []map[string]any{{"group": "team-b", "name": "b-secret"}}}, nil)
			require.Equal(t, 400, code, "%v", out)
			code, absent = s.callAs(mallory, "POST", path, map[string]any{"jobs": []map[string]any{{"group": "team-zz", "name": "b-secret"}}}, nil)
			require.Equal(t, 400, code)
			require.Equal(t, strings.Replace(errMsg(out), "team-b", "team-zz", -1), errMsg(absent), "%s tells an existing group from a missing one", path)
		}
		got = must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d", parent), nil)
		require.Empty(t, got["child_job_ids"], "apply changed nothing")

		require.Equal(t, "succeeded", waitRun(trigger(mallory, parent), "succeeded", "failed")["state"])
		time.Sleep(500 * time.Millisecond) // a child would be triggered at once
		require.Zero(t, bRunCount(), "B's job never ran")
		require.Zero(t, bRuns.Load(), "B's executor ran nothing")
	})

	t.Run("an owner of A and B chains A to B", func(t *testing.T) {
		chained := num(must(201, "POST", "/api/v1/jobs", map[string]any{"group_id": groupA, "name": "chained", "schedule_type": "none"})["id"])
		code, out := s.callAs(both, "PATCH", fmt.Sprintf("/api/v1/jobs/%d", chained), map[string]any{"child_job_ids": []int64{bJob}}, nil)
		require.Equal(t, 200, code, "%v", out)
		// The link made, the owner of A alone may still edit the job.
		code, out = s.callAs(mallory, "PATCH", fmt.Sprintf("/api/v1/jobs/%d", chained), map[string]any{"description": "edited by A's owner"}, nil)
		require.Equal(t, 200, code, "%v", out)
		require.Equal(t, "succeeded", waitRun(trigger(both, chained), "succeeded", "failed")["state"])
		require.Eventually(t, func() bool { return bRuns.Load() == 1 }, 20*time.Second, 50*time.Millisecond, "B's job ran as the child")
		_, p := s.call("GET", fmt.Sprintf("/api/v1/runs?job_id=%d", bJob), nil, nil)
		require.Equal(t, "parent", p["items"].([]any)[0].(map[string]any)["trigger_type"])
	})

	capture := startCapture(t)
	attackJob := num(must(201, "POST", "/api/v1/jobs", map[string]any{"group_id": groupA, "name": "attack", "handler": "attacker-handler", "params": "from-a", "schedule_type": "none"})["id"])

	t.Run("a static member cannot be another group's registered executor", func(t *testing.T) {
		before := must(200, "GET", fmt.Sprintf("/api/v1/groups/%d", groupA), nil)
		for _, addr := range []string{bAddr, strings.TrimSuffix(bAddr, "/")} {
			code, out := s.callAs(mallory, "PUT", fmt.Sprintf("/api/v1/groups/%d", groupA), map[string]any{"title": "A", "members": []string{addr}}, nil)
			require.Equal(t, 400, code, "%v", out)
			require.Contains(t, errMsg(out), "members[0]")
		}
		require.Equal(t, before["members"], must(200, "GET", fmt.Sprintf("/api/v1/groups/%d", groupA), nil)["members"], "the group was not changed")

		// An address B's executor registers after A listed it: A's runs
		// are not sent there.
		code, out := s.callAs(mallory, "PUT", fmt.Sprintf("/api/v1/groups/%d", groupA), map[string]any{"title": "A", "members": []string{capture.URL}}, nil)
		require.Equal(t, 200, code, "%v", out)
		code, msg := xxlPost(t, s.base, "/api/registry", beat("team-b", capture.URL), token(isoTokenB))
		require.Equal(t, 200, code, msg)
		r := waitRun(trigger(mallory, attackJob), "failed", "succeeded", "running")
		require.Equal(t, "failed", r["state"], "%v", r)
		require.Contains(t, r["message"], "another group's executor")
		for _, c := range capture.seen() {
			require.NotEqual(t, "/run", c.Path, "A's run reached B's executor address: %+v", c)
			require.NotEqual(t, isoTokenB, c.Token, "B's token was sent")
		}
		code, msg = xxlPost(t, s.base, "/api/registryRemove", beat("team-b", capture.URL), token(isoTokenB))
		require.Equal(t, 200, code, msg)
		require.Equal(t, int32(1), bRuns.Load(), "B's executor ran only the legitimate child")
		_, seen := bParams.Load("from-a")
		require.False(t, seen)
	})

	t.Run("a static member gets the run's group token, never the global one", func(t *testing.T) {
		// B's goodbye is seen at once on this replica; the member is A's own now.
		r := waitRun(trigger(mallory, attackJob), "running", "succeeded", "failed")
		require.Equal(t, "running", r["state"], "%v", r)
		var runCalls []capturedCall
		for _, c := range capture.seen() {
			require.NotEqual(t, isoGlobalToken, c.Token, "the global executor token reached a member A's owner controls")
			if c.Path == "/run" {
				runCalls = append(runCalls, c)
			}
		}
		require.Equal(t, []capturedCall{{Path: "/run", Token: isoTokenA, AppName: "team-a"}}, runCalls, "A's run carries A's own token")

		// A group without a token of its own sends the global one.
		cJob := num(must(201, "POST", "/api/v1/jobs", map[string]any{"group_id": groupC, "name": "c-job", "handler": "h", "schedule_type": "none"})["id"])
		must(200, "PUT", fmt.Sprintf("/api/v1/groups/%d", groupC), map[string]any{"title": "C", "members": []string{capture.URL}})
		waitRun(trigger(isoAdminToken, cJob), "running", "succeeded", "failed")
		last := capture.seen()
		require.Equal(t, capturedCall{Path: "/run", Token: isoGlobalToken, AppName: "team-c"}, last[len(last)-1])
	})

	t.Run("executor registrations, removals and refusals are audited", func(t *testing.T) {
		code, msg := xxlPost(t, s.base, "/api/registry", beat("team-b", "http://127.0.0.1:9/"), token(isoTokenA))
		require.Equal(t, 500, code, msg)
		objects := func(action string) []string {
			_, page := s.call("GET", "/api/v1/audit?action="+action, nil, nil)
			var out []string
			for _, it := range page["items"].([]any) {
				out = append(out, it.(map[string]any)["object_id"].(string))
			}
			return out
		}
		captured := strings.TrimRight(capture.URL, "/")
		require.Contains(t, objects("executor.register"), captured)
		require.Contains(t, objects("executor.register"), strings.TrimRight(bAddr, "/"))
		require.Contains(t, objects("executor.remove"), captured)
		require.Contains(t, objects("executor.register_refused"), "http://127.0.0.1:9")
	})

	t.Run("a pinned target outside the job's group is refused", func(t *testing.T) {
		before := aJobCount()
		code, out := s.callAs(mallory, "POST", "/api/v1/jobs", map[string]any{"group_id": groupA, "name": "pinned", "handler": "work", "schedule_type": "none", "pinned_targets": []string{bAddr}}, nil)
		require.Equal(t, 400, code, "%v", out)
		require.Contains(t, errMsg(out), "pinned_targets[0]")
		require.Equal(t, before, aJobCount())
	})
}

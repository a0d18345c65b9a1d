package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/executor"
	"github.com/ringjob/ringjob/internal/dbtest"
)

// TestGroupExecutorTokenRotation changes a group's executor token through
// the API of a real server (on MariaDB) while real executors (the Go SDK on
// sockets) serve the group, and checks that the executor directory sees the
// change at once: after a rotation, registrations and callbacks with the old
// token are refused, dispatches carry the new one (an executor still holding
// the old token refuses them), and an executor given the new token
// registers, runs and reports. A token set by hand then replaces it the same
// way.
func TestGroupExecutorTokenRotation(t *testing.T) {
	t.Parallel()
	const (
		adminToken  = "rotation-admin-token-0123456789abcdefgh"
		globalToken = "rotation-global-executor-token-0123"
		oldToken    = "rotation-old-group-token-0123456"
		chosenToken = "xxl-existing-access-token-0123456"
	)
	s := startServerWith(t, mysqlURL(t, dbtest.MySQL(t)), adminToken, freePort(t), fmt.Sprintf("executors: {access_token: %q}\n", globalToken))
	ctx := context.Background()

	code, g := s.call("POST", "/api/v1/groups", map[string]any{"app_name": "rotating", "executor_token": oldToken}, nil)
	require.Equal(t, 201, code, "%v", g)
	gid := num(g["id"])

	registered := func(addr string) bool {
		code, p := s.call("GET", fmt.Sprintf("/api/v1/executors?group_id=%d", gid), nil, nil)
		require.Equal(t, 200, code, "%v", p)
		for _, it := range p["items"].([]any) {
			if strings.TrimRight(it.(map[string]any)["address"].(string), "/") == strings.TrimRight(addr, "/") {
				return true
			}
		}
		return false
	}
	// startExecutor serves the group with a real SDK executor holding tok.
	startExecutor := func(tok string, h executor.Handler) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := "http://" + ln.Addr().String() + "/"
		ex, err := executor.New(executor.WithAdminAddresses(s.base), executor.WithAccessToken(tok), executor.WithAppName("rotating"),
			executor.WithLogDir(t.TempDir()), executor.WithAddress(addr), executor.WithShutdownGrace(200*time.Millisecond),
			executor.WithRegistryInterval(200*time.Millisecond))
		require.NoError(t, err)
		ex.Register("work", h)
		ectx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = ex.Serve(ectx, ln) }()
		t.Cleanup(func() { cancel(); <-done })
		return addr
	}
	job := func(name, target string) int64 {
		code, j := s.call("POST", "/api/v1/jobs", map[string]any{"group_id": gid, "name": name, "handler": "work", "schedule_type": "none",
			"time_zone": "UTC", "timeout_sec": 30, "pinned_targets": []string{target}}, nil)
		require.Equal(t, 201, code, "%v", j)
		return num(j["id"])
	}
	trigger := func(jobID int64) int64 {
		code, r := s.call("POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", jobID), map[string]any{}, nil)
		require.Equal(t, 201, code, "%v", r)
		return num(r["id"])
	}
	waitRun := func(id int64, states ...string) map[string]any {
		var r map[string]any
		if !assert.Eventually(t, func() bool {
			_, r = s.call("GET", fmt.Sprintf("/api/v1/runs/%d", id), nil, nil)
			for _, st := range states {
				if r["state"] == st {
					return true
				}
			}
			return false
		}, 20*time.Second, 50*time.Millisecond) {
			t.Fatalf("run %d never reached %v: %v\nserver log (tail):\n%s", id, states, r, tail(s.output(), 12000))
		}
		return r
	}
	ok := func(context.Context, *executor.Job) error { return nil }

	// Before: the executor with the group's token registers, runs, reports.
	oldAddr := startExecutor(oldToken, ok)
	require.Eventually(t, func() bool { return registered(oldAddr) }, 10*time.Second, 20*time.Millisecond)
	onOld := job("on-old-executor", oldAddr)
	require.Equal(t, "succeeded", waitRun(trigger(onOld), "succeeded", "failed")["state"])

	code, rot := s.call("POST", fmt.Sprintf("/api/v1/groups/%d/executor-token/rotate", gid), nil, nil)
	require.Equal(t, 200, code, "%v", rot)
	newToken := rot["executor_token"].(string)

	t.Run("the old token is refused at once", func(t *testing.T) {
		code, msg := xxlPost(t, s.base, "/api/registry", beat("rotating", "http://127.0.0.1:9931/"), token(oldToken))
		require.Equal(t, 500, code)
		require.Equal(t, "The access token is wrong.", msg)
		code, msg = xxlPost(t, s.base, "/api/registry", beat("rotating", "http://127.0.0.1:9931/"), token(newToken))
		require.Equal(t, 200, code, msg)
		code, msg = xxlPost(t, s.base, "/api/registryRemove", beat("rotating", "http://127.0.0.1:9931/"), token(newToken))
		require.Equal(t, 200, code, msg)
	})
	t.Run("dispatches carry the new token", func(t *testing.T) {
		r := waitRun(trigger(onOld), "succeeded", "failed")
		require.Equal(t, "failed", r["state"], "the executor still holding the old token refuses the new one")
		require.Contains(t, r["message"], "access token")
	})

	release := make(chan struct{})
	newAddr := startExecutor(newToken, func(ctx context.Context, _ *executor.Job) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	require.Eventually(t, func() bool { return registered(newAddr) }, 10*time.Second, 20*time.Millisecond, "an executor with the new token registers")
	running := trigger(job("on-new-executor", newAddr))
	waitRun(running, "running")
	t.Run("a callback with the old token is refused", func(t *testing.T) {
		code, msg := xxlPost(t, s.base, "/api/callback", []map[string]any{{"logId": running, "handleCode": 500, "handleMsg": "forged with the old token"}}, token(oldToken))
		require.Equal(t, 500, code)
		require.Contains(t, msg, fmt.Sprint(running))
		_, r := s.call("GET", fmt.Sprintf("/api/v1/runs/%d", running), nil, nil)
		require.Equal(t, "running", r["state"])
	})
	t.Run("the executor with the new token reports its run", func(t *testing.T) {
		close(release)
		require.Equal(t, "succeeded", waitRun(running, "succeeded", "failed")["state"])
	})

	t.Run("a token set by hand replaces the generated one at once", func(t *testing.T) {
		code, body := s.call("PUT", fmt.Sprintf("/api/v1/groups/%d/executor-token", gid), map[string]any{"executor_token": chosenToken}, nil)
		require.Equal(t, 200, code, "%v", body)
		code, msg := xxlPost(t, s.base, "/api/registry", beat("rotating", "http://127.0.0.1:9932/"), token(newToken))
		require.Equal(t, 500, code)
		require.Equal(t, "The access token is wrong.", msg)
		code, msg = xxlPost(t, s.base, "/api/registry", beat("rotating", "http://127.0.0.1:9932/"), token(chosenToken))
		require.Equal(t, 200, code, msg)
	})
	require.NotContains(t, s.logs(), newToken, "the generated token is never logged")
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

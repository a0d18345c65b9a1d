package api_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGroupExecutorSettings(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{})
	g := b.must(201, "POST", "/api/v1/groups", map[string]any{"app_name": "orders", "executor_token": "orders-token-0123456789", "protocol": "3.5"})
	require.Equal(t, true, g["executor_token_set"])
	require.Equal(t, "3.5", g["protocol"])
	require.NotContains(t, fmt.Sprint(g), "orders-token-0123456789", "the token is never shown back")
	got := b.must(200, "GET", fmt.Sprintf("/api/v1/groups/%d", id(g)), nil)
	require.NotContains(t, fmt.Sprint(got), "orders-token-0123456789")

	before := b.counts()
	for _, bad := range []map[string]any{
		{"app_name": "orders2", "protocol": "4.0"},
		{"app_name": "orders2", "executor_token": "short"},
		{"app_name": "orders2", "executor_token": "has spaces and ; semicolons"},
		{"app_name": "orders2", "executor_token": "default_token"},
	} {
		r := b.call("POST", "/api/v1/groups", bad)
		require.Equal(t, 400, r.Status, "%v", bad)
	}
	require.Equal(t, before, b.counts(), "bad input changes nothing")
}

func TestTriggerTargetMustBeACandidate(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{})
	gid := b.group("pins-api", "local://echo")
	j := b.job(map[string]any{"group_id": gid, "name": "j", "pinned_targets": []string{"local://echo"}})
	require.Equal(t, []any{"local://echo"}, j["pinned_targets"])
	before := b.counts()
	r := b.call("POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(j)), map[string]any{"target": "http://169.254.169.254/"})
	require.Equal(t, 400, r.Status, "%s", r.Body)
	code, field, _ := r.errCode(t)
	require.Equal(t, "invalid_argument", code)
	require.Equal(t, "target", field)
	require.Equal(t, before, b.counts(), "nothing was created")
	bad := b.call("POST", "/api/v1/jobs", map[string]any{"group_id": gid, "name": "k", "pinned_targets": []string{"local://undeclared"}})
	require.Equal(t, 400, bad.Status)
	_, field, _ = bad.errCode(t)
	require.Equal(t, "pinned_targets[0]", field)
}

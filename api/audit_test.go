package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// logLines returns the JSON log lines with the given message.
func logLines(t *testing.T, logs string, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), "log line %q", l)
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// Every API write is logged at info (warn when refused) with the principal
// and the ids it touched; reads are not.
func TestWritesAreLoggedWithPrincipal(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{})
	gid := b.group("audit", "local://echo")
	j := b.job(map[string]any{"group_id": gid, "name": "audited"})
	r := b.call("POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(j)), map[string]any{"params": "x"})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	runID := id(r.JSON(t))
	b.call("GET", fmt.Sprintf("/api/v1/jobs/%d", id(j)), nil)
	r = b.call("PUT", fmt.Sprintf("/api/v1/jobs/%d", id(j)), map[string]any{"route_strategy": "nope"})
	require.Equal(t, 400, r.Status, "%s", r.Body)

	writes := logLines(t, b.logs.String(), "api write")
	byPath := map[string]map[string]any{}
	for _, w := range writes {
		require.Equal(t, "info", w["level"])
		require.Equal(t, "initial-admin", w["principal"], "%v", w)
		require.NotNil(t, w["token_id"])
		byPath[w["method"].(string)+" "+w["path"].(string)] = w
	}
	require.Contains(t, byPath, "POST /api/v1/groups")
	require.Contains(t, byPath, "POST /api/v1/jobs")
	trig := byPath[fmt.Sprintf("POST /api/v1/jobs/%d/trigger", id(j))]
	require.NotNil(t, trig, "trigger not logged: %v", writes)
	require.EqualValues(t, id(j), trig["job_id"])
	require.EqualValues(t, runID, trig["run_id"], "the trigger's line names the run it created")
	require.EqualValues(t, 201, trig["status"])

	refused := logLines(t, b.logs.String(), "api write refused")
	require.Len(t, refused, 1)
	require.Equal(t, "warning", refused[0]["level"])
	require.Equal(t, "PUT", refused[0]["method"])
	require.EqualValues(t, 400, refused[0]["status"])
	require.Equal(t, "initial-admin", refused[0]["principal"])

	for _, w := range append(writes, refused...) {
		require.NotEqual(t, "GET", w["method"], "reads are not write lines")
	}
}

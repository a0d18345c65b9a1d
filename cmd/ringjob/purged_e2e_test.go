package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/maintenance/retention"
	"github.com/ringjob/ringjob/store"
)

// TestCLIAfterRetention: once retention has deleted a job's last run,
// `jobs get` and `jobs list` still show how it ended and say the run is
// purged; `runs get` of it fails in one line saying why it may be gone.
func TestCLIAfterRetention(t *testing.T) {
	token := "cli-admin-token-0123456789abcdefghijklmn"
	dsn := dbtest.MySQL(t)
	s := startServer(t, mysqlURL(t, dsn), token)
	c := newCLI(t, s)
	c.ok("login", s.base, "--token", token, "--name", "local")
	c.ok("groups", "create", "cli-purge", "--member", "local://hello")
	c.ok("jobs", "create", "cli-purge/hello", "--handler", "hello")
	var run map[string]any
	c.json(&run, "jobs", "trigger", "cli-purge/hello", "--wait")
	require.Equal(t, "succeeded", run["state"])
	runID := fmt.Sprint(num(run["id"]))
	require.Contains(t, c.ok("jobs", "get", "cli-purge/hello"), "succeeded (run "+runID+")")

	// Another replica's retention worker, 31 days later.
	ctx := context.Background()
	st, err := store.OpenMySQL(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	w, err := retention.New(retention.Options{Config: retention.Config{Runs: retention.Age(30 * 24 * time.Hour)}, Store: st, Node: "other-replica",
		Clock: clockwork.NewFakeClockAt(time.Now().Add(31 * 24 * time.Hour))})
	require.NoError(t, err)
	res, err := w.Cycle(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), res.Runs)

	want := "succeeded (run " + runID + " purged by retention)"
	require.Contains(t, c.ok("jobs", "get", "cli-purge/hello"), want)
	require.Contains(t, c.ok("jobs", "list", "--group", "cli-purge"), want)
	var job map[string]any
	c.json(&job, "jobs", "get", "cli-purge/hello")
	require.Equal(t, true, job["last_run_purged"])
	r := c.fails(1, "deleted once older than the retention", "runs", "get", runID)
	oneLine(t, r)
}

package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListFiltersAndPaging: jobs list filters as the console's list does
// (schedule type, last outcome), and runs list pages past --limit with the
// cursor it prints, or lists every page with --all.
func TestListFiltersAndPaging(t *testing.T) {
	token := "cli-lists-token-0123456789abcdefghijklmn"
	s := startServerWith(t, "sqlite://"+filepath.Join(t.TempDir(), "r.db"), token, freePort(t), "")
	c := newCLI(t, s)
	c.env = append(c.env, "RINGJOB_URL="+s.base, "RINGJOB_TOKEN="+token)
	c.ok("groups", "create", "lists", "--member", "local://hello")
	c.ok("groups", "create", "lists-fail", "--member", "local://fail")
	c.ok("jobs", "create", "lists/nightly", "--handler", "hello", "--schedule-type", "cron", "--schedule", "0 0 3 * * ?")
	c.ok("jobs", "create", "lists/by-hand", "--handler", "hello")
	c.ok("jobs", "create", "lists-fail/broken", "--handler", "fail")
	c.ok("jobs", "create", "lists/idle", "--handler", "hello", "--schedule-type", "fixed_rate", "--schedule", "3600")
	for i := 0; i < 3; i++ {
		c.ok("jobs", "trigger", "lists/by-hand", "--wait")
	}
	require.Equal(t, 1, c.run("jobs", "trigger", "lists-fail/broken", "--wait").code)
	c.ok("jobs", "trigger", "lists/nightly", "--wait")

	jobNames := func(args ...string) []string {
		var jobs []map[string]any
		c.json(&jobs, append([]string{"jobs", "list"}, args...)...)
		out := []string{}
		for _, j := range jobs {
			out = append(out, j["name"].(string))
		}
		return out
	}
	t.Run("jobs by last outcome and by schedule type", func(t *testing.T) {
		require.Equal(t, []string{"broken"}, jobNames("--last-outcome", "failed"))
		require.ElementsMatch(t, []string{"nightly", "by-hand"}, jobNames("--last-outcome", "succeeded"))
		require.Equal(t, []string{"idle"}, jobNames("--last-outcome", "never"))
		require.Equal(t, []string{"nightly"}, jobNames("--schedule-type", "cron"))
		require.Equal(t, []string{"nightly"}, jobNames("--schedule-type", "cron", "--last-outcome", "succeeded", "--group", "lists"))
		require.Empty(t, jobNames("--schedule-type", "cron", "--last-outcome", "failed"))
		require.Regexp(t, `(?m)^\d+\s+lists-fail/broken\s`, c.ok("jobs", "list", "--last-outcome", "failed"))
		r := c.fails(1, "last_outcome", "jobs", "list", "--last-outcome", "broken")
		oneLine(t, r)
		c.fails(1, "schedule_type", "jobs", "list", "--schedule-type", "hourly")
	})

	t.Run("runs page by page, then all at once", func(t *testing.T) {
		ids := func(out string) []string { return regexp.MustCompile(`(?m)^(\d+)\s`).FindAllString(out, -1) }
		all := ids(c.ok("runs", "list", "--limit", "500"))
		require.Len(t, all, 5)
		r := c.run("runs", "list", "--limit", "2")
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, all[:2], ids(r.stdout))
		m := regexp.MustCompile(`More runs follow: add --cursor (\S+) \(or --all\)`).FindStringSubmatch(r.stderr)
		require.NotNil(t, m, "the next page is said: %q", r.stderr)
		r = c.run("runs", "list", "--limit", "2", "--cursor", m[1])
		require.Equal(t, all[2:4], ids(r.stdout), "the cursor continues where the page ended")
		m = regexp.MustCompile(`--cursor (\S+)`).FindStringSubmatch(r.stderr)
		require.NotNil(t, m)
		r = c.run("runs", "list", "--limit", "2", "--cursor", m[1])
		require.Equal(t, all[4:], ids(r.stdout))
		require.Empty(t, r.stderr, "the last page says nothing more follows")

		r = c.run("runs", "list", "--all", "--limit", "2")
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, all, ids(r.stdout), "--all walks every page")
		require.Empty(t, r.stderr)
		var runs []map[string]any
		c.json(&runs, "runs", "list", "--all", "--job", "lists/by-hand")
		require.Len(t, runs, 3)

		c.fails(2, "--cursor or --all", "runs", "list", "--all", "--cursor", "x")
		c.fails(2, "--limit must be between 1 and 500", "runs", "list", "--limit", "501")
		require.True(t, strings.Contains(c.ok("runs", "list", "--help"), "--all"))
	})
}

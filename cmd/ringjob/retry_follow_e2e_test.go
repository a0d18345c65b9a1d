package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFollowThroughRetries: jobs trigger --wait/--follow and runs logs
// --follow do not end at a failed attempt the scheduler retries; they say
// which attempt failed, which run retries it and when, and follow it to the
// fire's last attempt. The local command "flaky" fails until its third try
// (it counts its tries in the file its params name).
func TestFollowThroughRetries(t *testing.T) {
	token := "cli-retry-token-0123456789abcdefghijklmn"
	s := startServerWith(t, "sqlite://"+filepath.Join(t.TempDir(), "r.db"), token, freePort(t), "scheduler: {followup_interval: 200ms}\n")
	c := newCLI(t, s)
	c.env = append(c.env, "RINGJOB_URL="+s.base, "RINGJOB_TOKEN="+token)
	c.ok("groups", "create", "cli-flaky", "--member", "local://flaky")
	c.ok("jobs", "create", "cli-flaky/flaky", "--retries", "3", "--retry-delay", "1")
	c.ok("jobs", "create", "cli-flaky/once", "--retries", "1", "--retry-delay", "1")
	retried := regexp.MustCompile(`Run (\d+) failed \(attempt (\d)\); the scheduler retries it: attempt (\d) is run (\d+), due at \S+\. Following it\.`)

	t.Run("follow prints every attempt's log and ends with the one that succeeded", func(t *testing.T) {
		counter := filepath.Join(t.TempDir(), "tries")
		r := c.run("jobs", "trigger", "cli-flaky/flaky", "--follow", "--param", counter, "--poll", "100ms")
		require.Equal(t, 0, r.code, "the third attempt succeeded: %s", r.stderr)
		require.Equal(t, "attempt 0\nattempt 1\nattempt 2\n", r.stdout)
		said := retried.FindAllStringSubmatch(r.stderr, -1)
		require.Len(t, said, 2, "each retry is said: %s", r.stderr)
		require.Equal(t, []string{"1", "2"}, []string{said[0][2], said[0][3]})
		require.Equal(t, []string{"2", "3"}, []string{said[1][2], said[1][3]})
		require.Equal(t, said[0][4], said[1][1], "the second retry follows the first")
		require.Regexp(t, `(?m)^`+said[1][4]+`\s+cli-flaky/flaky\s+succeeded\s+retry`, r.stderr, "the outcome is the last attempt's")

		// The API says what followed each failed attempt.
		var first map[string]any
		c.json(&first, "runs", "get", said[0][1])
		require.Equal(t, "failed", first["state"])
		require.Equal(t, "scheduled", first["retry"])
		require.Equal(t, said[0][4], fmt.Sprint(num(first["retry_run_id"])))
		var last map[string]any
		c.json(&last, "runs", "get", said[1][4])
		require.Nil(t, last["retry"], "a success has no retry")
	})

	t.Run("wait ends with the last attempt when no retry is left", func(t *testing.T) {
		counter := filepath.Join(t.TempDir(), "tries")
		r := c.run("jobs", "trigger", "cli-flaky/once", "--wait", "--param", counter, "--poll", "100ms", "-o", "json")
		require.Equal(t, 1, r.code, "both attempts failed: %s", r.stderr)
		var last map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &last))
		require.Equal(t, "failed", last["state"])
		require.EqualValues(t, 1, num(last["attempt"]), "the outcome printed is the retry's")
		require.Equal(t, "none", last["retry"], "the last attempt says no retry follows")
		require.Len(t, retried.FindAllString(r.stderr, -1), 1, r.stderr)
		require.Regexp(t, fmt.Sprintf(`run %d failed`, num(last["id"])), r.stderr)
	})

	t.Run("runs logs --follow follows the retries of the run it was given", func(t *testing.T) {
		counter := filepath.Join(t.TempDir(), "tries")
		var run map[string]any
		c.json(&run, "jobs", "trigger", "cli-flaky/flaky", "--param", counter)
		r := c.run("runs", "logs", "--follow", fmt.Sprint(num(run["id"])), "--poll", "100ms")
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, "attempt 0\nattempt 1\nattempt 2\n", r.stdout)
		require.Len(t, retried.FindAllString(r.stderr, -1), 2, r.stderr)
	})
}

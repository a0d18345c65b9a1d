package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
)

// TestRunsKillAsksFirst: `ringjob runs kill` shows what the kill stops and
// asks on a terminal (util-linux script(1) gives it a pseudo-terminal);
// anything but yes changes nothing; without a terminal it refuses with exit
// code 2 unless --yes is given.
func TestRunsKillAsksFirst(t *testing.T) {
	t.Parallel()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) from util-linux is not installed")
	}
	token := "cli-kill-token-0123456789abcdefghijklmn"
	s := startServer(t, mysqlURL(t, dbtest.MySQL(t)), token)
	c := newCLI(t, s)
	r := c.runWith(nil, token+"\n", "login", s.base, "--token-stdin", "--name", "local")
	require.Equal(t, 0, r.code, r.stderr)
	c.ok("groups", "create", "kill-nap", "--member", "local://longnap")
	c.ok("jobs", "create", "kill-nap/nap", "--handler", "longnap", "--schedule-type", "none")
	running := func() int64 {
		var run map[string]any
		c.json(&run, "jobs", "trigger", "kill-nap/nap")
		id := num(run["id"])
		require.Eventually(t, func() bool {
			c.json(&run, "runs", "get", fmt.Sprint(id))
			return run["state"] == "running"
		}, 20*time.Second, 100*time.Millisecond)
		return id
	}
	state := func(id int64) string {
		var run map[string]any
		c.json(&run, "runs", "get", fmt.Sprint(id))
		return run["state"].(string)
	}
	// answer runs `runs kill id` on a terminal and types answer at the question.
	answer := func(id int64, answer string) (string, int) {
		cmd := exec.Command(scriptBin, "-qec", fmt.Sprintf("%s runs kill %d", ringjobBinary(t), id), "/dev/null")
		cmd.Env = c.env
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		var out lockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		require.Eventually(t, func() bool { return strings.Contains(out.String(), "Only 'yes' kills: ") }, 30*time.Second, 20*time.Millisecond,
			"no question: %s", out.String())
		_, err = stdin.Write([]byte(answer + "\n"))
		require.NoError(t, err)
		err = cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return out.String(), code
	}

	id := running()
	// Without a terminal and without --yes: refused, nothing asked or killed.
	c.fails(exitUsage, "pass --yes", "runs", "kill", fmt.Sprint(id))
	require.Equal(t, "running", state(id))

	// On a terminal: the scope first, then the question; "no" kills nothing.
	out, code := answer(id, "no")
	require.Equal(t, exitFailure, code, out)
	require.Contains(t, out, fmt.Sprintf("The kill stops run %d on local://longnap, and nothing else.", id))
	require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+kill-nap/nap\s`, id), out, "the runs it stops name their job")
	require.Contains(t, out, "Kill this run? Only 'yes' kills: ")
	require.Contains(t, out, "Not killed.")
	require.Equal(t, "running", state(id), "cancel changes nothing")

	// "yes" kills it.
	out, code = answer(id, "yes")
	require.Equal(t, 0, code, out)
	require.Eventually(t, func() bool { return state(id) == "killed" }, 20*time.Second, 100*time.Millisecond)

	// A run that has ended: said so, nothing asked.
	r = c.runWith(nil, "", "runs", "kill", "--yes", fmt.Sprint(id))
	require.Equal(t, exitFailure, r.code, r.stderr)
	require.Contains(t, r.stderr, "already ended")

	// --yes kills without asking, with no terminal.
	id = running()
	c.json(new(map[string]any), "runs", "kill", "--yes", fmt.Sprint(id))
	require.Eventually(t, func() bool { return state(id) == "killed" }, 20*time.Second, 100*time.Millisecond)
}

//go:build unix

package localexec

import (
	"strings"
	"testing"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
)

// TestParamsNeverOptions runs the attack from the issue: /usr/bin/env as a
// declared command with params that would make it start a shell. Whatever
// way params are passed, the program never reads them as options.
func TestParamsNeverOptions(t *testing.T) {
	t.Parallel()
	const attack = `-S/bin/sh -c "id"` // env would run a shell; id prints uid=...
	for _, tc := range []struct {
		name string
		cmd  Command
	}{
		{"environment only (the default)", Command{Name: "env", Argv: []string{"/usr/bin/env"}}},
		{"as the last argument after --", Command{Name: "env", Argv: []string{"/usr/bin/env"}, ParamsAsArg: true}},
		{"through a template", Command{Name: "env", Argv: []string{"/usr/bin/env"}, ParamsArg: "X={params}"}},
		{"on stdin", Command{Name: "env", Argv: []string{"/usr/bin/env"}, ParamsStdin: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, Config{Commands: []Command{tc.cmd}})
			req := request("local://env")
			req.Params = attack
			b.start(t, req)
			out := b.waitAny(t, req)
			log := b.log(t, req)
			if strings.Contains(log, "uid=") {
				t.Fatalf("params ran a shell (outcome %+v): %s", out, log)
			}
		})
	}
}

func TestParamsArgTemplateAndStdin(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Commands: []Command{
		{Name: "echo", Argv: []string{"/bin/echo", "hello,"}, ParamsArg: "params: {params}"},
		{Name: "cat", Argv: []string{"/bin/cat"}, ParamsStdin: true},
	}})
	for target, want := range map[string]string{"local://echo": "hello, params: -n x\n", "local://cat": "-n x"} {
		req := request(target)
		req.Params = "-n x"
		b.start(t, req)
		b.wait(t, req, kind.RunSucceeded)
		if got := b.log(t, req); got != want && got != want+"\n" {
			t.Errorf("%s: log %q, want %q", target, got, want)
		}
	}

	for _, tc := range []struct {
		cmd  Command
		want string
	}{
		{Command{Name: "a", Argv: []string{"/bin/echo"}, ParamsArg: "{params}"}, "must not start with {params}"},
		{Command{Name: "b", Argv: []string{"/bin/echo"}, ParamsArg: "--x"}, "exactly once"},
		{Command{Name: "c", Argv: []string{"/bin/echo"}, ParamsArg: "--x={params}", ParamsAsArg: true}, "exclusive"},
	} {
		err := Config{Commands: []Command{tc.cmd}}.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Commands[0].ParamsArg") {
			t.Errorf("%+v: error %v, want one naming Commands[0].ParamsArg with %q", tc.cmd, err, tc.want)
		}
	}
}

func (b *bundle) waitAny(t *testing.T, req targets.Request) targets.Outcome {
	t.Helper()
	return b.sink.WaitOutcome(t, req.RunID, waitOutcome)
}

// log is the run's whole output, lines joined with newlines.
func (b *bundle) log(t *testing.T, req targets.Request) string {
	t.Helper()
	lines := b.sink.Lines(req.RunID)
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

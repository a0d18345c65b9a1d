//go:build linux

package localexec

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
	"github.com/ringjob/ringjob/targets/targettest"
)

const (
	testKillGrace = 200 * time.Millisecond
	waitOutcome   = 20 * time.Second
)

var nextRunID atomic.Int64

// testBin is the test binary, which acts as the helper child (see TestMain).
func testBin(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// helperCommand declares a command that runs the helper with actions.
func helperCommand(t *testing.T, name string, actions ...string) Command {
	return Command{
		Name: name,
		Argv: append([]string{testBin(t)}, actions...),
		// A race-enabled binary that exits with status 0 sleeps
		// atexit_sleep_ms (1s) first; the helpers need not.
		Env: map[string]string{helperEnv: "1", "GORACE": "atexit_sleep_ms=0"},
	}
}

type bundle struct {
	d    *Driver
	sink *targettest.MemorySink
	ctx  context.Context
}

// setup builds a driver for cfg (kill grace testKillGrace unless set) and
// closes it when the test ends.
func setup(t *testing.T, cfg Config) *bundle {
	t.Helper()
	if cfg.KillGrace == 0 {
		cfg.KillGrace = testKillGrace
	}
	sink := targettest.NewMemorySink()
	d, err := New(cfg, sink, testLog(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitOutcome)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitOutcome)
	t.Cleanup(cancel)
	return &bundle{d: d, sink: sink, ctx: ctx}
}

func testLog(t *testing.T) *logrus.Entry {
	l := logrus.New()
	l.SetOutput(testWriter{t})
	l.SetLevel(logrus.WarnLevel)
	return logrus.NewEntry(l).WithField("service", "localexec")
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func request(target string) targets.Request {
	id := nextRunID.Add(1)
	return targets.Request{RunID: id, JobID: 10_000 + id, Target: target, ShardTotal: 1}
}

// start dispatches req and fails the test if it is not accepted.
func (b *bundle) start(t *testing.T, req targets.Request) {
	t.Helper()
	disp, err := b.d.Run(b.ctx, req)
	if err != nil {
		t.Fatalf("Run(%s): %v", req.Target, err)
	}
	if disp.Done != nil {
		t.Fatalf("Run(%s) returned Done %+v; local runs report through the sink", req.Target, *disp.Done)
	}
}

func (b *bundle) wait(t *testing.T, req targets.Request, state kind.RunState) targets.Outcome {
	t.Helper()
	out := b.sink.WaitOutcome(t, req.RunID, waitOutcome)
	if out.State != state {
		t.Fatalf("run %d: outcome %+v, want state %q; log:\n%s", req.RunID, out, state, strings.Join(b.sink.Lines(req.RunID), "\n"))
	}
	return out
}

// pids returns the numbers of the log lines "<prefix> N".
func pids(t *testing.T, lines []string, prefix string) []int {
	t.Helper()
	var out []int
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, prefix+" "); ok {
			n, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatalf("bad line %q", l)
			}
			out = append(out, n)
		}
	}
	return out
}

// assertGroupGone checks that no process of the run's group is left: the
// group as a whole and each recorded grandchild.
func assertGroupGone(t *testing.T, lines []string, wantGrandchildren int) {
	t.Helper()
	pg := pids(t, lines, "pgid")
	gp := pids(t, lines, "gpid")
	if len(pg) != 1 || len(gp) != wantGrandchildren {
		t.Fatalf("log has pgid %v and grandchildren %v, want one pgid and %d grandchildren; log:\n%s", pg, gp, wantGrandchildren, strings.Join(lines, "\n"))
	}
	if err := syscall.Kill(-pg[0], 0); !errors.Is(err, syscall.ESRCH) {
		members, _ := groupMembers(pg[0])
		t.Errorf("process group %d still exists (kill: %v); members: %+v", pg[0], err, members)
	}
	for _, pid := range gp {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("grandchild %d still exists (kill: %v)", pid, err)
		}
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	targettest.Run(t, targettest.Harness{
		NewDriver: func(t *testing.T, sink targets.Sink) targets.Driver {
			cfg := Config{
				KillGrace: testKillGrace,
				Commands: []Command{
					helperCommand(t, "ok", "out:line one", "out:line two", "exit:0"),
					helperCommand(t, "fail", "err:boom", "exit:3"),
					helperCommand(t, "long", "sleep:1h"),
				},
			}
			d, err := New(cfg, sink, testLog(t))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), waitOutcome)
				defer cancel()
				if err := d.Close(ctx); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			return d
		},
		Succeed:    "local://ok",
		SucceedLog: []string{"line one", "line two"},
		Fail:       "local://fail",
		Long:       "local://long",
		Unknown:    "local://nope",
	})
}

func TestRunOutcomes(t *testing.T) {
	t.Parallel()

	t.Run("success is code 200 with stdout and stderr in the log", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Commands: []Command{
			helperCommand(t, "ok", "out:one", "err:careful", "out:two", "partial:no newline at the end", "exit:0"),
		}})
		req := request("local://ok")
		b.start(t, req)
		out := b.wait(t, req, kind.RunSucceeded)
		if out.Code != 200 {
			t.Fatalf("code %d, want 200", out.Code)
		}
		var stdout, stderr []string
		for _, l := range b.sink.Lines(req.RunID) {
			if rest, ok := strings.CutPrefix(l, "[stderr] "); ok {
				stderr = append(stderr, rest)
			} else {
				stdout = append(stdout, l)
			}
		}
		if got, want := strings.Join(stdout, "|"), "one|two|no newline at the end"; got != want {
			t.Fatalf("stdout lines %q, want %q", got, want)
		}
		if got, want := strings.Join(stderr, "|"), "careful"; got != want {
			t.Fatalf("stderr lines %q, want %q", got, want)
		}
	})

	t.Run("failure carries the exit code and the last stderr line", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Commands: []Command{
			helperCommand(t, "fail", "err:first", "err:disk full", "out:bye", "exit:3"),
			helperCommand(t, "quiet", "exit:7"),
		}})
		req := request("local://fail")
		b.start(t, req)
		out := b.wait(t, req, kind.RunFailed)
		if out.Code != 3 || out.Message != "exit status 3: disk full" {
			t.Fatalf("outcome %+v, want code 3 and message %q", out, "exit status 3: disk full")
		}
		req = request("local://quiet")
		b.start(t, req)
		out = b.wait(t, req, kind.RunFailed)
		if out.Code != 7 || out.Message != "exit status 7" {
			t.Fatalf("outcome %+v, want code 7 and message %q", out, "exit status 7")
		}
	})

	t.Run("output beyond the cap is cut with a marker while the pipes keep draining", func(t *testing.T) {
		t.Parallel()
		const capBytes = 1000
		// 300 KB is far more than a pipe buffer: if the driver stopped reading
		// at the cap the process would block and never exit.
		b := setup(t, Config{LogCapBytes: capBytes, Commands: []Command{
			helperCommand(t, "spam", "spam:3000", "err:late", "out:after", "exit:0"),
		}})
		req := request("local://spam")
		b.start(t, req)
		b.wait(t, req, kind.RunSucceeded)
		lines := b.sink.Lines(req.RunID)
		marker := "[ringjob: output truncated after 1000 bytes]"
		if len(lines) == 0 || lines[len(lines)-1] != marker {
			t.Fatalf("last line is not %q; log ends with %q", marker, lines[max(0, len(lines)-2):])
		}
		kept := 0
		for _, l := range lines[:len(lines)-1] {
			if strings.Contains(l, "ringjob: output truncated") || l == "after" {
				t.Fatalf("unexpected line %q before the marker", l)
			}
			kept += len(l) + 1
		}
		if kept > capBytes || kept < capBytes-100 {
			t.Fatalf("kept %d bytes before the marker, want at most %d and close to it", kept, capBytes)
		}
	})
}

func TestProcessGroups(t *testing.T) {
	t.Parallel()

	t.Run("timeout ends the whole group, grandchildren included", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Commands: []Command{
			helperCommand(t, "tree", "pgid", "spawn:2", "out:ready", "sleep:1h"),
		}})
		req := request("local://tree")
		// Long enough for the helper to start its grandchildren, which the
		// test then checks, even on a machine busy with other builds (2 s
		// was not); the run itself would sleep for an hour.
		req.Timeout = 6 * time.Second
		b.start(t, req)
		out := b.wait(t, req, kind.RunTimedOut)
		if out.Code != 502 || !strings.Contains(out.Message, "timed out after 6s") {
			t.Fatalf("outcome %+v, want code 502 and a timeout message", out)
		}
		assertGroupGone(t, b.sink.Lines(req.RunID), 2)
	})

	t.Run("kill ends a group that ignores SIGTERM with SIGKILL", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Commands: []Command{
			helperCommand(t, "stubborn", "ignoreterm", "pgid", "spawn:2", "out:ready", "sleep:1h"),
		}})
		req := request("local://stubborn")
		b.start(t, req)
		b.sink.WaitLog(t, req.RunID, waitOutcome, func(l []string) bool { return len(l) > 0 && l[len(l)-1] == "ready" })
		killed := time.Now()
		if err := b.d.Kill(b.ctx, req.Target, req.RunID, req.JobID); err != nil {
			t.Fatalf("Kill: %v", err)
		}
		out := b.wait(t, req, kind.RunKilled)
		if !strings.Contains(out.Message, "SIGKILL after 200ms grace") {
			t.Fatalf("outcome %+v, want the message to say SIGKILL was needed", out)
		}
		if took := time.Since(killed); took < testKillGrace {
			t.Fatalf("run ended %s after Kill, before the %s grace", took, testKillGrace)
		}
		assertGroupGone(t, b.sink.Lines(req.RunID), 2)
	})

	t.Run("kill ends a group that obeys SIGTERM without SIGKILL", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{KillGrace: time.Minute, Commands: []Command{
			helperCommand(t, "tree", "pgid", "spawn:2", "out:ready", "sleep:1h"),
		}})
		req := request("local://tree")
		b.start(t, req)
		b.sink.WaitLog(t, req.RunID, waitOutcome, func(l []string) bool { return len(l) > 0 && l[len(l)-1] == "ready" })
		if err := b.d.Kill(b.ctx, req.Target, req.RunID, req.JobID); err != nil {
			t.Fatalf("Kill: %v", err)
		}
		out := b.wait(t, req, kind.RunKilled)
		if out.Message != "killed by request; process group ended by SIGTERM" {
			t.Fatalf("outcome %+v", out)
		}
		assertGroupGone(t, b.sink.Lines(req.RunID), 2)
	})

	t.Run("processes left behind by a finished run are ended", func(t *testing.T) {
		t.Parallel()
		// The grandchild keeps the output pipes open after the leader exits.
		b := setup(t, Config{Commands: []Command{
			helperCommand(t, "leaky", "pgid", "spawn:1", "exit:0"),
		}})
		req := request("local://leaky")
		b.start(t, req)
		out := b.wait(t, req, kind.RunSucceeded)
		if out.Code != 200 {
			t.Fatalf("outcome %+v", out)
		}
		assertGroupGone(t, b.sink.Lines(req.RunID), 1)
	})

	t.Run("a process that left the group cannot hold the run open", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Commands: []Command{
			helperCommand(t, "escape", "escape", "out:bye", "exit:0"),
		}})
		req := request("local://escape")
		b.start(t, req)
		b.wait(t, req, kind.RunSucceeded)
		esc := pids(t, b.sink.Lines(req.RunID), "escaped")
		if len(esc) != 1 {
			t.Fatalf("no escaped pid in log %q", b.sink.Lines(req.RunID))
		}
		// It is outside the driver's reach by design; the test ends it.
		if err := syscall.Kill(esc[0], 0); err != nil {
			t.Fatalf("escaped process %d should still run: %v", esc[0], err)
		}
		_ = syscall.Kill(esc[0], syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(esc[0], &ws, 0, nil) // adopted by the test process (subreaper)
	})
}

func TestEnvironmentAndParams(t *testing.T) {
	t.Parallel()
	const params = "; rm -rf / $(id) `x` | & > ' \" \nsecond line\n\ttab $HOME \\ * ?"
	scheduledAt := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("X", 2*3600))

	dump := func(t *testing.T, inherit bool) (args []string, env map[string]string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "dump.json")
		c := helperCommand(t, "dump", "dump:"+path) // the driver adds "--" before params
		c.ParamsAsArg = true
		c.Env["EXTRA"] = "declared value"
		b := setup(t, Config{InheritEnv: inherit, Commands: []Command{c}})
		req := request("local://dump")
		req.JobID, req.Params = 42, params
		req.ShardIndex, req.ShardTotal, req.Attempt = 2, 5, 1
		req.ScheduledAt = scheduledAt
		b.start(t, req)
		b.wait(t, req, kind.RunSucceeded)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var d struct{ Args, Env []string }
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		env = map[string]string{}
		for _, kv := range d.Env {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		want := map[string]string{
			"RINGJOB_JOB_ID":       "42",
			"RINGJOB_RUN_ID":       strconv.FormatInt(req.RunID, 10),
			"RINGJOB_PARAMS":       params,
			"RINGJOB_SHARD_INDEX":  "2",
			"RINGJOB_SHARD_TOTAL":  "5",
			"RINGJOB_ATTEMPT":      "1",
			"RINGJOB_SCHEDULED_AT": "2026-03-04T05:06:07+02:00",
			"EXTRA":                "declared value",
			helperEnv:              "1",
		}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("env %s = %q, want %q", k, env[k], v)
			}
		}
		return d.Args, env
	}

	t.Run("params arrive verbatim in the environment and as the last argument", func(t *testing.T) {
		t.Parallel()
		args, _ := dump(t, false)
		if len(args) != 3 || !strings.HasPrefix(args[0], "dump:") || args[1] != "--" || args[2] != params {
			t.Fatalf("args %q, want [dump:PATH -- params] with params verbatim", args)
		}
	})

	t.Run("only PATH HOME LANG TZ pass through without InheritEnv", func(t *testing.T) {
		t.Parallel()
		_, env := dump(t, false)
		if _, ok := env[secretEnv]; ok {
			t.Fatalf("%s leaked into the process environment", secretEnv)
		}
		allowed := map[string]bool{"PATH": true, "HOME": true, "LANG": true, "TZ": true, "EXTRA": true, helperEnv: true, "GORACE": true}
		for k := range env {
			if !allowed[k] && !strings.HasPrefix(k, "RINGJOB_") {
				t.Errorf("unexpected variable %s in the process environment", k)
			}
		}
		if p, ok := os.LookupEnv("PATH"); ok && env["PATH"] != p {
			t.Errorf("PATH = %q, want the scheduler's %q", env["PATH"], p)
		}
	})

	t.Run("InheritEnv passes the scheduler environment", func(t *testing.T) {
		t.Parallel()
		_, env := dump(t, true)
		if env[secretEnv] != "s3cret" {
			t.Fatalf("%s = %q with InheritEnv, want it passed through", secretEnv, env[secretEnv])
		}
	})

	t.Run("params with a NUL byte are rejected", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Commands: []Command{helperCommand(t, "ok", "exit:0")}})
		req := request("local://ok")
		req.Params = "a\x00b"
		if _, err := b.d.Run(b.ctx, req); err == nil || !strings.Contains(err.Error(), "NUL") {
			t.Fatalf("Run with NUL in params: %v, want an error", err)
		}
	})
}

func TestDispatchRules(t *testing.T) {
	t.Parallel()

	t.Run("runs above MaxConcurrency are rejected until a slot frees", func(t *testing.T) {
		t.Parallel()
		c := helperCommand(t, "one", "sleep:1h")
		c.MaxConcurrency = 1
		b := setup(t, Config{Commands: []Command{c}})
		first := request("local://one")
		b.start(t, first)
		second := request("local://one")
		_, err := b.d.Run(b.ctx, second)
		if !errors.Is(err, ErrConcurrencyLimit) || !errors.Is(err, targets.ErrBusy) {
			t.Fatalf("second Run: %v, want ErrConcurrencyLimit and targets.ErrBusy", err)
		}
		if !strings.Contains(err.Error(), "MaxConcurrency") {
			t.Fatalf("error %q does not name MaxConcurrency", err)
		}
		if err := b.d.Kill(b.ctx, first.Target, first.RunID, first.JobID); err != nil {
			t.Fatal(err)
		}
		b.wait(t, first, kind.RunKilled)
		third := request("local://one")
		b.start(t, third)
		if _, ok := b.sink.Outcome(second.RunID); ok {
			t.Fatal("rejected run got an outcome")
		}
	})

	t.Run("undeclared names are rejected naming the declared ones", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Commands: []Command{helperCommand(t, "b", "exit:0"), helperCommand(t, "a", "exit:0")}})
		for _, target := range []string{"local://nope", "local://a/b", "http://a", "a"} {
			_, err := b.d.Run(b.ctx, request(target))
			if !errors.Is(err, targets.ErrUnknownTarget) {
				t.Fatalf("Run(%s): %v, want targets.ErrUnknownTarget", target, err)
			}
		}
		_, err := b.d.Run(b.ctx, request("local://nope"))
		if !strings.Contains(err.Error(), "declared: a, b") {
			t.Fatalf("error %q does not list the declared commands", err)
		}
		if err := b.d.Beat(b.ctx, "local://nope"); !errors.Is(err, targets.ErrUnknownTarget) {
			t.Fatalf("Beat: %v", err)
		}
		if err := b.d.Beat(b.ctx, "local://a/"); err != nil {
			t.Fatalf("Beat(local://a/): %v", err)
		}
	})

	t.Run("IdleBeat is busy while the job runs", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Commands: []Command{helperCommand(t, "long", "sleep:1h"), helperCommand(t, "other", "exit:0")}})
		req := request("local://long")
		b.start(t, req)
		// Busy for the job on any command of this driver.
		if err := b.d.IdleBeat(b.ctx, "local://other", req.JobID); !errors.Is(err, targets.ErrBusy) {
			t.Fatalf("IdleBeat while running: %v, want targets.ErrBusy", err)
		}
		if err := b.d.IdleBeat(b.ctx, "local://long", req.JobID+1); err != nil {
			t.Fatalf("IdleBeat for another job: %v", err)
		}
		if err := b.d.Kill(b.ctx, req.Target, req.RunID, req.JobID); err != nil {
			t.Fatal(err)
		}
		b.wait(t, req, kind.RunKilled)
		if err := b.d.IdleBeat(b.ctx, "local://long", req.JobID); err != nil {
			t.Fatalf("IdleBeat after the run: %v", err)
		}
	})

	t.Run("Beat checks the program is still executable", func(t *testing.T) {
		t.Parallel()
		prog := filepath.Join(t.TempDir(), "prog")
		if err := os.WriteFile(prog, nil, 0o755); err != nil {
			t.Fatal(err)
		}
		b := setup(t, Config{Commands: []Command{{Name: "prog", Argv: []string{prog}, MaxConcurrency: 1}}})
		if err := b.d.Beat(b.ctx, "local://prog"); err != nil {
			t.Fatalf("Beat: %v", err)
		}
		// An empty file is executable but no program: the start fails, the
		// run is not accepted, and its slot is freed again.
		for i := 0; i < 2; i++ {
			req := request("local://prog")
			if _, err := b.d.Run(b.ctx, req); err == nil || errors.Is(err, ErrConcurrencyLimit) {
				t.Fatalf("Run of a broken program: %v, want a start error", err)
			}
			if err := b.d.IdleBeat(b.ctx, req.Target, req.JobID); err != nil {
				t.Fatalf("IdleBeat after a failed start: %v", err)
			}
		}
		if err := os.Chmod(prog, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := b.d.Beat(b.ctx, "local://prog"); err == nil || !strings.Contains(err.Error(), "not executable") {
			t.Fatalf("Beat of a non-executable program: %v, want an error", err)
		}
	})

	t.Run("a duplicate dispatch of a running run starts nothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Commands: []Command{helperCommand(t, "long", "pgid", "sleep:1h")}})
		req := request("local://long")
		b.start(t, req)
		disp, err := b.d.Run(b.ctx, req)
		if err != nil || !strings.Contains(disp.Message, "duplicate") {
			t.Fatalf("second Run of run %d: %+v, %v; want it ignored", req.RunID, disp, err)
		}
		if err := b.d.Kill(b.ctx, req.Target, req.RunID, req.JobID); err != nil {
			t.Fatal(err)
		}
		b.wait(t, req, kind.RunKilled)
		if n := b.sink.Completions(req.RunID); n != 1 {
			t.Fatalf("run completed %d times, want once", n)
		}
	})

	t.Run("Drain lets runs finish within the grace, Abandon reports the rest lost", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Commands: []Command{
			helperCommand(t, "short", "out:ready", "sleep:300ms", "out:finished"),
			helperCommand(t, "long", "ignoreterm", "pgid", "spawn:1", "out:ready", "sleep:1h"),
		}})
		short, long := request("local://short"), request("local://long")
		b.start(t, short)
		b.start(t, long)
		for _, req := range []targets.Request{short, long} {
			b.sink.WaitLog(t, req.RunID, waitOutcome, func(l []string) bool { return len(l) > 0 && l[len(l)-1] == "ready" })
		}
		grace, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		defer cancel()
		if n := b.d.Drain(grace); n != 1 {
			t.Fatalf("Drain left %d runs running, want 1 (the long one)", n)
		}
		// The short run ended by itself during the grace, as a success.
		if out, ok := b.sink.Outcome(short.RunID); !ok || out.State != kind.RunSucceeded {
			t.Fatalf("short run after Drain: %+v %v, want succeeded", out, ok)
		}
		// Draining refuses new runs.
		if _, err := b.d.Run(b.ctx, request("local://short")); !errors.Is(err, ErrClosed) {
			t.Fatalf("Run while draining: %v, want ErrClosed", err)
		}
		if _, ok := b.sink.Outcome(long.RunID); ok {
			t.Fatal("the long run has an outcome before Abandon")
		}
		if err := b.d.Abandon(b.ctx, "lost: the replica stopped"); err != nil {
			t.Fatalf("Abandon: %v", err)
		}
		out, ok := b.sink.Outcome(long.RunID)
		if !ok || out.State != kind.RunLost || !strings.HasPrefix(out.Message, "lost: the replica stopped") {
			t.Fatalf("long run after Abandon: %+v %v, want lost", out, ok)
		}
		assertGroupGone(t, b.sink.Lines(long.RunID), 1)
	})

	t.Run("Drain with nothing running returns at once", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Commands: []Command{helperCommand(t, "short", "out:ok")}})
		if n := b.d.Drain(b.ctx); n != 0 {
			t.Fatalf("Drain: %d running, want 0", n)
		}
	})

	t.Run("Close kills running runs and refuses new ones", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Commands: []Command{helperCommand(t, "long", "ignoreterm", "pgid", "spawn:1", "out:ready", "sleep:1h")}})
		req := request("local://long")
		b.start(t, req)
		b.sink.WaitLog(t, req.RunID, waitOutcome, func(l []string) bool { return len(l) > 0 && l[len(l)-1] == "ready" })
		if err := b.d.Close(b.ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
		// Close has waited: the outcome is in without waiting for it.
		out, ok := b.sink.Outcome(req.RunID)
		if !ok || out.State != kind.RunKilled || !strings.Contains(out.Message, "shut down") {
			t.Fatalf("outcome after Close: %+v, %v; want killed by shutdown", out, ok)
		}
		assertGroupGone(t, b.sink.Lines(req.RunID), 1)
		if _, err := b.d.Run(b.ctx, request("local://long")); !errors.Is(err, ErrClosed) {
			t.Fatalf("Run after Close: %v, want ErrClosed", err)
		}
		if err := b.d.Close(b.ctx); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
}

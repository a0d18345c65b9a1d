//go:build unix

package localexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
)

// How long the driver waits for a process group that SIGKILL did not end
// (a process stuck in the kernel) before it reports the run anyway.
const groupGoneTimeout = 30 * time.Second

// run is one process group started for one run. Its supervisor goroutine owns
// everything else: the waiter, the two pipe readers and the log flusher.
type run struct {
	d   *Driver
	cmd *command
	req targets.Request
	log *logrus.Entry

	proc           *exec.Cmd
	pgid           int
	stdout, stderr *os.File // read ends
	out            *runLog
	readersDone    chan struct{} // each pipe reader sends once when it ends

	stopCh chan struct{} // closed by the first requestStop
	mu     sync.Mutex
	stop   *stopReason // the first stop request
	exited bool        // the supervisor saw the leader exit; stops are ignored
}

// stopReason is why the driver ends a run: the outcome state and its message.
type stopReason struct {
	state kind.RunState
	msg   string
}

func newRun(d *Driver, c *command, req targets.Request) *run {
	return &run{
		d:      d,
		cmd:    c,
		req:    req,
		log:    d.log.WithFields(logrus.Fields{"run_id": req.RunID, "job_id": req.JobID, "command": c.Name}),
		stopCh: make(chan struct{}),
	}
}

// requestStop asks the supervisor to end the process group. Only the first
// request counts, and none once the leader has exited.
func (r *run) requestStop(state kind.RunState, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop != nil || r.exited {
		return
	}
	r.stop = &stopReason{state: state, msg: msg}
	close(r.stopCh)
}

// leaderExited records that the leader has exited and returns the stop
// request that came before, if any.
func (r *run) leaderExited() *stopReason {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exited = true
	return r.stop
}

// start starts the process in its own process group with its output on two
// pipes. It returns the pid.
func (r *run) start() (int, error) {
	args := append(append([]string(nil), r.cmd.Argv[1:]...), r.cmd.paramArgs(r.req.Params)...)
	proc := exec.Command(r.cmd.path, args...)
	if r.cmd.ParamsStdin {
		proc.Stdin = strings.NewReader(r.req.Params)
	}
	proc.Args[0] = r.cmd.Argv[0]
	proc.Env = r.d.environ(r.cmd, r.req)
	proc.Dir = r.cmd.Dir
	proc.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	outR, outW, err := os.Pipe()
	if err != nil {
		return 0, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return 0, fmt.Errorf("stderr pipe: %w", err)
	}
	proc.Stdout, proc.Stderr = outW, errW
	err = proc.Start()
	// The child holds its own copies; ours must go, or the readers never see EOF.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return 0, err
	}
	r.proc, r.pgid = proc, proc.Process.Pid
	r.stdout, r.stderr = outR, errR
	r.log = r.log.WithField("pid", r.pgid)
	r.out = newRunLog(r.d.sink, r.req.RunID, r.d.cfg.LogCapBytes, r.log)
	r.log.Debug("process started")
	return r.pgid, nil
}

// supervise owns the run from start to report: it waits for the leader,
// enforces the timeout and stop requests, makes sure the whole process group
// is gone, drains the output, and reports the outcome.
func (r *run) supervise() {
	defer r.d.ended()

	r.readersDone = make(chan struct{}, 2)
	go r.out.flushLoop()
	go r.read(r.stdout, false)
	go r.read(r.stderr, true)
	waited := make(chan error, 1)
	go func() { waited <- r.proc.Wait() }()

	k := killer{pgid: r.pgid, grace: r.d.cfg.KillGrace, log: r.log}
	var timeout <-chan time.Time
	if r.req.Timeout > 0 {
		t := time.NewTimer(r.req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	stopCh := r.stopCh
	var waitErr error
wait:
	for {
		select {
		case waitErr = <-waited:
			break wait
		case <-timeout:
			timeout = nil
			r.requestStop(kind.RunTimedOut, fmt.Sprintf("timed out after %s", r.req.Timeout))
		case <-stopCh:
			stopCh = nil
			k.terminate()
		case <-k.graceC():
			k.forceKill()
		}
	}
	reason := r.leaderExited()
	k.stopGraceTimer()
	if !k.signalled() {
		// The stop came as the process ended by itself: its exit status counts.
		reason = nil
	}

	// The leader is gone, but the rest of its group may not be.
	if groupAlive(r.pgid) {
		if reason == nil {
			r.log.Warn("process exited and left processes behind in its group; ending them")
		}
		k.waitGroupGone()
	}
	r.drainOutput()

	out := r.outcome(waitErr, reason, k.how())
	r.d.release(r) // idle again before the outcome is seen
	ctx, cancel := context.WithTimeout(context.Background(), sinkTimeout)
	defer cancel()
	if err := r.d.sink.Complete(ctx, r.req.RunID, out); err != nil {
		r.log.WithError(err).WithField("state", out.State).Error("report run outcome")
	}
	r.log.WithFields(logrus.Fields{"state": out.State, "code": out.Code}).Debug("run ended")
}

// drainOutput waits for both pipe readers to reach EOF. The group is gone, so
// only a process that left the group (setsid) can still hold the pipes; after
// KillGrace the readers are stopped so that it cannot hold the run open.
// Then it flushes the last lines to the sink.
func (r *run) drainOutput() {
	pending := 2
	drain := time.NewTimer(r.d.cfg.KillGrace)
	defer drain.Stop()
	for pending > 0 {
		select {
		case <-r.readersDone:
			pending--
		case <-drain.C:
			r.log.Warn("a process outside the run's group still holds its output; no longer reading it")
			now := time.Now()
			_ = r.stdout.SetReadDeadline(now)
			_ = r.stderr.SetReadDeadline(now)
		}
	}
	r.stdout.Close()
	r.stderr.Close()
	r.out.close()
}

// outcome maps how the run ended to the outcome reported.
func (r *run) outcome(waitErr error, reason *stopReason, how string) targets.Outcome {
	if reason != nil {
		code := 500
		if reason.state == kind.RunTimedOut {
			code = 502
		}
		msg := reason.msg
		if how != "" {
			msg += "; process group ended by " + how
		}
		return targets.Outcome{State: reason.state, Code: code, Message: msg}
	}
	if waitErr == nil {
		// The last line it printed is its result (a workflow node's output).
		if last := r.out.lastStdout(); last != "" {
			return targets.Outcome{State: kind.RunSucceeded, Code: 200, Message: last}
		}
		return targets.Outcome{State: kind.RunSucceeded, Code: 200, Message: "exit status 0"}
	}
	var msg string
	code := 500
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
			msg = fmt.Sprintf("terminated by signal %d (%s)", int(ws.Signal()), ws.Signal())
		} else {
			code = ee.ExitCode()
			msg = fmt.Sprintf("exit status %d", code)
		}
	} else {
		msg = fmt.Sprintf("wait for process: %v", waitErr)
	}
	if last := r.out.lastStderr(); last != "" {
		msg += ": " + last
	}
	return targets.Outcome{State: kind.RunFailed, Code: code, Message: msg}
}

package targettest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
)

// fakeDriver is a small in-process driver that exercises both reporting paths
// of the suite: fake://ok finishes inside Run (Dispatch.Done), fake://fail and
// fake://long finish later through the sink.
type fakeDriver struct {
	sink targets.Sink
	wg   sync.WaitGroup

	mu   sync.Mutex
	runs map[int64]*fakeRun
}

type fakeRun struct {
	jobID int64
	stop  chan kind.RunState // outcome state requested by Kill; buffered 1
}

func newFakeDriver(sink targets.Sink) *fakeDriver {
	return &fakeDriver{sink: sink, runs: map[int64]*fakeRun{}}
}

func (d *fakeDriver) known(target string) error {
	switch target {
	case "fake://ok", "fake://fail", "fake://long":
		return nil
	}
	return fmt.Errorf("%w: %s", targets.ErrUnknownTarget, target)
}

func (d *fakeDriver) Run(ctx context.Context, req targets.Request) (targets.Dispatch, error) {
	if err := d.known(req.Target); err != nil {
		return targets.Dispatch{}, err
	}
	switch req.Target {
	case "fake://ok":
		if err := d.sink.AppendLog(ctx, req.RunID, "hello\nworld\n"); err != nil {
			return targets.Dispatch{}, err
		}
		return targets.Dispatch{Done: &targets.Outcome{State: kind.RunSucceeded, Code: 200}}, nil
	case "fake://fail":
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			_ = d.sink.AppendLog(context.Background(), req.RunID, "boom\n")
			_ = d.sink.Complete(context.Background(), req.RunID, targets.Outcome{State: kind.RunFailed, Code: 500, Message: "boom"})
		}()
		return targets.Dispatch{}, nil
	}
	r := &fakeRun{jobID: req.JobID, stop: make(chan kind.RunState, 1)}
	d.mu.Lock()
	d.runs[req.RunID] = r
	d.mu.Unlock()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		var timeout <-chan time.Time
		if req.Timeout > 0 {
			timer := time.NewTimer(req.Timeout)
			defer timer.Stop()
			timeout = timer.C
		}
		out := targets.Outcome{State: kind.RunKilled, Code: 500, Message: "killed"}
		select {
		case <-r.stop:
		case <-timeout:
			out = targets.Outcome{State: kind.RunTimedOut, Code: 502, Message: "timed out"}
		}
		d.mu.Lock()
		delete(d.runs, req.RunID)
		d.mu.Unlock()
		_ = d.sink.Complete(context.Background(), req.RunID, out)
	}()
	return targets.Dispatch{}, nil
}

func (d *fakeDriver) Beat(_ context.Context, target string) error { return d.known(target) }

func (d *fakeDriver) IdleBeat(_ context.Context, target string, jobID int64) error {
	if err := d.known(target); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.runs {
		if r.jobID == jobID {
			return fmt.Errorf("%w: job %d", targets.ErrBusy, jobID)
		}
	}
	return nil
}

func (d *fakeDriver) Kill(_ context.Context, _ string, runID, _ int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, ok := d.runs[runID]; ok {
		select {
		case r.stop <- kind.RunKilled:
		default:
		}
	}
	return nil
}

func (d *fakeDriver) Log(ctx context.Context, _ string, runID int64, fromLine int) (targets.LogChunk, error) {
	return d.sink.ReadLog(ctx, runID, fromLine)
}

func (d *fakeDriver) close() {
	d.mu.Lock()
	for _, r := range d.runs {
		select {
		case r.stop <- kind.RunKilled:
		default:
		}
	}
	d.mu.Unlock()
	d.wg.Wait()
}

func TestRunAgainstFakeDriver(t *testing.T) {
	t.Parallel()
	Run(t, Harness{
		NewDriver: func(t *testing.T, sink targets.Sink) targets.Driver {
			d := newFakeDriver(sink)
			t.Cleanup(d.close)
			return d
		},
		Succeed:    "fake://ok",
		SucceedLog: []string{"hello", "world"},
		Fail:       "fake://fail",
		Long:       "fake://long",
		Unknown:    "fake://nope",
		Timeout:    50 * time.Millisecond,
	})
}

func TestHarnessValidate(t *testing.T) {
	t.Parallel()
	err := (&Harness{Succeed: "x://ok"}).validate()
	if err == nil || !strings.Contains(err.Error(), "NewDriver, Fail, Long") {
		t.Fatalf("validate() = %v, want the missing fields named", err)
	}
}

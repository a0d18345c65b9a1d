package lambda_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
	"github.com/ringjob/ringjob/targets/lambda"
)

const runWait = 20 * time.Second

// schedBundle is a scheduler on SQLite with the lambda driver registered.
type schedBundle struct {
	st    *store.Store
	sched *scheduler.Scheduler
	drv   *lambda.Driver
	ctx   context.Context
}

// setupScheduler starts a scheduler on a fresh SQLite store whose registry
// has the lambda driver for backend b (mutate tunes its config).
func setupScheduler(t *testing.T, b *backend, mutate func(*lambda.Config)) *schedBundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*runWait)
	t.Cleanup(cancel)
	st, err := store.OpenSQLite(ctx, dbtest.SQLitePath(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	reg := targets.NewRegistry()
	sched, err := scheduler.New(scheduler.Options{Config: scheduler.Config{NodeID: "lambda-test"}, Store: st, Drivers: reg, Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the scheduler stops (cleanups run last first) and before
	// the store closes: its goroutines still write outcomes.
	drv := newDriver(t, b, sched.Sink(), mutate)
	reg.Register("lambda", drv)
	if err := sched.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sched.Stop(context.Background()) })
	return &schedBundle{st: st, sched: sched, drv: drv, ctx: ctx}
}

// job creates a group with the target as its only member and a manual job.
func (s *schedBundle) job(t *testing.T, target, handler, params string, timeoutSec int) store.Job {
	t.Helper()
	g, err := s.st.GroupCreate(s.ctx, store.GroupCreateParams{AppName: fmt.Sprintf("fn-%d", time.Now().UnixNano()), Members: []string{target}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := s.st.JobCreate(s.ctx, store.JobCreateParams{JobFields: store.JobFields{
		GroupID: g.ID, Name: "lambda job", ScheduleType: "none", TimeZone: "UTC", MisfirePolicy: kind.MisfireDoNothing,
		Handler: handler, Params: params, RouteStrategy: "first", BlockStrategy: "SERIAL_EXECUTION", TimeoutSec: timeoutSec, ShardCount: 1,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// trigger runs the job once through the scheduler and waits for the run's
// final state.
func (s *schedBundle) trigger(t *testing.T, job store.Job) store.Run {
	t.Helper()
	run, created, err := s.sched.Trigger(s.ctx, scheduler.TriggerParams{JobID: job.ID})
	if err != nil || !created {
		t.Fatalf("Trigger: %v (created %v)", err, created)
	}
	return s.waitFinal(t, run.ID)
}

func (s *schedBundle) waitFinal(t *testing.T, runID int64) store.Run {
	t.Helper()
	deadline := time.Now().Add(runWait)
	for {
		r, err := s.st.RunGet(s.ctx, runID)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range kind.FinalRunStates {
			if r.State == f {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d still %s after %s", runID, r.State, runWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *schedBundle) log(t *testing.T, runID int64) string {
	t.Helper()
	c, err := s.st.RunLogRead(s.ctx, runID, 1)
	if err != nil {
		t.Fatal(err)
	}
	return c.Content
}

func wantRun(t *testing.T, s *schedBundle, r store.Run, state kind.RunState, msgPart string, logParts ...string) {
	t.Helper()
	log := s.log(t, r.ID)
	if r.State != state || !strings.Contains(r.Message, msgPart) {
		t.Fatalf("run %d: state %s (code %d) message %q; want %s with %q; log:\n%s", r.ID, r.State, r.ResultCode, r.Message, state, msgPart, log)
	}
	// The driver's own lines go through a batched log writer, so they can
	// land a moment after the outcome (an Event run's callback is quick):
	// wait up to 10 s for them, as a reader following the log would.
	for _, p := range logParts {
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log, p) && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			log = s.log(t, r.ID)
		}
		if !strings.Contains(log, p) {
			t.Fatalf("run %d: log lacks %q:\n%s", r.ID, p, log)
		}
	}
}

func TestThroughTheScheduler(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *backend) {
		t.Run("sync success puts the log tail in the run log", func(t *testing.T) {
			t.Parallel()
			s := setupScheduler(t, b, nil)
			r := s.trigger(t, s.job(t, b.target("hello", ""), "", `{"name":"billing"}`, 60))
			wantRun(t, s, r, kind.RunSucceeded, `"greeting":"Hello, billing!"`,
				"[ringjob] invoking Lambda function "+b.prefix+"hello in us-east-1 (RequestResponse",
				"START RequestId: ", fmt.Sprintf("hello: job %d run %d shard 0/1 attempt 0\n", r.JobID, r.ID),
				`params: {"name":"billing"}`, "END RequestId: ", "REPORT RequestId: ", "[ringjob] Lambda answered in ")
			// (r.Target is not asserted: when the outcome is recorded before
			// the scheduler's ledger writes the accepted dispatch, the
			// ledger skips that write and the target stays empty.)
			if r.ResultCode != 200 {
				t.Fatalf("run %+v", r)
			}
		})

		t.Run("an alias through an ARN target", func(t *testing.T) {
			t.Parallel()
			s := setupScheduler(t, b, nil)
			arn := "arn:aws:lambda:us-east-1:000000000000:function:" + b.prefix + "hello:live"
			r := s.trigger(t, s.job(t, arn, "", "alias", 60))
			wantRun(t, s, r, kind.RunSucceeded, "Hello, alias!")
		})

		t.Run("a function error fails the run", func(t *testing.T) {
			t.Parallel()
			s := setupScheduler(t, b, nil)
			r := s.trigger(t, s.job(t, b.target("fail", ""), "", "ledger locked", 60))
			wantRun(t, s, r, kind.RunFailed, "function error (Unhandled): errorString: boom: ledger locked", "about to fail")
			if r.ResultCode != 500 {
				t.Fatalf("code %d", r.ResultCode)
			}
		})

		t.Run("a crash fails the run", func(t *testing.T) {
			t.Parallel()
			s := setupScheduler(t, b, nil)
			r := s.trigger(t, s.job(t, b.target("crash", ""), "", "", 60))
			wantRun(t, s, r, kind.RunFailed, "Runtime.ExitError", "crashing")
		})

		t.Run("the job timeout ends the wait", func(t *testing.T) {
			t.Parallel()
			s := setupScheduler(t, b, nil)
			r := s.trigger(t, s.job(t, b.target("long", ""), "", "", 1))
			wantRun(t, s, r, kind.RunTimedOut, "no answer from Lambda within 1s", "[ringjob] timed out")
			if r.ResultCode != 502 {
				t.Fatalf("code %d", r.ResultCode)
			}
		})

		t.Run("the function's own timeout times the run out", func(t *testing.T) {
			t.Parallel()
			s := setupScheduler(t, b, nil)
			r := s.trigger(t, s.job(t, b.target("short", ""), "", "", 60))
			wantRun(t, s, r, kind.RunTimedOut, "Task timed out after", "sleeping")
		})

		t.Run("an unknown function fails the dispatch", func(t *testing.T) {
			t.Parallel()
			s := setupScheduler(t, b, nil)
			r := s.trigger(t, s.job(t, b.target("nope", ""), "", "", 60))
			wantRun(t, s, r, kind.RunFailed, "does not exist")
		})

		t.Run("Event mode completes through the callback", func(t *testing.T) {
			if !b.emulated {
				t.Skip("Event mode needs a callback endpoint the function can reach; run against the emulator only")
			}
			t.Parallel()
			var sink targets.Sink
			var once sync.Once
			ready := make(chan struct{})
			s := setupScheduler(t, b, func(cfg *lambda.Config) {
				// The endpoint completes through the scheduler's sink, known
				// once the scheduler exists; it waits for it.
				cb := newCallbackEndpoint(t, lazySink{get: func() targets.Sink { <-ready; return sink }})
				cfg.CallbackURL, cfg.RunToken = cb.URL, runToken
			})
			sink = s.sched.Sink()
			once.Do(func() { close(ready) })
			r := s.trigger(t, s.job(t, b.target("hello", "?mode=event"), "", "async", 60))
			wantRun(t, s, r, kind.RunSucceeded, `"greeting":"Hello, async!"`,
				"[ringjob] Lambda queued an Event invocation of "+b.prefix+"hello in us-east-1 (status 202",
				fmt.Sprintf("hello: job %d run %d shard 0/1", r.JobID, r.ID), "params: async")
		})
	})
}

// lazySink forwards to a sink known later.
type lazySink struct{ get func() targets.Sink }

func (l lazySink) Complete(ctx context.Context, runID int64, out targets.Outcome) error {
	return l.get().Complete(ctx, runID, out)
}
func (l lazySink) AppendLog(ctx context.Context, runID int64, text string) error {
	return l.get().AppendLog(ctx, runID, text)
}
func (l lazySink) ReadLog(ctx context.Context, runID int64, from int) (targets.LogChunk, error) {
	return l.get().ReadLog(ctx, runID, from)
}

// TestShardedFanOut dispatches one fire of a sharded job as 20 runs (shard
// index 0..19 of 20), as the sharding route will: every index is invoked
// exactly once and the shards together cover the range once.
func TestShardedFanOut(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *backend) {
		const shards = 20
		s := setupScheduler(t, b, nil)
		job := s.job(t, b.target("sharded", ""), "", `{"from":0,"to":1000}`, 60)
		before := b.count("sharded")
		fireMs := time.Now().Truncate(time.Second).UnixMilli()
		ids := make([]int64, shards)
		for i := range shards {
			r, created, err := s.st.RunCreate(s.ctx, store.RunCreateParams{JobID: job.ID, GroupID: job.GroupID, ScheduledMs: fireMs,
				ShardIndex: i, ShardTotal: shards, SchedFire: true, TriggerType: kind.TriggerSchedule, Owner: s.sched.NodeID(),
				Params: job.Params, CreatedMs: fireMs})
			if err != nil || !created {
				t.Fatalf("create shard %d: %v", i, err)
			}
			ids[i] = r.ID
		}
		claimed, err := s.st.RunClaimBatch(s.ctx, store.RunClaimParams{IDs: ids, Owner: s.sched.NodeID(), NowMs: time.Now().UnixMilli(), LateAfterMs: 60_000})
		if err != nil || len(claimed) != shards {
			t.Fatalf("claimed %d of %d: %v", len(claimed), shards, err)
		}
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				disp, err := s.drv.Run(s.ctx, targets.Request{RunID: id, JobID: job.ID, Target: b.target("sharded", ""), Params: job.Params,
					ShardIndex: i, ShardTotal: shards, Timeout: time.Minute, ScheduledAt: time.UnixMilli(fireMs)})
				if err != nil || disp.Done != nil {
					t.Errorf("Run shard %d: %+v %v", i, disp, err)
				}
			}()
		}
		wg.Wait()

		type share struct {
			ShardIndex int   `json:"shard_index"`
			ShardTotal int   `json:"shard_total"`
			From       int64 `json:"from"`
			To         int64 `json:"to"`
			Sum        int64 `json:"sum"`
		}
		var shares []share
		var total int64
		for _, id := range ids {
			r := s.waitFinal(t, id)
			wantRun(t, s, r, kind.RunSucceeded, `"shard_total":20`, fmt.Sprintf("shard %d/20: processing", r.ShardIndex))
			var sh share
			if err := json.Unmarshal([]byte(r.Message), &sh); err != nil {
				t.Fatalf("run %d message %q: %v", id, r.Message, err)
			}
			if sh.ShardIndex != r.ShardIndex {
				t.Fatalf("run %d of shard %d answered for shard %d", id, r.ShardIndex, sh.ShardIndex)
			}
			shares = append(shares, sh)
			total += sh.Sum
		}
		sort.Slice(shares, func(i, j int) bool { return shares[i].ShardIndex < shares[j].ShardIndex })
		next := int64(0)
		for i, sh := range shares {
			if sh.ShardIndex != i || sh.From != next || sh.To < sh.From {
				t.Fatalf("shares %+v: shard %d is not the next slice from %d", shares, i, next)
			}
			next = sh.To
		}
		if next != 1000 || total != 999*1000/2 {
			t.Fatalf("shards cover [0,%d) with sum %d, want [0,1000) and %d", next, total, 999*1000/2)
		}
		if b.emulated {
			if n := b.count("sharded") - before; n != shards {
				t.Fatalf("the function ran %d times, want %d", n, shards)
			}
		}
	})
}

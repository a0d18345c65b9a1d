package scheduler_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/internal/workflow"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// paramsDriver is a target whose outcome is told by the run's params:
// "fail..." fails, "flaky:N" fails the first N dispatches of its job,
// "json:TEXT" succeeds with TEXT as its message,
// "hold" never reports, anything else succeeds with "out(PARAMS)" as its
// message (the node's output).
type paramsDriver struct {
	mu    sync.Mutex
	flaky map[int64]int
	runs  map[int64]int // dispatches per run id
}

var _ targets.Driver = (*paramsDriver)(nil)

func (d *paramsDriver) Run(_ context.Context, req targets.Request) (targets.Dispatch, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.runs[req.RunID]++
	p := req.Params
	switch {
	case p == "hold":
		return targets.Dispatch{Message: "accepted"}, nil
	case strings.HasPrefix(p, "json:"):
		return targets.Dispatch{Done: &targets.Outcome{State: kind.RunSucceeded, Code: 200, Message: strings.TrimPrefix(p, "json:")}}, nil
	case strings.HasPrefix(p, "fail"):
		return targets.Dispatch{Done: &targets.Outcome{State: kind.RunFailed, Code: 500, Message: "failed:" + p}}, nil
	case strings.HasPrefix(p, "flaky:"):
		n, _ := strconv.Atoi(strings.TrimPrefix(p, "flaky:"))
		if d.flaky[req.JobID] < n {
			d.flaky[req.JobID]++
			return targets.Dispatch{Done: &targets.Outcome{State: kind.RunFailed, Code: 500, Message: "flaky"}}, nil
		}
	}
	return targets.Dispatch{Done: &targets.Outcome{State: kind.RunSucceeded, Code: 200, Message: "out(" + p + ")"}}, nil
}
func (d *paramsDriver) Beat(context.Context, string) error               { return nil }
func (d *paramsDriver) IdleBeat(context.Context, string, int64) error    { return nil }
func (d *paramsDriver) Kill(context.Context, string, int64, int64) error { return nil }
func (d *paramsDriver) Log(context.Context, string, int64, int) (targets.LogChunk, error) {
	return targets.LogChunk{}, nil
}

// dispatchesPerRun reports the most dispatches any one run had.
func (d *paramsDriver) maxPerRun() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := 0
	for _, n := range d.runs {
		m = max(m, n)
	}
	return m
}

type wfBundle struct {
	*bundle
	drv   *paramsDriver
	group store.Group
	jobs  map[string]int64
}

func setupWorkflows(t *testing.T, dialect string, replicas int) *wfBundle {
	t.Helper()
	b := setup(t, dialect, noon)
	drv := &paramsDriver{flaky: map[int64]int{}, runs: map[int64]int{}}
	b.drivers = map[string]targets.Driver{"wf": drv}
	g, err := b.st.GroupCreate(context.Background(), store.GroupCreateParams{AppName: "wf", Members: []string{"wf://t"}, NowMs: noon.UnixMilli()})
	require.NoError(t, err)
	for i := 0; i < replicas; i++ {
		b.startNode("n"+strconv.Itoa(i), func(c *scheduler.Config) { c.FollowupInterval = time.Second })
	}
	return &wfBundle{bundle: b, drv: drv, group: g, jobs: map[string]int64{}}
}

// job returns the id of a job of the test group named name (made once).
func (b *wfBundle) job(name string) int64 {
	b.t.Helper()
	if id, ok := b.jobs[name]; ok {
		return id
	}
	j, err := b.st.JobCreate(context.Background(), store.JobCreateParams{JobFields: store.JobFields{GroupID: b.group.ID, Name: name,
		ScheduleType: "none", TimeZone: "UTC", RouteStrategy: "first", ShardCount: 1, Params: "job-params", RetryCount: 3}, NowMs: noon.UnixMilli()})
	require.NoError(b.t, err)
	b.jobs[name] = j.ID
	return j.ID
}

// node is a node of a test definition running job name with params.
func (b *wfBundle) node(name string, params string, rule kind.StartRule) workflow.Node {
	n := workflow.Node{Name: name, JobID: b.job(name), StartRule: rule}
	if params != "" {
		n.Params = &params
	}
	return n
}

func (b *wfBundle) workflow(name string, d workflow.Definition, block kind.Block) store.Workflow {
	b.t.Helper()
	require.NoError(b.t, d.Validate(nil))
	js, err := json.Marshal(d)
	require.NoError(b.t, err)
	w, err := b.st.WorkflowCreate(context.Background(), store.WorkflowFields{GroupID: b.group.ID, Name: name, Definition: string(js),
		ScheduleType: "none", TimeZone: "UTC", MisfirePolicy: kind.MisfireDoNothing, BlockStrategy: block}, false, 0, b.clock.Now().UnixMilli())
	require.NoError(b.t, err)
	return w
}

func (b *wfBundle) trigger(w store.Workflow, input string) store.WorkflowRun {
	b.t.Helper()
	r, created, err := b.st.WorkflowRunCreate(context.Background(), store.WorkflowRunCreateParams{WorkflowID: w.ID, GroupID: w.GroupID,
		TriggerType: kind.TriggerManual, Definition: w.Definition, Input: input, BlockStrategy: w.BlockStrategy, TimeoutSec: w.TimeoutSec, NowMs: b.clock.Now().UnixMilli()})
	require.NoError(b.t, err)
	require.True(b.t, created)
	return r
}

// until steps the clock a second at a time until cond holds (at most 60 s).
func (b *wfBundle) until(what string, cond func() bool) {
	b.t.Helper()
	for i := 0; i < 60; i++ {
		if cond() {
			return
		}
		b.step(len(b.nodes), time.Second)
	}
	require.True(b.t, cond(), "still waiting for %s", what)
}

func (b *wfBundle) wfRun(id int64) store.WorkflowRun {
	b.t.Helper()
	r, err := b.st.WorkflowRunGet(context.Background(), id)
	require.NoError(b.t, err)
	return r
}

func (b *wfBundle) waitFinal(id int64) store.WorkflowRun {
	b.t.Helper()
	b.until("workflow run final", func() bool { return b.wfRun(id).State.Final() })
	return b.wfRun(id)
}

// nodes returns each node's current attempt, and every attempt.
func (b *wfBundle) nodeRuns(id int64) (map[string]store.NodeRun, []store.NodeRun) {
	b.t.Helper()
	rows, err := b.st.NodeRunList(context.Background(), []int64{id})
	require.NoError(b.t, err)
	cur := map[string]store.NodeRun{}
	for _, r := range rows {
		if !r.Superseded {
			cur[r.Node] = r
		}
	}
	return cur, rows
}

func (b *wfBundle) states(id int64) map[string]kind.NodeState {
	cur, _ := b.nodeRuns(id)
	out := map[string]kind.NodeState{}
	for k, v := range cur {
		out[k] = v.State
	}
	return out
}

// workflowRuns lists the runs of a job made for workflow nodes.
func (b *wfBundle) workflowRuns(job string) []store.Run {
	var out []store.Run
	for _, r := range b.runs(b.jobs[job]) {
		if r.TriggerType == kind.TriggerWorkflow {
			out = append(out, r)
		}
	}
	return out
}

func edges(pairs ...string) []workflow.Edge {
	var out []workflow.Edge
	for _, p := range pairs {
		f, t, _ := strings.Cut(p, ">")
		out = append(out, workflow.Edge{From: f, To: t})
	}
	return out
}

func TestWorkflowFanInAndDataPassing(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setupWorkflows(t, dialect, 2) // two replicas: each node still runs once
			w := b.workflow("etl", workflow.Definition{Nodes: []workflow.Node{
				b.node("extract", "day={{ input.day }}", ""),
				b.node("lookup", "", ""),
				b.node("report", "{{ nodes.extract.output }}|{{ nodes.lookup.output }}|{{ input.n }}", ""),
			}, Edges: edges("extract>report", "lookup>report")}, kind.BlockSerial)
			r := b.trigger(w, `{"day":"mon","n":3}`)
			got := b.waitFinal(r.ID)
			require.Equal(t, kind.WorkflowSucceeded, got.State, got.Message)
			cur, all := b.nodeRuns(r.ID)
			require.Len(t, all, 3, "one attempt per node")
			require.Equal(t, "out(day=mon)", cur["extract"].Output)
			require.Equal(t, "out(job-params)", cur["lookup"].Output, "a node without params runs with its job's")
			rep := b.workflowRuns("report")
			require.Len(t, rep, 1)
			require.Equal(t, "out(day=mon)|out(job-params)|3", rep[0].Params, "outputs and input reach the fan-in node's params")
			for _, n := range []string{"extract", "lookup", "report"} {
				require.Len(t, b.workflowRuns(n), 1, "node %s ran once", n)
				require.Equal(t, cur[n].RunID, b.workflowRuns(n)[0].ID)
			}
			require.Equal(t, 1, b.drv.maxPerRun(), "no run was dispatched twice")
			// report started only after both parents ended.
			require.GreaterOrEqual(t, cur["report"].StartedMs, max(cur["extract"].FinishedMs, cur["lookup"].FinishedMs))
		})
	}
}

func TestWorkflowStartRulesAndSkips(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setupWorkflows(t, dialect, 1)
			// load fails. publish (all_succeeded) and its child notify are
			// skipped; cleanup (all_finished) and alert (any_failed) run;
			// either (any_succeeded of load and ok) runs after ok.
			d := workflow.Definition{Nodes: []workflow.Node{
				b.node("load", "fail", ""),
				b.node("ok", "fine", ""),
				b.node("publish", "", kind.StartAllSucceeded),
				b.node("notify", "", ""),
				b.node("cleanup", "", kind.StartAllFinished),
				b.node("alert", "{{ nodes.load.output }}", kind.StartAnyFailed),
				b.node("either", "", kind.StartAnySucceeded),
				b.node("never", "", kind.StartAnyFailed),
			}, Edges: edges("load>publish", "publish>notify", "load>cleanup", "publish>cleanup", "load>alert", "load>either", "ok>either", "ok>never")}
			w := b.workflow("rules", d, kind.BlockSerial)
			r := b.trigger(w, "")
			got := b.waitFinal(r.ID)
			require.Equal(t, map[string]kind.NodeState{
				"load": kind.NodeFailed, "ok": kind.NodeSucceeded, "publish": kind.NodeSkipped, "notify": kind.NodeSkipped,
				"cleanup": kind.NodeSucceeded, "alert": kind.NodeSucceeded, "either": kind.NodeSucceeded, "never": kind.NodeSkipped,
			}, b.states(r.ID))
			require.Equal(t, kind.WorkflowSucceeded, got.State, "load's failure was taken by its failure branches: %s", got.Message)
			require.Empty(t, b.workflowRuns("publish"))
			require.Empty(t, b.workflowRuns("notify"))
			require.Empty(t, b.workflowRuns("never"))
			cur, _ := b.nodeRuns(r.ID)
			require.Contains(t, cur["notify"].Message, "publish skipped")
			b.step(1, 3*time.Second) // the retries service has had its looks
			require.Len(t, b.runs(b.jobs["load"]), 1, "the job's own retries (3) do not apply inside a workflow")

			// Without a failure branch, the failure fails the run.
			w2 := b.workflow("plain", workflow.Definition{Nodes: []workflow.Node{b.node("load", "fail", ""), b.node("publish", "", "")},
				Edges: edges("load>publish")}, kind.BlockSerial)
			r2 := b.trigger(w2, "")
			got = b.waitFinal(r2.ID)
			require.Equal(t, kind.WorkflowFailed, got.State)
			require.Contains(t, got.Message, "load")
		})
	}
}

func TestWorkflowNodeRetriesAndUserRetry(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setupWorkflows(t, dialect, 1)
			flaky := b.node("flaky", "flaky:2", "")
			flaky.Retries = 2
			w := b.workflow("retry", workflow.Definition{Nodes: []workflow.Node{flaky, b.node("after", "{{ nodes.flaky.output }}", "")},
				Edges: edges("flaky>after")}, kind.BlockSerial)
			r := b.trigger(w, "")
			got := b.waitFinal(r.ID)
			require.Equal(t, kind.WorkflowSucceeded, got.State, got.Message)
			_, all := b.nodeRuns(r.ID)
			var tries []string
			for _, n := range all {
				if n.Node == "flaky" {
					tries = append(tries, strconv.Itoa(n.Attempt)+":"+string(n.State))
				}
			}
			require.Equal(t, []string{"1:failed", "2:failed", "3:succeeded"}, tries)
			require.Len(t, b.workflowRuns("flaky"), 3, "one run per attempt")

			// A node that fails for good; a user retries it, and what
			// depends on it runs again.
			b.drv.mu.Lock()
			b.drv.flaky = map[int64]int{}
			b.drv.mu.Unlock()
			once := b.node("once", "flaky:1", "")
			w2 := b.workflow("user-retry", workflow.Definition{Nodes: []workflow.Node{once, b.node("child", "", ""), b.node("grand", "", "")},
				Edges: edges("once>child", "child>grand")}, kind.BlockSerial)
			r2 := b.trigger(w2, "")
			require.Equal(t, kind.WorkflowFailed, b.waitFinal(r2.ID).State)
			require.Equal(t, kind.NodeSkipped, b.states(r2.ID)["grand"])
			d2 := w2.Definition
			var def workflow.Definition
			require.NoError(t, json.Unmarshal([]byte(d2), &def))
			desc := def.Graph().Descendants("once")
			var names []string
			for n := range desc {
				names = append(names, n)
			}
			require.NoError(t, b.st.WorkflowRunRetryNode(context.Background(), r2.ID, "once", names, false, "retried by a test", b.clock.Now().UnixMilli()))
			require.ErrorIs(t, b.st.WorkflowRunRetryNode(context.Background(), r2.ID, "child", nil, false, "", 0), store.ErrNodeNotRetryable, "only a failed node may be retried")
			got = b.waitFinal(r2.ID)
			require.Equal(t, kind.WorkflowSucceeded, got.State, got.Message)
			require.Equal(t, map[string]kind.NodeState{"once": kind.NodeSucceeded, "child": kind.NodeSucceeded, "grand": kind.NodeSucceeded}, b.states(r2.ID))
			require.Len(t, b.workflowRuns("once"), 2)
		})
	}
}

func TestWorkflowMarkNodeSucceeded(t *testing.T) {
	t.Parallel()
	b := setupWorkflows(t, "sqlite", 1)
	w := b.workflow("mark", workflow.Definition{Nodes: []workflow.Node{b.node("bad", "fail", ""), b.node("next", "", "")},
		Edges: edges("bad>next")}, kind.BlockSerial)
	r := b.trigger(w, "")
	require.Equal(t, kind.WorkflowFailed, b.waitFinal(r.ID).State)
	require.NoError(t, b.st.WorkflowRunRetryNode(context.Background(), r.ID, "bad", []string{"next"}, true, "marked succeeded by a test", b.clock.Now().UnixMilli()))
	got := b.waitFinal(r.ID)
	require.Equal(t, kind.WorkflowSucceeded, got.State, got.Message)
	require.Equal(t, map[string]kind.NodeState{"bad": kind.NodeSucceeded, "next": kind.NodeSucceeded}, b.states(r.ID))
	require.Len(t, b.workflowRuns("bad"), 1, "marking does not run the node again")
}

func TestWorkflowCancelAndTimeout(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setupWorkflows(t, dialect, 1)
			w := b.workflow("slow", workflow.Definition{Nodes: []workflow.Node{b.node("long", "hold", ""), b.node("later", "", "")},
				Edges: edges("long>later")}, kind.BlockSerial)
			r := b.trigger(w, "")
			b.until("long running", func() bool { return b.states(r.ID)["long"] == kind.NodeRunning })
			ok, err := b.st.WorkflowRunRequestCancel(context.Background(), r.ID, "cancelled by a test")
			require.NoError(t, err)
			require.True(t, ok)
			got := b.waitFinal(r.ID)
			require.Equal(t, kind.WorkflowCancelled, got.State)
			cur, _ := b.nodeRuns(r.ID)
			require.Equal(t, kind.NodeCancelled, cur["long"].State)
			_, started := cur["later"]
			require.False(t, started, "nothing starts after a cancel")
			run, err := b.st.RunGet(context.Background(), cur["long"].RunID)
			require.NoError(t, err)
			require.True(t, run.KillRequested, "the running node's run was asked to stop")

			// A node timeout fails the node (and asks its run to stop); a
			// workflow timeout ends the run timed out.
			long := b.node("long2", "hold", "")
			long.TimeoutSec = 3
			w2 := b.workflow("node-timeout", workflow.Definition{Nodes: []workflow.Node{long}}, kind.BlockSerial)
			r2 := b.trigger(w2, "")
			got = b.waitFinal(r2.ID)
			require.Equal(t, kind.WorkflowFailed, got.State)
			cur, _ = b.nodeRuns(r2.ID)
			require.Contains(t, cur["long2"].Message, "timed out after 3s")

			js, _ := json.Marshal(workflow.Definition{Nodes: []workflow.Node{b.node("long3", "hold", "")}})
			w3, err := b.st.WorkflowCreate(context.Background(), store.WorkflowFields{GroupID: b.group.ID, Name: "wf-timeout", Definition: string(js),
				TimeoutSec: 4, ScheduleType: "none", TimeZone: "UTC", MisfirePolicy: kind.MisfireDoNothing, BlockStrategy: kind.BlockSerial}, false, 0, b.clock.Now().UnixMilli())
			require.NoError(t, err)
			r3 := b.trigger(w3, "")
			got = b.waitFinal(r3.ID)
			require.Equal(t, kind.WorkflowTimedOut, got.State)
			require.Equal(t, kind.NodeCancelled, b.states(r3.ID)["long3"])
		})
	}
}

func TestWorkflowBlockStrategies(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setupWorkflows(t, dialect, 1)
			def := func(name string) workflow.Definition {
				return workflow.Definition{Nodes: []workflow.Node{b.node(name, "hold", "")}}
			}
			serial := b.workflow("serial", def("s"), kind.BlockSerial)
			discard := b.workflow("discard", def("d"), kind.BlockDiscardLater)
			cover := b.workflow("cover", def("c"), kind.BlockCoverEarly)
			s1, d1, c1 := b.trigger(serial, ""), b.trigger(discard, ""), b.trigger(cover, "")
			b.until("first runs running", func() bool {
				return b.wfRun(s1.ID).State == kind.WorkflowRunning && b.wfRun(d1.ID).State == kind.WorkflowRunning && b.wfRun(c1.ID).State == kind.WorkflowRunning
			})
			s2, d2, c2 := b.trigger(serial, ""), b.trigger(discard, ""), b.trigger(cover, "")
			b.step(1, 3*time.Second)
			require.Equal(t, kind.WorkflowQueued, b.wfRun(s2.ID).State, "serial: waits for the run before it")
			require.Equal(t, kind.WorkflowCancelled, b.wfRun(d2.ID).State, "discard: the later run is dropped")
			require.Contains(t, b.wfRun(d2.ID).Message, "discarded")
			require.Equal(t, kind.WorkflowCancelled, b.wfRun(c1.ID).State, "cover: the earlier run is cancelled")
			require.Contains(t, b.wfRun(c1.ID).Message, "covered by run")
			require.Equal(t, kind.WorkflowRunning, b.wfRun(c2.ID).State)
			_, err := b.st.WorkflowRunRequestCancel(context.Background(), s1.ID, "done with it")
			require.NoError(t, err)
			b.until("serial's second run running", func() bool { return b.wfRun(s2.ID).State == kind.WorkflowRunning })
		})
	}
}

func TestWorkflowSchedule(t *testing.T) {
	t.Parallel()
	b := setupWorkflows(t, "mysql", 2)
	js, _ := json.Marshal(workflow.Definition{Nodes: []workflow.Node{b.node("tick", "", "")}})
	w, err := b.st.WorkflowCreate(context.Background(), store.WorkflowFields{GroupID: b.group.ID, Name: "every-5s", Definition: string(js),
		ScheduleType: "fixed_rate", ScheduleConf: "5", TimeZone: "UTC", MisfirePolicy: kind.MisfireDoNothing, BlockStrategy: kind.BlockSerial},
		true, noon.Add(5*time.Second).UnixMilli(), noon.UnixMilli())
	require.NoError(t, err)
	b.step(2, 21*time.Second)
	runs, err := b.st.WorkflowRunList(context.Background(), store.WorkflowRunListParams{WorkflowID: w.ID, Limit: 100})
	require.NoError(t, err)
	require.Len(t, runs, 4, "fires at :05, :10, :15, :20, once each with two replicas")
	for _, r := range runs {
		require.Equal(t, kind.TriggerSchedule, r.TriggerType)
	}
	// A fire missed by more than the misfire threshold (do_nothing) makes
	// no run; the schedule goes on from now.
	wf, err := b.st.WorkflowGet(context.Background(), w.ID)
	require.NoError(t, err)
	_, err = b.st.WorkflowUpdate(context.Background(), w.ID, 0, wf.WorkflowFields, true, noon.Add(-time.Minute).UnixMilli(), b.clock.Now().UnixMilli())
	require.NoError(t, err)
	b.step(2, time.Second)
	runs2, err := b.st.WorkflowRunList(context.Background(), store.WorkflowRunListParams{WorkflowID: w.ID, Limit: 100})
	require.NoError(t, err)
	require.Len(t, runs2, 4, "the misfired fire made no run")
	wf, err = b.st.WorkflowGet(context.Background(), w.ID)
	require.NoError(t, err)
	require.Greater(t, wf.NextFireMs, b.clock.Now().UnixMilli()-1000)
}

// A replica that died after triggering a node's run but before recording
// it leaves the attempt pending: the next look finds the same run through
// its idempotency key, so the attempt still has one run.
func TestWorkflowNodeStartIsIdempotent(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setupWorkflows(t, dialect, 0)
			w := b.workflow("crash", workflow.Definition{Nodes: []workflow.Node{b.node("a", "x", "")}}, kind.BlockSerial)
			r := b.trigger(w, "")
			ctx := context.Background()
			ok, err := b.st.WorkflowRunStart(ctx, r.ID, noon.UnixMilli())
			require.NoError(t, err)
			require.True(t, ok)
			ok, err = b.st.NodeRunInsert(ctx, store.NodeRun{WorkflowRunID: r.ID, Node: "a", Attempt: 1, State: kind.NodePending, CreatedMs: noon.UnixMilli()})
			require.NoError(t, err)
			require.True(t, ok)
			ok, err = b.st.NodeRunInsert(ctx, store.NodeRun{WorkflowRunID: r.ID, Node: "a", Attempt: 1, State: kind.NodePending, CreatedMs: noon.UnixMilli()})
			require.NoError(t, err)
			require.False(t, ok, "an attempt exists once")
			// The dead replica's trigger, made before it could record it.
			n := b.startNode("late", func(c *scheduler.Config) { c.FollowupInterval = time.Hour })
			// (This replica's own engine may have made it first: either way
			// there is one.)
			first, _, err := n.s.Trigger(ctx, scheduler.TriggerParams{JobID: b.jobs["a"], IdempotencyKey: scheduler.NodeRunKey(r.ID, "a", 1), TriggerType: kind.TriggerWorkflow})
			require.NoError(t, err)
			b.startNode("n0", func(c *scheduler.Config) { c.FollowupInterval = time.Second })
			got := b.waitFinal(r.ID)
			require.Equal(t, kind.WorkflowSucceeded, got.State, got.Message)
			cur, _ := b.nodeRuns(r.ID)
			require.Equal(t, first.ID, cur["a"].RunID, "the node recorded the run made before")
			require.Len(t, b.workflowRuns("a"), 1)
		})
	}
}

func TestWorkflowShardsAndListFanOut(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setupWorkflows(t, dialect, 2)
			sh := b.node("sharded", "s", "")
			sh.Shards = 3
			each := b.node("each", "d={{ item }}", "")
			each.ForEach = "{{ nodes.list.output }}"
			days := b.node("days", "", "")
			days.ForEach = "{{ input.days }}"
			w := b.workflow("fan", workflow.Definition{Nodes: []workflow.Node{
				sh,
				b.node("list", `json:["mon","tue","wed"]`, ""),
				each,
				days,
				b.node("join", "{{ nodes.sharded.output }}|{{ nodes.each.output }}|{{ nodes.days.output }}", ""),
			}, Edges: edges("sharded>join", "list>each", "each>join", "days>join")}, kind.BlockSerial)
			r := b.trigger(w, `{"days":["sat","sun"]}`)
			got := b.waitFinal(r.ID)
			require.Equal(t, kind.WorkflowSucceeded, got.State, got.Message)
			cur, _ := b.nodeRuns(r.ID)

			shRuns := b.workflowRuns("sharded")
			require.Len(t, shRuns, 3, "one run per shard, with two replicas")
			seen := map[int]bool{}
			for _, run := range shRuns {
				require.Equal(t, 3, run.ShardTotal)
				seen[run.ShardIndex] = true
			}
			require.Len(t, seen, 3)
			require.Len(t, cur["sharded"].RunIDs, 3)
			require.Equal(t, `["out(s)","out(s)","out(s)"]`, cur["sharded"].Output)

			var params []string
			for _, run := range b.workflowRuns("each") {
				params = append(params, run.Params)
			}
			require.ElementsMatch(t, []string{"d=mon", "d=tue", "d=wed"}, params, "one run per item of the parent's output")
			require.Equal(t, `["out(d=mon)","out(d=tue)","out(d=wed)"]`, cur["each"].Output, "outputs in item order")
			require.Equal(t, `["out(sat)","out(sun)"]`, cur["days"].Output, "an item is the run's params when the node has none")
			join := b.workflowRuns("join")
			require.Len(t, join, 1)
			require.Equal(t, `["out(s)","out(s)","out(s)"]|["out(d=mon)","out(d=tue)","out(d=wed)"]|["out(sat)","out(sun)"]`, join[0].Params)
			require.GreaterOrEqual(t, cur["join"].StartedMs, cur["each"].FinishedMs, "the fan-in waited for every item")
			require.Equal(t, 1, b.drv.maxPerRun())

			// One item failing fails the node; an empty list succeeds at once.
			bad := b.node("bad", "{{ item }}", "")
			bad.ForEach = "{{ input.items }}"
			none := b.node("none", "", "")
			none.ForEach = "{{ input.empty }}"
			w2 := b.workflow("fan-fail", workflow.Definition{Nodes: []workflow.Node{bad, none, b.node("after", "", "")},
				Edges: edges("bad>after")}, kind.BlockSerial)
			r2 := b.trigger(w2, `{"items":["ok","fail-this"],"empty":[]}`)
			got = b.waitFinal(r2.ID)
			require.Equal(t, kind.WorkflowFailed, got.State)
			cur, _ = b.nodeRuns(r2.ID)
			require.Contains(t, cur["bad"].Message, "1 of 2 runs did not succeed")
			require.Equal(t, kind.NodeSkipped, cur["after"].State)
			require.Equal(t, kind.NodeSucceeded, cur["none"].State)
			require.Equal(t, "[]", cur["none"].Output)
			require.Empty(t, b.workflowRuns("none"))
		})
	}
}

// A workflow's active window, as a job's: no scheduled start before it
// opens (even from a fire time computed before the window was set) nor
// after it closes, and the schedule ends with it.
func TestWorkflowActiveWindow(t *testing.T) {
	t.Parallel()
	b := setupWorkflows(t, "sqlite", 1)
	js, _ := json.Marshal(workflow.Definition{Nodes: []workflow.Node{b.node("tick", "", "")}})
	w, err := b.st.WorkflowCreate(context.Background(), store.WorkflowFields{GroupID: b.group.ID, Name: "windowed", Definition: string(js),
		ScheduleType: "cron", ScheduleConf: "*/5 * * * * ?", TimeZone: "UTC", MisfirePolicy: kind.MisfireDoNothing, BlockStrategy: kind.BlockSerial,
		ActiveFromMs: noon.Add(10 * time.Second).UnixMilli(), ActiveUntilMs: noon.Add(20 * time.Second).UnixMilli()},
		true, noon.Add(5*time.Second).UnixMilli(), noon.UnixMilli())
	require.NoError(t, err)
	b.step(1, 41*time.Second)
	runs, err := b.st.WorkflowRunList(context.Background(), store.WorkflowRunListParams{WorkflowID: w.ID, Limit: 100})
	require.NoError(t, err)
	var at []string
	for _, r := range runs {
		at = append(at, time.UnixMilli(r.CreatedMs).UTC().Format("15:04:05"))
	}
	require.Len(t, runs, 3, "starts at :10, :15 and :20 only, got %v", at)
	wf, err := b.st.WorkflowGet(context.Background(), w.ID)
	require.NoError(t, err)
	require.Zero(t, wf.NextFireMs, "no start after the window: the schedule ended")
}

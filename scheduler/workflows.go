package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/internal/workflow"
	"github.com/ringjob/ringjob/schedule"
	"github.com/ringjob/ringjob/store"
)

// workflows is the workflow engine. Like every follow-up service it finds
// its work in the database at each look and acts through compare-and-sets
// and unique keys, so any replica may do any step and a replica dying at
// any instant leaves the step to the next look:
//
//   - a due workflow schedule makes one queued run per fire (its
//     idempotency key is the fire time) in the transaction that moves the
//     workflow's next fire;
//   - a queued run starts when its block strategy lets it (serial waits
//     for the runs before it, discard cancels it, cover cancels those);
//   - a node whose start rule is met gets a pending attempt row (unique per
//     workflow run, node and attempt), then a run of its job triggered with
//     an idempotency key derived from that row, so the run exists once per
//     attempt; the row records it (pending -> running);
//   - a node whose run ended succeeds (its output kept) or fails, and a
//     failure with retries left adds the next attempt in the same
//     transaction;
//   - a node whose start rule can no longer be met is skipped;
//   - a run whose nodes have all ended is finished; a cancelled or timed
//     out one has its running nodes' runs asked to stop.
type workflows struct {
	lifecycle.Loop
	*followupDeps
	log   *logrus.Entry
	warns *warnEvery
	// wake asks for a look before the interval is over (capacity 1): an
	// outcome this replica recorded may end a node, and its children should
	// not wait for the next interval. active says whether the last look
	// found workflow runs going on (without any, outcomes wake nothing).
	wake   chan struct{}
	active atomic.Bool
}

// workflowScan is how many active workflow runs one look takes;
// workflowParallel how many of them it advances at once (each is its own
// rows, and every change is a compare-and-set or a unique insert, as when
// two replicas look at the same run).
const (
	workflowScan     = 500
	workflowParallel = 8
)

func (w *workflows) Start(ctx context.Context) {
	w.Loop.Start(ctx, func(ctx context.Context) {
		for {
			if err := w.tick(ctx); err != nil && ctx.Err() == nil {
				w.log.WithError(err).Warn("advance workflow runs")
			}
			t := w.clock.NewTimer(w.cfg.FollowupInterval)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-w.wake:
				t.Stop()
			case <-t.Chan():
			}
		}
	})
}

// settled hears the runs whose outcome this replica recorded: while
// workflow runs go on, the engine looks at once.
func (w *workflows) settled([]int64) {
	if !w.active.Load() {
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *workflows) Stop() { w.Loop.Stop() }

func (w *workflows) tick(ctx context.Context) error {
	if err := w.fireDue(ctx); err != nil {
		w.warns.note("workflow_schedule_failed", logrus.Fields{"error": err.Error()}, "fire due workflow schedules; trying again at the next look")
	}
	runs, err := w.st.WorkflowRunListActive(ctx, workflowScan)
	if err != nil {
		return err
	}
	w.active.Store(len(runs) > 0)
	running := map[int64][]int64{} // workflow -> its running runs
	for _, r := range runs {
		if r.State == kind.WorkflowRunning && !r.CancelRequested {
			running[r.WorkflowID] = append(running[r.WorkflowID], r.ID)
		}
	}
	// Admission in order (the block strategies count the runs before);
	// then the running ones advance, workflowParallel at a time.
	var advance []store.WorkflowRun
	for _, r := range runs {
		if r.State == kind.WorkflowQueued {
			started, err := w.admit(ctx, r, running[r.WorkflowID])
			if err != nil {
				if ctx.Err() != nil {
					return err
				}
				w.warns.note("workflow_admit_failed", logrus.Fields{"workflow_run_id": r.ID, "error": err.Error()}, "start a queued workflow run; trying again at the next look")
				continue
			}
			if !started {
				continue
			}
			running[r.WorkflowID] = append(running[r.WorkflowID], r.ID)
			r.State, r.StartedMs = kind.WorkflowRunning, w.clock.Now().UnixMilli()
		}
		advance = append(advance, r)
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, workflowParallel)
	for _, r := range advance {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := w.advance(ctx, r); err != nil && ctx.Err() == nil {
				w.warns.note("workflow_advance_failed", logrus.Fields{"workflow_run_id": r.ID, "error": err.Error()}, "advance a workflow run; trying again at the next look")
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// admit starts a queued run as its block strategy says, given the
// workflow's runs running now. It reports whether the run is running.
func (w *workflows) admit(ctx context.Context, r store.WorkflowRun, others []int64) (bool, error) {
	now := w.clock.Now().UnixMilli()
	if r.CancelRequested {
		_, err := w.st.WorkflowRunFinish(ctx, r.ID, kind.WorkflowCancelled, r.Message, now)
		return false, err
	}
	if len(others) > 0 {
		switch r.BlockStrategy {
		case kind.BlockDiscardLater:
			_, err := w.st.WorkflowRunFinish(ctx, r.ID, kind.WorkflowCancelled, fmt.Sprintf("discarded: run %d of the workflow was still running (block strategy %s)", others[0], r.BlockStrategy), now)
			return false, err
		case kind.BlockCoverEarly:
			for _, o := range others {
				if _, err := w.st.WorkflowRunRequestCancel(ctx, o, fmt.Sprintf("covered by run %d (block strategy %s)", r.ID, r.BlockStrategy)); err != nil {
					return false, err
				}
			}
		default:
			return false, nil // serial: waits for the runs before it
		}
	}
	return w.st.WorkflowRunStart(ctx, r.ID, now)
}

// advance takes a running workflow run as far as it can go now: a few
// steps, each on the node rows as they are after the one before.
func (w *workflows) advance(ctx context.Context, r store.WorkflowRun) error {
	var def workflow.Definition
	if err := json.Unmarshal([]byte(r.Definition), &def); err != nil {
		_, ferr := w.st.WorkflowRunFinish(ctx, r.ID, kind.WorkflowFailed, "its definition cannot be read: "+err.Error(), w.clock.Now().UnixMilli())
		return errors.Join(err, ferr)
	}
	input, err := workflow.ParseInput(r.Input)
	if err != nil {
		_, ferr := w.st.WorkflowRunFinish(ctx, r.ID, kind.WorkflowFailed, err.Error(), w.clock.Now().UnixMilli())
		return errors.Join(err, ferr)
	}
	wr := &wfRun{run: r, def: def, g: def.Graph(), input: input}
	for i := 0; i < 4; i++ {
		rows, err := w.st.NodeRunList(ctx, []int64{r.ID})
		if err != nil {
			return err
		}
		wr.load(rows)
		changed, err := w.step(ctx, wr)
		if err != nil || !changed {
			return err
		}
	}
	return nil
}

// wfRun is one workflow run as one look sees it.
type wfRun struct {
	run   store.WorkflowRun
	def   workflow.Definition
	g     workflow.Graph
	input map[string]json.RawMessage
	// cur is each node's current attempt (the last one not superseded);
	// maxAttempt counts the superseded ones too.
	cur        map[string]store.NodeRun
	maxAttempt map[string]int
}

func (wr *wfRun) load(rows []store.NodeRun) {
	wr.cur, wr.maxAttempt = map[string]store.NodeRun{}, map[string]int{}
	for _, n := range rows {
		if n.Attempt > wr.maxAttempt[n.Node] {
			wr.maxAttempt[n.Node] = n.Attempt
		}
		if !n.Superseded {
			wr.cur[n.Node] = n // rows come by attempt: the last wins
		}
	}
}

// step makes one round of changes and reports whether it made any.
func (w *workflows) step(ctx context.Context, wr *wfRun) (bool, error) {
	now := w.clock.Now()
	r := wr.run
	if r.CancelRequested {
		return true, w.stop(ctx, wr, kind.WorkflowCancelled, r.Message)
	}
	if r.TimeoutSec > 0 && now.UnixMilli() >= r.StartedMs+int64(r.TimeoutSec)*1000 {
		return true, w.stop(ctx, wr, kind.WorkflowTimedOut, fmt.Sprintf("the workflow run's timeout of %ds passed", r.TimeoutSec))
	}
	changed := false
	// Nodes running: their runs' outcomes, and node timeouts.
	var ids []int64
	for _, n := range wr.cur {
		if n.State == kind.NodeRunning {
			ids = append(ids, nodeRuns(n)...)
		}
	}
	if len(ids) > 0 {
		runs, err := w.st.RunGetMany(ctx, ids)
		if err != nil {
			return false, err
		}
		byID := make(map[int64]store.Run, len(runs))
		for _, run := range runs {
			byID[run.ID] = run
		}
		for _, name := range wr.g.Order {
			n, ok := wr.cur[name]
			if !ok || n.State != kind.NodeRunning {
				continue
			}
			did, err := w.follow(ctx, wr, n, byID, now)
			if err != nil {
				return changed, err
			}
			changed = changed || did
		}
	}
	// Nodes pending: their runs.
	for _, name := range wr.g.Order {
		n, ok := wr.cur[name]
		if !ok || n.State != kind.NodePending {
			continue
		}
		did, err := w.startNode(ctx, wr, n, now)
		if err != nil {
			return changed, err
		}
		changed = changed || did
	}
	if changed {
		return true, nil // decide the start rules on the rows as they are now
	}
	states := make(map[string]kind.NodeState, len(wr.cur))
	for name, n := range wr.cur {
		states[name] = n.State
	}
	plan := workflow.Evaluate(wr.g, states)
	for _, name := range plan.Start {
		if _, err := w.st.NodeRunInsert(ctx, store.NodeRun{WorkflowRunID: r.ID, Node: name, Attempt: wr.maxAttempt[name] + 1, State: kind.NodePending, CreatedMs: now.UnixMilli()}); err != nil {
			return changed, err
		}
		changed = true
	}
	for name, why := range plan.Skip {
		if _, err := w.st.NodeRunInsert(ctx, store.NodeRun{WorkflowRunID: r.ID, Node: name, Attempt: wr.maxAttempt[name] + 1, State: kind.NodeSkipped,
			Message: why, CreatedMs: now.UnixMilli(), FinishedMs: now.UnixMilli()}); err != nil {
			return changed, err
		}
		changed = true
	}
	if plan.Done && !changed {
		ok, err := w.st.WorkflowRunFinish(ctx, r.ID, plan.Outcome, plan.Message, now.UnixMilli())
		if err != nil {
			return false, err
		}
		if ok {
			w.ended(r, plan.Outcome)
		}
		return false, nil
	}
	return changed, nil
}

// nodeRuns are the runs of a node's attempt.
func nodeRuns(n store.NodeRun) []int64 {
	if len(n.RunIDs) > 0 {
		return n.RunIDs
	}
	if n.RunID > 0 {
		return []int64{n.RunID}
	}
	return nil
}

// follow moves a running node on when its runs have ended (all of them,
// for a node that fans out) or its timeout has passed.
func (w *workflows) follow(ctx context.Context, wr *wfRun, n store.NodeRun, runs map[int64]store.Run, now time.Time) (bool, error) {
	node := wr.g.Nodes[n.Node]
	ids := nodeRuns(n)
	var ended int64
	var failed []string
	outputs := make([]string, 0, len(ids))
	for _, id := range ids {
		run, ok := runs[id]
		switch {
		case !ok:
			return w.fail(ctx, wr, n, fmt.Sprintf("its run %d is gone (purged or deleted)", id), now)
		case !run.State.Final():
			if node.TimeoutSec > 0 && now.UnixMilli() >= n.StartedMs+int64(node.TimeoutSec)*1000 {
				for _, id := range ids {
					if _, err := w.st.RunRequestKill(ctx, id); err != nil {
						return false, err
					}
				}
				return w.fail(ctx, wr, n, fmt.Sprintf("timed out after %ds; its runs were asked to stop", node.TimeoutSec), now)
			}
			return false, nil
		case run.State != kind.RunSucceeded:
			failed = append(failed, fmt.Sprintf("run %d %s: %s", run.ID, run.State, run.Message))
		}
		outputs = append(outputs, run.Message)
		// The node ends when its last run did: its children's start delay
		// is counted from there.
		ended = max(ended, runEnd(run, now))
	}
	if len(failed) > 0 {
		msg := failed[0]
		if len(ids) > 1 {
			msg = fmt.Sprintf("%d of %d runs did not succeed; %s", len(failed), len(ids), msg)
		}
		return w.fail(ctx, wr, n, msg, time.UnixMilli(ended))
	}
	out := ""
	if node.FanOut() {
		js, err := json.Marshal(outputs) // the runs' outputs, in shard or item order
		if err != nil {
			return false, err
		}
		out = string(js)
	} else if len(outputs) == 1 {
		out = outputs[0]
	}
	return w.st.NodeRunFinish(ctx, n.ID, kind.NodeRunning, kind.NodeSucceeded, workflow.Output(out), fmt.Sprintf("%d run(s) succeeded", len(ids)), ended)
}

// runEnd is when a run ended (now when it did not say).
func runEnd(r store.Run, now time.Time) int64 {
	if r.FinishedMs > 0 {
		return r.FinishedMs
	}
	return now.UnixMilli()
}

// fail ends a node's attempt as failed, adding the next attempt when the
// node has retries left in its current series of tries.
func (w *workflows) fail(ctx context.Context, wr *wfRun, n store.NodeRun, msg string, now time.Time) (bool, error) {
	node := wr.g.Nodes[n.Node]
	if n.Try <= node.Retries {
		return w.st.NodeRunFailAndRetry(ctx, n, n.State, fmt.Sprintf("%s; retrying (try %d of %d)", msg, n.Try+1, node.Retries+1), now.UnixMilli())
	}
	return w.st.NodeRunFinish(ctx, n.ID, n.State, kind.NodeFailed, "", msg, now.UnixMilli())
}

// startNode triggers the runs of a pending attempt (idempotent: each key
// is the attempt's and the run's index) and records them.
func (w *workflows) startNode(ctx context.Context, wr *wfRun, n store.NodeRun, now time.Time) (bool, error) {
	node := wr.g.Nodes[n.Node]
	vals := workflow.Values{Input: wr.input, Outputs: map[string]string{}}
	for name, c := range wr.cur {
		if c.State == kind.NodeSucceeded {
			vals.Outputs[name] = c.Output
		}
	}
	failNode := func(msg string) (bool, error) {
		return w.st.NodeRunFinish(ctx, n.ID, kind.NodePending, kind.NodeFailed, "", msg, now.UnixMilli())
	}
	// One trigger per run of the attempt: its params and shard.
	type one struct {
		params       *string
		shard, total int
	}
	var todo []one
	// A node without params runs with its job's, or with its item.
	tmpl := node.Params
	if tmpl == nil && node.ForEach != "" {
		item := "{{ item }}"
		tmpl = &item
	}
	render := func(item json.RawMessage) (*string, error) {
		if tmpl == nil {
			return nil, nil
		}
		v := vals
		v.Item = item
		s, err := workflow.Render(*tmpl, v)
		return &s, err
	}
	switch {
	case node.ForEach != "":
		items, err := workflow.Items(node.ForEach, vals)
		if err != nil {
			return failNode(err.Error())
		}
		if len(items) == 0 {
			return w.st.NodeRunFinish(ctx, n.ID, kind.NodePending, kind.NodeSucceeded, "[]", "for_each gave no items: nothing to run", now.UnixMilli())
		}
		for _, it := range items {
			p, err := render(it)
			if err != nil {
				return failNode("render params: " + err.Error())
			}
			todo = append(todo, one{params: p, total: 1})
		}
	default:
		p, err := render(nil)
		if err != nil {
			return failNode("render params: " + err.Error())
		}
		total := max(node.Shards, 1)
		for i := 0; i < total; i++ {
			todo = append(todo, one{params: p, shard: i, total: total})
		}
	}
	ids := make([]int64, 0, len(todo))
	for i, o := range todo {
		key := NodeRunKey(wr.run.ID, n.Node, n.Attempt)
		if node.FanOut() {
			key += ":" + strconv.Itoa(i)
		}
		shard := o.shard
		run, _, err := w.trigger(ctx, TriggerParams{JobID: node.JobID, Params: o.params, TriggerType: kind.TriggerWorkflow,
			IdempotencyKey: key, ShardTotal: o.total, OnlyShard: &shard})
		if errors.Is(err, store.ErrNotFound) {
			return failNode(fmt.Sprintf("job %d is gone", node.JobID))
		}
		if err != nil {
			return false, fmt.Errorf("start node %s of workflow run %d: %w", n.Node, wr.run.ID, err)
		}
		ids = append(ids, run.ID)
	}
	ok, err := w.st.NodeRunStarted(ctx, n.ID, ids, now.UnixMilli())
	if err != nil {
		return false, err
	}
	if !ok {
		// Another replica recorded them first (the same runs), or the
		// workflow run was stopped meanwhile and the attempt cancelled:
		// its runs must not go on alone.
		if rows, err := w.st.NodeRunList(ctx, []int64{wr.run.ID}); err == nil {
			for _, r := range rows {
				if r.ID == n.ID && r.State == kind.NodeCancelled {
					for _, id := range ids {
						if _, err := w.st.RunRequestKill(ctx, id); err != nil {
							return false, err
						}
					}
				}
			}
		}
		return false, nil
	}
	// The delay from the last parent's outcome (a root: the run's start).
	from := wr.run.StartedMs
	for _, p := range wr.g.Parents[n.Node] {
		from = max(from, wr.cur[p].FinishedMs)
	}
	if from > 0 && w.metrics != nil {
		w.metrics.NodeStartDelay.Observe(float64(now.UnixMilli()-from) / 1000)
	}
	return true, nil
}

// NodeRunKey is the idempotency key of the run of one attempt of a node of
// a workflow run: a repeated start finds the run made before.
func NodeRunKey(workflowRunID int64, node string, attempt int) string {
	return fmt.Sprintf("wf:%d:%s:%d", workflowRunID, node, attempt)
}

// stop ends a workflow run cancelled or timed out: the runs of its
// running nodes are asked to stop, its unfinished nodes are cancelled.
func (w *workflows) stop(ctx context.Context, wr *wfRun, state kind.WorkflowRunState, msg string) error {
	now := w.clock.Now().UnixMilli()
	for _, n := range wr.cur {
		if n.State.Final() {
			continue
		}
		for _, id := range nodeRuns(n) {
			if _, err := w.st.RunRequestKill(ctx, id); err != nil {
				return err
			}
		}
		if _, err := w.st.NodeRunFinish(ctx, n.ID, n.State, kind.NodeCancelled, "", "the workflow run "+string(state)+": "+msg, now); err != nil {
			return err
		}
	}
	ok, err := w.st.WorkflowRunFinish(ctx, wr.run.ID, state, msg, now)
	if ok {
		w.ended(wr.run, state)
	}
	return err
}

// ended counts and logs a workflow run this node ended.
func (w *workflows) ended(r store.WorkflowRun, state kind.WorkflowRunState) {
	if w.metrics != nil {
		w.metrics.WorkflowRuns.WithLabelValues(string(state)).Inc()
	}
	w.log.WithFields(logrus.Fields{"workflow_run_id": r.ID, "workflow_id": r.WorkflowID, "state": state}).Info("workflow run ended")
}

// fireDue fires the due workflow schedules: one run per fire time (or
// none, or one now, for a fire missed by more than the misfire threshold,
// as the workflow's misfire policy says).
func (w *workflows) fireDue(ctx context.Context) error {
	now := w.clock.Now()
	due, err := w.st.WorkflowListDue(ctx, now.UnixMilli(), 100)
	if err != nil {
		return err
	}
	for _, wf := range due {
		sched, err := schedule.Parse(schedule.Kind(wf.ScheduleType), wf.ScheduleConf, wf.TimeZone)
		if err != nil {
			w.warns.note("workflow_schedule_invalid", logrus.Fields{"workflow_id": wf.ID, "error": err.Error()}, "a workflow's schedule cannot be parsed; not fired")
			continue
		}
		sched = schedule.Bound(sched, wf.Window())
		fireAt := time.UnixMilli(wf.NextFireMs)
		tt, key := kind.TriggerSchedule, fmt.Sprintf("fire:%d", wf.NextFireMs)
		// A fire time outside the active window (the window was changed
		// after it was computed) starts nothing; the next is within it.
		win := wf.Window()
		create := (win.Start.IsZero() || !fireAt.Before(win.Start)) && (win.End.IsZero() || !fireAt.After(win.End))
		after := fireAt
		if now.Sub(fireAt) > w.cfg.MisfireThreshold {
			after = now // catch up once: the next fire is after now
			if wf.MisfirePolicy == kind.MisfireFireOnceNow {
				tt = kind.TriggerMisfire
			} else {
				create = false
			}
		}
		next, ok := sched.Next(after)
		nextMs := int64(0)
		if ok {
			nextMs = next.UnixMilli()
		}
		var p *store.WorkflowRunCreateParams
		if create {
			p = &store.WorkflowRunCreateParams{WorkflowID: wf.ID, GroupID: wf.GroupID, TriggerType: tt, Definition: wf.Definition, Input: "{}",
				IdempotencyKey: key, BlockStrategy: wf.BlockStrategy, TimeoutSec: wf.TimeoutSec, NowMs: now.UnixMilli()}
		}
		if _, err := w.st.WorkflowFire(ctx, wf.ID, wf.NextFireMs, nextMs, p); err != nil {
			return err
		}
	}
	return nil
}

// Package wfcheck checks workflow runs against what the workflow engine
// promises through crashes, pauses and database restarts: every workflow
// run ends; each node attempt has exactly one run in the ledger per
// idempotency key, the one the attempt recorded; no run of the workflows'
// jobs exists without its attempt; and the executor ran each run at most
// once, every run not recorded lost exactly once. The crash test
// (tests/integration) and the fault suite (tests/faults) count the
// executor's arrivals each their own way and hand the counts here, so both
// judge by the same rules.
package wfcheck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/workflow"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/store"
)

// Report is what the runs came to. The defects are NonFinal, KeyErrors,
// Orphans, Outside, Duplicates and Missing: each must be zero.
type Report struct {
	WorkflowRuns int
	States       map[kind.WorkflowRunState]int
	NonFinal     int // workflow runs not ended
	Attempts     int // node attempts that made runs
	Runs         int // runs made for them
	Executed     int // runs that reached the executor
	// Unsent runs are recorded lost and never reached the executor: their
	// replica died as it handed them over, and the node's retry ran again.
	Unsent int
	// LostAfterRun runs reached the executor once but are recorded lost:
	// their result never came (every callback fell while replicas
	// restarted), so they were recorded lost a minute past their timeout.
	LostAfterRun int
	KeyErrors    int // attempts whose key has no run, several, or not the recorded one
	Orphans      int // runs made for a key that no attempt records
	Outside      int // runs of the workflows' jobs not made by a workflow
	Duplicates   int // executions beyond the first of a run
	Missing      int // runs neither executed nor recorded lost
	Unknown      int // executions of a run that is not in the ledger
	Examples     []string
}

// Defects counts the broken promises.
func (r Report) Defects() int {
	return r.NonFinal + r.KeyErrors + r.Orphans + r.Outside + r.Duplicates + r.Missing + r.Unknown
}

// Err is nil when nothing is broken, else it names the defects with up to
// ten examples.
func (r Report) Err() error {
	if r.Defects() == 0 {
		return nil
	}
	return fmt.Errorf("workflow runs not final %d, node attempts without exactly their run %d, runs without an attempt %d, "+
		"runs made outside a workflow %d, duplicate executions %d, runs neither executed nor lost %d, executions of runs not in the ledger %d:\n  %s",
		r.NonFinal, r.KeyErrors, r.Orphans, r.Outside, r.Duplicates, r.Missing, r.Unknown, strings.Join(r.Examples, "\n  "))
}

func (r *Report) note(format string, args ...any) {
	if len(r.Examples) < 10 {
		r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
	}
}

// Check reads the workflow runs wfRuns (each of definition def), their node
// attempts and every run of def's jobs, and compares them with executed:
// how many times the executor ran each run, by run id (its log id).
func Check(ctx context.Context, st *store.Store, def workflow.Definition, wfRuns []int64, executed map[int64]int) (Report, error) {
	rep := Report{WorkflowRuns: len(wfRuns), States: map[kind.WorkflowRunState]int{}}
	byKey := map[string][]store.Run{}
	known := map[int64]bool{}
	seenJob := map[int64]bool{}
	for _, nd := range def.Nodes {
		if seenJob[nd.JobID] {
			continue
		}
		seenJob[nd.JobID] = true
		for before := int64(0); ; {
			rs, err := st.RunList(ctx, store.RunListParams{JobID: nd.JobID, BeforeID: before, Limit: 1000})
			if err != nil {
				return rep, fmt.Errorf("list the runs of job %d: %w", nd.JobID, err)
			}
			for _, r := range rs {
				known[r.ID] = true
				if r.TriggerType != kind.TriggerWorkflow {
					rep.Outside++
					rep.note("run %d of job %d was made by %s, outside a workflow", r.ID, r.JobID, r.TriggerType)
					continue
				}
				byKey[r.IdempotencyKey] = append(byKey[r.IdempotencyKey], r)
			}
			if len(rs) < 1000 {
				break
			}
			before = rs[len(rs)-1].ID
		}
	}
	for _, id := range wfRuns {
		r, err := st.WorkflowRunGet(ctx, id)
		if err != nil {
			return rep, fmt.Errorf("read workflow run %d: %w", id, err)
		}
		rep.States[r.State]++
		if !r.State.Final() {
			rep.NonFinal++
			rep.note("workflow run %d is still %s", id, r.State)
		}
	}
	nodes := map[string]workflow.Node{}
	for _, nd := range def.Nodes {
		nodes[nd.Name] = nd
	}
	keys := map[string]bool{}
	for i := 0; i < len(wfRuns); i += 500 {
		attempts, err := st.NodeRunList(ctx, wfRuns[i:min(i+500, len(wfRuns))])
		if err != nil {
			return rep, fmt.Errorf("list node attempts: %w", err)
		}
		for _, nd := range attempts {
			rep.checkAttempt(nd, nodes[nd.Node], byKey, executed, keys)
		}
	}
	for id, n := range executed {
		if !known[id] {
			rep.Unknown += n
			rep.note("the executor ran log id %d, which is no run of the workflows' jobs", id)
		}
	}
	for key, rs := range byKey {
		if !keys[key] {
			rep.Orphans += len(rs)
			rep.note("run %d was made for %s, which no node attempt records", rs[0].ID, key)
		}
	}
	return rep, nil
}

func (rep *Report) checkAttempt(nd store.NodeRun, node workflow.Node, byKey map[string][]store.Run, executed map[int64]int, keys map[string]bool) {
	if nd.RunID == 0 {
		// A skipped or cancelled attempt, or one that failed before it
		// made runs (a for_each of bad input): runs made for its key
		// are orphans, found below.
		return
	}
	rep.Attempts++
	runs := nd.RunIDs
	if len(runs) == 0 {
		runs = []int64{nd.RunID}
	}
	for i, runID := range runs {
		key := scheduler.NodeRunKey(nd.WorkflowRunID, nd.Node, nd.Attempt)
		if node.FanOut() {
			key += fmt.Sprint(":", i)
		}
		keys[key] = true
		made := byKey[key]
		if len(made) != 1 || made[0].ID != runID {
			rep.KeyErrors++
			var ids []int64
			for _, m := range made {
				ids = append(ids, m.ID)
			}
			rep.note("attempt %d of node %s of workflow run %d records run %d; runs made for %s: %v", nd.Attempt, nd.Node, nd.WorkflowRunID, runID, key, ids)
			continue
		}
		x := made[0]
		rep.Runs++
		n := executed[x.ID]
		switch {
		case n > 1:
			rep.Duplicates += n - 1
			rep.note("run %d (%s) of %s ran %d times at the executor", x.ID, x.State, key, n)
		case n == 0 && x.State == kind.RunLost:
			rep.Unsent++
		case n == 0:
			rep.Missing++
			rep.note("run %d (%s %q) of %s never reached the executor", x.ID, x.State, x.Message, key)
		}
		if n > 0 {
			rep.Executed++
			if x.State == kind.RunLost {
				rep.LostAfterRun++
			}
		}
	}
}

// Settle waits until no workflow run is queued or running and no run is in
// flight (scheduled, dispatching or running), polling st; after limit it
// returns an error describing what is still going on.
func Settle(ctx context.Context, st *store.Store, limit time.Duration) error {
	inFlight := []kind.RunState{kind.RunScheduled, kind.RunDispatching, kind.RunRunning}
	deadline := time.Now().Add(limit)
	for {
		active, err := st.WorkflowRunListActive(ctx, 10)
		if err == nil && len(active) == 0 {
			rs, err := st.RunList(ctx, store.RunListParams{States: inFlight, Limit: 10})
			if err == nil && len(rs) == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	active, err := st.WorkflowRunListActive(ctx, 500)
	var ids []int64
	for _, a := range active {
		ids = append(ids, a.ID)
	}
	var b strings.Builder
	if len(ids) > 0 {
		ns, nerr := st.NodeRunList(ctx, ids)
		err = errors.Join(err, nerr)
		for _, nd := range ns {
			if !nd.State.Final() {
				fmt.Fprintf(&b, "\n  workflow run %d node %s attempt %d %s runs %d %v: %s", nd.WorkflowRunID, nd.Node, nd.Attempt, nd.State, nd.RunID, nd.RunIDs, nd.Message)
			}
		}
	}
	rs, rerr := st.RunList(ctx, store.RunListParams{States: inFlight, Limit: 50})
	for _, r := range rs {
		fmt.Fprintf(&b, "\n  run %d %s owner %s target %q handed %d: %s", r.ID, r.State, r.Owner, r.Target, r.HandedMs, r.Message)
	}
	return fmt.Errorf("after %s, %d workflow runs still active and %d runs in flight (read errors: %v):%s", limit, len(active), len(rs), errors.Join(err, rerr), b.String())
}

// Definition is the workflow both tests run: a root a; a fan-out b of two
// shards and a failing node c after it; d after b and c on all_finished
// (it runs though c failed); e after c on any_failed (the failure branch).
// Every node is retried once, so c makes two attempts. job makes the job
// of a node, failing when fails is set, and returns its id.
func Definition(job func(node string, fails bool) int64) workflow.Definition {
	return workflow.Definition{
		Nodes: []workflow.Node{
			{Name: "a", JobID: job("a", false), Retries: 1},
			{Name: "b", JobID: job("b", false), Shards: 2, Retries: 1},
			{Name: "c", JobID: job("c", true), Retries: 1},
			{Name: "d", JobID: job("d", false), StartRule: kind.StartAllFinished, Retries: 1},
			{Name: "e", JobID: job("e", false), StartRule: kind.StartAnyFailed, Retries: 1},
		},
		Edges: []workflow.Edge{{From: "a", To: "b"}, {From: "a", To: "c"}, {From: "b", To: "d"}, {From: "c", To: "d"}, {From: "c", To: "e"}},
	}
}

package scheduler

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/store"
)

// lostRuns records as lost the runs that will not report: still running
// long past their timeout, on an executor gone from the registry, or a local
// process of a node that died. Lost is an outcome like any other: the first
// final outcome wins, so a result that arrives first keeps the run.
type lostRuns struct {
	lifecycle.Loop
	*followupDeps
	log *logrus.Entry
	// warns rate-limits the lines logged per run (a count per kind per
	// interval), as the dispatcher's are.
	warns *warnEvery
}

func (l *lostRuns) Start(ctx context.Context) {
	l.Loop.Start(ctx, func(ctx context.Context) {
		every(ctx, l.clock, l.cfg.LostCheckInterval, l.log, "look for lost runs", l.tick)
	})
}

func (l *lostRuns) Stop() { l.Loop.Stop() }

func (l *lostRuns) tick(ctx context.Context) error {
	now := l.clock.Now()
	runs, err := l.st.RunListRunningSince(ctx, now.Add(-l.cfg.LostGrace).UnixMilli(), 1000)
	if err != nil || len(runs) == 0 {
		return err
	}
	execs, err := l.st.RegistryList(ctx, store.RegistryListParams{SinceMs: now.Add(-l.cfg.ExecutorDeadAfter).UnixMilli()})
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, e := range execs {
		live[strings.TrimRight(e.Address, "/")] = true
	}
	nodes, err := l.st.NodeList(ctx)
	if err != nil {
		return err
	}
	deadNode := map[string]bool{}
	for _, n := range nodes {
		if n.Declared() || n.StoppedMs > 0 {
			deadNode[n.ID] = true
		}
	}
	jobs := map[int64]store.Job{}
	var lost []store.RunResult
	for _, r := range runs {
		j, ok := jobs[r.JobID]
		if !ok {
			if j, err = l.st.JobGet(ctx, r.JobID); err != nil {
				continue
			}
			jobs[r.JobID] = j
		}
		since := now.Sub(time.UnixMilli(r.DispatchedMs))
		deadline, of := l.deadline(r, j)
		var why string
		switch {
		case since > deadline+l.cfg.LostGrace:
			why = fmt.Sprintf("still running %s after dispatch, past %s: no result will come; marked lost", since.Round(time.Second), of)
		case l.drivers.Capabilities(r.Target).ExecutorProtocol && !live[strings.TrimRight(r.Target, "/")] && since > l.cfg.LostAfter:
			why = fmt.Sprintf("executor %s has been gone from the registry; its result is lost", r.Target)
		case l.drivers.Capabilities(r.Target).OnDispatchingNode && deadNode[r.Owner]:
			why = fmt.Sprintf("scheduler node %s that ran this local process died; its result is lost", r.Owner)
		default:
			continue
		}
		lost = append(lost, store.RunResult{ID: r.ID, State: kind.RunLost, Code: 500, Message: why, FinishedMs: now.UnixMilli(), Source: store.SourceLost})
	}
	applied, err := l.record(ctx, lost)
	if err != nil {
		return err
	}
	for i, ok := range applied {
		if ok {
			l.metrics.Lost.Inc()
			l.warns.note("run_lost", logrus.Fields{"run_id": lost[i].ID}, lost[i].Message)
		}
	}
	return nil
}

// deadline is how long after its dispatch a running run can still report:
// its job's timeout, else the bound its target gives, else RunDeadline. It is
// computed from the database (dispatch time, job), so any replica enforces
// it, whichever dispatched the run.
func (l *lostRuns) deadline(r store.Run, j store.Job) (time.Duration, string) {
	if j.TimeoutSec > 0 {
		return time.Duration(j.TimeoutSec) * time.Second, fmt.Sprintf("its %ds timeout", j.TimeoutSec)
	}
	limit := l.cfg.RunDeadline
	if l.drivers != nil {
		if d := l.drivers.MaxRunTime(r.Target); d > 0 && d < limit {
			return d, fmt.Sprintf("the longest a run on its target can take (%s; its job has no timeout)", d)
		}
	}
	return limit, fmt.Sprintf("the deadline of runs without a timeout (scheduler.run_deadline, %s)", limit)
}

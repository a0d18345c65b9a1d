package scheduler

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ringjob/ringjob/internal/lifecycle"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
)

// takeover watches the other nodes and adopts the work of those that stopped
// (see peerWatch for when a node counts as dead). A dead node is first
// declared dead (a compare-and-set against its own heartbeat, so it learns
// of it and rejoins), then its runs move here, each by compare-and-set on
// its owner so two survivors never take one run and the old owner can no
// longer claim or send it:
//   - scheduled runs go into the ring, or fire at once when due;
//   - runs it claimed but never handed to their target are sent from here;
//   - runs it handed to their target may have arrived: once its connections
//     are gone (its liveness lock was freed: the process or its database
//     connection ended), their targets are asked (handed.go): a run never
//     received is sent again, one received is left to report; a target that
//     cannot be asked leaves the run lost. A node fenced while its process
//     may live on (paused) could still send: its handed runs are lost.
//
// A node that is only silent for longer than the partition lease (paused,
// slow) keeps its partition of nothing: its scheduled and claimed-not-sent
// runs move here too, so its fires go out on time, while what it may have
// sent stays with it until it heartbeats again or is declared dead.
type takeover struct {
	lifecycle.Loop
	cfg      Config
	node     string
	st       *store.Store
	clock    clockwork.Clock
	log      *logrus.Entry
	ring     *ring
	disp     *dispatcher
	metrics  *Metrics
	liveness *store.NodeLiveness
	watch    *peerWatch
	// record is the outcome writer: runs marked lost here are outcomes like
	// any other (the first final outcome wins, a later one is logged).
	record func(ctx context.Context, outs []store.RunResult) ([]bool, error)

	// reaped remembers the declared-dead nodes found empty, by the heartbeat
	// they were declared dead at (an optimisation: every scan would find
	// nothing more).
	reaped map[string]int64
	// askable are the nodes this replica declared dead with their
	// connections gone, by the heartbeat they were declared dead at, with
	// the time of that declaration: the targets of the runs they handed
	// before it may be asked (see handed.go). (A process of the same node
	// started after it hands runs of its own.) Of a node declared by
	// another replica the reason is not known here.
	askable map[string]declared
	// ownHandedBefore, when set, is the start of this process: runs of this
	// node handed before it were sent by an earlier process, dead, and are
	// asked about at every scan until resolved.
	ownHandedBefore atomic.Int64
	lastSweep       time.Time
}

// Claimed runs of this node that nobody handed to a target for this long are
// sent again (their sender gave up: the database did not answer the claim
// or the hand-off, or the node dropped its memory when it rejoined). The
// hand-off gate keeps a run that is in fact still queued from going twice.
const (
	stuckClaimAfter = time.Minute
	sweepEvery      = 10 * time.Second
)

// declared is when a node was declared dead, and at which heartbeat.
type declared struct{ heartbeatMs, atMs int64 }

func (t *takeover) Start(ctx context.Context) { t.Loop.Start(ctx, t.run) }
func (t *takeover) Stop()                     { t.Loop.Stop() }

func (t *takeover) run(ctx context.Context) {
	every(ctx, t.clock, t.cfg.TakeoverInterval, t.log, "orphan scan failed", t.scan)
}

func (t *takeover) scan(ctx context.Context) error {
	session, err := t.liveness.Ensure(ctx)
	if err != nil {
		return err
	}
	nodes, err := t.st.NodeList(ctx)
	if err != nil {
		return err
	}
	now := t.clock.Now()
	t.watch.observe(session, nodes, now)
	if t.reaped == nil {
		t.reaped = map[string]int64{}
		t.askable = map[string]declared{}
	}
	if before := t.ownHandedBefore.Load(); before > 0 {
		pending, err := t.resolveHanded(ctx, t.node, before, fmt.Sprintf("an earlier process of scheduler node %s", t.node))
		if err != nil {
			return err
		}
		if pending == 0 {
			t.ownHandedBefore.CompareAndSwap(before, 0)
		}
	}
	for _, n := range nodes {
		if n.ID == t.node {
			continue
		}
		if n.Declared() {
			if t.reaped[n.ID] != n.HeartbeatMs {
				var askBefore int64
				if a, ok := t.askable[n.ID]; ok && a.heartbeatMs == n.HeartbeatMs {
					askBefore = a.atMs
				}
				if err := t.reap(ctx, n, "declared dead", askBefore); err != nil {
					return err
				}
			}
			continue
		}
		why, askable, err := t.deathOf(ctx, n, now)
		if err != nil {
			return err
		}
		if why != "" {
			// The evidence counts only if our own session lasted throughout.
			if s2, err := t.liveness.Ensure(ctx); err != nil || s2 != session || !t.watch.sessionIs(session) {
				return err
			}
			ok, err := t.st.NodeDeclareDead(ctx, n.ID, n.HeartbeatMs)
			if err != nil {
				return err
			}
			if !ok {
				continue // it heartbeat in the meantime: alive
			}
			t.log.WithFields(logrus.Fields{"dead_node": n.ID, "reason": why}).Warn("declared a node dead")
			var askBefore int64
			if askable {
				askBefore = t.clock.Now().UnixMilli()
				t.askable[n.ID] = declared{heartbeatMs: n.HeartbeatMs, atMs: askBefore}
			}
			if err := t.reap(ctx, n, why, askBefore); err != nil {
				return err
			}
			continue
		}
		if silent, _ := t.watch.silence(n.ID, now); silent > t.cfg.PartitionLease {
			reason := fmt.Sprintf("node %s silent for %s (partition lease %s)", n.ID, silent.Round(time.Millisecond), t.cfg.PartitionLease)
			taken, claimed, err := t.adopt(ctx, n.ID, reason)
			if err != nil {
				return fmt.Errorf("take over runs of silent node %s: %w", n.ID, err)
			}
			if taken+claimed > 0 {
				t.log.WithFields(logrus.Fields{"silent_node": n.ID, "silent_for": silent.Round(time.Millisecond), "scheduled": taken, "claimed_not_sent": claimed}).
					Warn("took over the waiting runs of a node that stopped heartbeating")
			}
		}
	}
	if now.Sub(t.lastSweep) >= sweepEvery {
		t.lastSweep = now
		return t.sweepStuck(ctx, now)
	}
	return nil
}

// deathOf says why a node (not declared dead yet) is dead, or "" while it
// is not (see peerWatch). askable: its connections are gone (it stopped, or
// its liveness lock was freed while it was heartbeating), so nothing it sent
// can still arrive and the targets of its handed runs may be asked about
// them.
func (t *takeover) deathOf(ctx context.Context, n store.Node, now time.Time) (why string, askable bool, err error) {
	if n.StoppedMs > 0 {
		return "stopped", true, nil
	}
	silent, beat := t.watch.silence(n.ID, now)
	if beat || silent > t.cfg.NodeDeadAfter {
		free, err := t.st.NodeLockFree(ctx, n.ID)
		if err != nil {
			return "", false, err
		}
		if free && beat {
			return "its liveness lock was freed: its process or its database connection ended", true, nil
		}
		if silent <= t.cfg.NodeDeadAfter {
			return "", false, nil
		}
		if free || !t.st.NamedLocks() {
			// Silence alone does not tell a dead process from a paused one
			// whose session ended: what it handed is not asked about.
			return fmt.Sprintf("no heartbeat for %s", silent.Round(time.Millisecond)), false, nil
		}
		// Silent, yet its session holds its lock: a paused process or a
		// frozen machine. End that session so it cannot look alive again.
		killed, err := t.st.NodeFence(ctx, n.ID)
		if err != nil {
			// Without the right to end it (another database user), the
			// declaration alone fences it: it cannot heartbeat, claim or
			// hand off the runs taken from it.
			t.log.WithError(err).WithField("node", n.ID).Warn("could not end the database session of a silent node; declaring it dead anyway")
		}
		if killed {
			return fmt.Sprintf("no heartbeat for %s while its database session lived on (paused?); ended that session", silent.Round(time.Millisecond)), false, nil
		}
		return fmt.Sprintf("no heartbeat for %s", silent.Round(time.Millisecond)), false, nil
	}
	return "", false, nil
}

// reap takes over everything of a node declared dead. askBefore > 0: its
// connections are gone (since askBefore at the latest), so the targets of
// the runs it handed before are asked about them (handed.go); otherwise it
// may still send (a paused process
// fenced from the database), or the reason it was declared dead is not
// known here: its handed runs are recorded lost, at once if this replica
// fenced it, else once they are older than handedHung (the replica that
// declared it dead asks meanwhile).
func (t *takeover) reap(ctx context.Context, n store.Node, why string, askBefore int64) error {
	reason := fmt.Sprintf("node %s died (%s)", n.ID, why)
	taken, claimed, err := t.adopt(ctx, n.ID, reason)
	if err != nil {
		return fmt.Errorf("take over node %s: %w", n.ID, err)
	}
	var lost []int64
	pending := 0
	switch {
	case askBefore > 0:
		pending, err = t.resolveHanded(ctx, n.ID, askBefore, "scheduler node "+n.ID)
	case why == "declared dead":
		lost, err = t.markHandedLost(ctx, n.ID, t.clock.Now().Add(-t.handedHung()).UnixMilli(),
			fmt.Sprintf("scheduler node %s died after handing this run to its target, and nobody could ask the target within %s; whether it arrived is unknown", n.ID, t.handedHung()))
		if err == nil {
			pending, err = t.st.RunCountHanded(ctx, n.ID)
		}
	default:
		lost, err = t.markHandedLost(ctx, n.ID, 0,
			fmt.Sprintf("scheduler node %s stopped answering after handing this run to its target, and its process may still send it (%s); whether it arrived is unknown, so it is not re-sent automatically", n.ID, why))
	}
	if err != nil {
		return fmt.Errorf("take over node %s: %w", n.ID, err)
	}
	if pending == 0 {
		t.reaped[n.ID] = n.HeartbeatMs
	}
	if taken+claimed+len(lost) > 0 {
		t.log.WithFields(logrus.Fields{"dead_node": n.ID, "scheduled": taken, "claimed_not_sent": claimed, "lost": len(lost)}).
			Warn("took over the runs of a dead node")
	}
	return nil
}

// adopt moves a node's scheduled runs and its claimed-but-never-handed runs
// here (from may be this node: its own runs after a restart or rejoin) and
// fires or sends them. Fires later than the misfire threshold by now follow
// their job's misfire policy in the dispatcher.
func (t *takeover) adopt(ctx context.Context, from, reason string) (scheduled, claimed int, err error) {
	msg := "taken over: " + reason
	for _, isClaimed := range []bool{false, true} {
		for {
			runs, err := t.st.RunTakeOver(ctx, store.RunTakeOverParams{From: from, To: t.node, Claimed: isClaimed, Limit: 5000, Message: msg})
			if err != nil {
				return scheduled, claimed, err
			}
			if len(runs) == 0 {
				break
			}
			if isClaimed {
				claimed += len(runs)
			} else {
				scheduled += len(runs)
			}
			t.metrics.TakenOver.Add(float64(len(runs)))
			if err := t.fireAdopted(ctx, runs, isClaimed, reason); err != nil {
				return scheduled, claimed, err
			}
			if len(runs) < 5000 {
				break
			}
		}
	}
	return scheduled, claimed, nil
}

// fireAdopted puts adopted runs into the ring (future) or the dispatcher (due).
func (t *takeover) fireAdopted(ctx context.Context, runs []store.Run, claimed bool, reason string) error {
	fires, err := t.disp.firesOf(ctx, runs, claimed, reason)
	if err != nil {
		return err
	}
	nowMs := t.clock.Now().UnixMilli()
	var due, future []fire
	for _, f := range fires {
		if f.scheduledMs <= nowMs || f.claimed {
			due = append(due, f)
		} else {
			future = append(future, f)
		}
	}
	t.ring.push(future...)
	t.disp.fireRead(ctx, due)
	return nil
}

// sweepStuck sends this node's claimed runs that nobody handed to a target
// for stuckClaimAfter (see stuckClaimAfter), and marks lost its handed runs
// whose dispatch never ended.
func (t *takeover) sweepStuck(ctx context.Context, now time.Time) error {
	// Own scheduled runs overdue by more than a sweep: the ring never had
	// them (a pre-read whose commit was applied but never answered) or lost
	// them. The ring and the claim keep a run that is in fact waiting from
	// going twice.
	overdue, err := t.st.RunTakeOver(ctx, store.RunTakeOverParams{From: t.node, To: t.node, DueBeforeMs: now.Add(-sweepEvery).UnixMilli(), Limit: 5000,
		Message: "overdue: reloaded from the ledger"})
	if err != nil {
		return err
	}
	if len(overdue) > 0 {
		t.log.WithField("runs", len(overdue)).Warn("firing this node's overdue scheduled runs that were not waiting in its ring")
		if err := t.fireAdopted(ctx, overdue, false, "overdue: it was not waiting in this node's ring"); err != nil {
			return err
		}
	}
	runs, err := t.st.RunListClaimedSince(ctx, t.node, now.Add(-stuckClaimAfter).UnixMilli(), 5000)
	if err != nil {
		return err
	}
	if len(runs) > 0 {
		t.log.WithField("runs", len(runs)).Warn("sending claimed runs whose dispatch never started (the database did not answer, or the node rejoined)")
		if err := t.fireAdopted(ctx, runs, true, "claimed but never sent"); err != nil {
			return err
		}
	}
	hung := max(2*time.Minute, 10*t.cfg.DispatchTimeout)
	lost, err := t.markHandedLost(ctx, t.node, now.Add(-hung).UnixMilli(),
		fmt.Sprintf("handed to its target more than %s ago and the dispatch never recorded an answer; whether it arrived is unknown", hung))
	if err != nil {
		return err
	}
	if len(lost) > 0 {
		t.log.WithField("runs", len(lost)).Warn("marked lost: runs handed to their target whose dispatch never ended")
	}
	return nil
}

// markHandedLost records as lost the runs owner handed to their targets
// (before handedBeforeMs; 0: ever) that are still dispatching, through the
// outcome writer like every other outcome: a result recorded first keeps
// the run, a run its target accepted meanwhile (running) is left to report,
// and a lost run arms its retry and alarm in the same write. It returns the
// runs it marked.
func (t *takeover) markHandedLost(ctx context.Context, owner string, handedBeforeMs int64, why string) ([]int64, error) {
	ids, err := t.st.RunListHandedUnanswered(ctx, owner, handedBeforeMs)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	nowMs := t.clock.Now().UnixMilli()
	outs := make([]store.RunResult, len(ids))
	for i, id := range ids {
		outs[i] = store.RunResult{ID: id, State: kind.RunLost, Code: 500, Message: why, FinishedMs: nowMs, Source: store.SourceLost, OnlyDispatching: true}
	}
	applied, err := t.record(ctx, outs)
	if err != nil {
		return nil, fmt.Errorf("record %d handed, unanswered runs of node %s as lost: %w", len(ids), owner, err)
	}
	var lost []int64
	for i, ok := range applied {
		if ok {
			lost = append(lost, ids[i])
		}
	}
	t.metrics.Lost.Add(float64(len(lost)))
	return lost, nil
}

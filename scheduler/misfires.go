package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
)

// The misfire policy is applied in one way wherever a schedule fire turns
// out late: when it leaves the ring, the backlog or a takeover (fire), and
// when its hand-off is recorded late because the database did not answer
// (handOff). do_nothing records every late fire as misfired. fire_once_now
// fires one catch-up per job: a late fire is the catch-up only when no
// later fire of its job is due or still to be recorded by the schedule
// loop (which then fires the job itself, on time, late by less than the
// threshold, or as its own one catch-up). The answer comes from the
// database, not from what one replica holds in memory, so fires of one job
// waiting in several places after an outage (rings, backlogs, hand-offs of
// several replicas) make one catch-up, not one per place.

// catchUpQueryTimeout bounds the read behind a fire_once_now decision made
// on a ring tick; a database that does not answer in time leaves the fire
// undecided (still scheduled) for the next tick.
const catchUpQueryTimeout = 2 * time.Second

// lateFire reports whether f is a schedule fire later than the misfire
// threshold at nowMs, and not yet decided.
func (d *dispatcher) lateFire(f *fire, nowMs int64) bool {
	return f.trigger == kind.TriggerSchedule && f.misfire == "" && !f.catchUp && nowMs-f.scheduledMs > d.cfg.MisfireThreshold.Milliseconds()+misfireGraceMs(f.job)
}

// decideMisfires applies the misfire policy to the late schedule fires of
// due (see above), setting misfire (recorded instead of sent) or catchUp
// (sent). Manual triggers, retries, child runs and catch-ups are sent
// however late. It returns the fires decided or not late, and the late
// fire_once_now fires it could not decide because the database did not
// answer: they stay scheduled and are offered again.
func (d *dispatcher) decideMisfires(ctx context.Context, due []fire) (decided, undecided []fire) {
	now := d.clock.Now()
	nowMs := now.UnixMilli()
	var onceNow []*fire
	for i := range due {
		f := &due[i]
		if !d.lateFire(f, nowMs) {
			continue
		}
		if f.job.MisfirePolicy != kind.MisfireFireOnceNow {
			f.misfire = misfireMessage(nowMs-f.scheduledMs, d.whereWaited(f), "do_nothing skips it")
			continue
		}
		if tooOld(f.job, f.scheduledMs-f.job.Window(f.job.Name).Offset.Milliseconds(), nowMs) {
			f.misfire = misfireMessage(nowMs-f.scheduledMs, d.whereWaited(f), "older than the job's max_event_age_sec, so not caught up")
			continue
		}
		onceNow = append(onceNow, f)
	}
	if len(onceNow) == 0 {
		return due, nil
	}
	qctx, cancel := context.WithTimeout(ctx, catchUpQueryTimeout)
	keep, err := d.catchUps(qctx, onceNow, nowMs)
	cancel()
	if err != nil {
		d.warns.note("misfire_undecided", logrus.Fields{"runs": len(onceNow), "error": err.Error()},
			"could not apply fire_once_now to late fires (the database did not answer); they stay scheduled and are offered again")
		wait := map[int64]bool{}
		for _, f := range onceNow {
			wait[f.runID] = true
		}
		decided = due[:0:0]
		for _, f := range due {
			if wait[f.runID] {
				undecided = append(undecided, f)
			} else {
				decided = append(decided, f)
			}
		}
		return decided, undecided
	}
	for _, f := range onceNow {
		if keep[f.runID] {
			f.catchUp = true
		} else {
			f.misfire = misfireMessage(nowMs-f.scheduledMs, d.whereWaited(f), "fire_once_now fires one catch-up per job, and a later fire of this job is due")
		}
	}
	return due, nil
}

// catchUps tells which of the late fire_once_now fires late are their
// job's one catch-up: the latest fire of its job (all its shards), when no
// later fire of the job is recorded with a due time at or before nowMs and
// the schedule loop has no due fire of the job left to record. A fire of a
// job that no longer exists is no catch-up.
func (d *dispatcher) catchUps(ctx context.Context, late []*fire, nowMs int64) (map[int64]bool, error) {
	latest := map[int64]int64{}
	for _, f := range late {
		if f.scheduledMs > latest[f.job.ID] {
			latest[f.job.ID] = f.scheduledMs
		}
	}
	jobIDs := make([]int64, 0, len(latest))
	for id := range latest {
		jobIDs = append(jobIDs, id)
	}
	state, err := d.st.RunCatchUpState(ctx, jobIDs, nowMs)
	if err != nil {
		return nil, err
	}
	keep := map[int64]bool{}
	for _, f := range late {
		c, ok := state[f.job.ID]
		if !ok || f.scheduledMs != latest[f.job.ID] || c.LatestDueMs > f.scheduledMs {
			continue
		}
		if c.NextFireMs > 0 && c.NextFireMs <= nowMs {
			continue // the schedule loop fires the job itself
		}
		keep[f.runID] = true
	}
	return keep, nil
}

// whereWaited says where a fire waited, for its misfire message.
func (d *dispatcher) whereWaited(f *fire) string {
	if f.why != "" {
		return f.why
	}
	return "it waited in this node's ring or backlog"
}

// misfireMessage is a late fire's recorded reason. The lateness is in
// tenths of a second: a burst of misfires then shares a few messages, and
// their batched write groups rows by message (see store.setByValue)
// instead of one CASE branch per run.
func misfireMessage(lateMs int64, where, policy string) string {
	by := (time.Duration(lateMs) * time.Millisecond).Round(100 * time.Millisecond)
	return fmt.Sprintf("misfired: due %s ago (%s); %s", by, where, policy)
}

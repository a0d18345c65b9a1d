package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/lifecycle"

	"github.com/jonboulle/clockwork"
	"github.com/ringjob/ringjob/store"
	"github.com/sirupsen/logrus"
)

// takeover watches for dead nodes and adopts their work: runs they left
// scheduled are re-owned (compare-and-set, so two survivors never both take
// one) and fired, or recorded as misfired under the job's misfire policy;
// runs they left dispatching are marked lost, never silently re-sent.
type takeover struct {
	lifecycle.Loop
	cfg     Config
	node    string
	st      *store.Store
	clock   clockwork.Clock
	log     *logrus.Entry
	ring    *ring
	fireNow func(ctx context.Context, due []fire) // the dispatcher: adopted runs already due fire at once
	metrics *Metrics
}

func (t *takeover) Start(ctx context.Context) { t.Loop.Start(ctx, t.run) }
func (t *takeover) Stop()                     { t.Loop.Stop() }

func (t *takeover) run(ctx context.Context) {
	for {
		if err := t.scan(ctx); err != nil && ctx.Err() == nil {
			t.log.WithError(err).Warn("orphan scan failed")
		}
		if !lifecycle.Sleep(ctx, t.clock, t.cfg.TakeoverInterval) {
			return
		}
	}
}

func (t *takeover) scan(ctx context.Context) error {
	nodes, err := t.st.NodeList(ctx)
	if err != nil {
		return err
	}
	now := t.clock.Now()
	for _, n := range nodes {
		if n.ID == t.node || n.ReapedMs == n.HeartbeatMs {
			continue
		}
		dead, err := isDead(ctx, t.st, t.cfg, n, now)
		if err != nil {
			return err
		}
		if !dead {
			continue
		}
		if err := t.reap(ctx, n); err != nil {
			return fmt.Errorf("take over node %s: %w", n.ID, err)
		}
	}
	return nil
}

func (t *takeover) reap(ctx context.Context, n store.Node) error {
	log := t.log.WithField("dead_node", n.ID)
	now := t.clock.Now()
	lost, err := t.st.RunMarkLost(ctx, store.RunMarkLostParams{Owner: n.ID, NowMs: now.UnixMilli(),
		Message: fmt.Sprintf("scheduler node %s died while dispatching this run; it is not re-sent automatically", n.ID)})
	if err != nil {
		return err
	}
	t.metrics.Lost.Add(float64(len(lost)))
	taken := 0
	for {
		runs, err := t.st.RunTakeOver(ctx, store.RunTakeOverParams{From: n.ID, To: t.node, Limit: 5000})
		if err != nil {
			return err
		}
		if len(runs) == 0 {
			break
		}
		taken += len(runs)
		if err := t.adopt(ctx, n.ID, runs); err != nil {
			return err
		}
	}
	if err := t.st.NodeMarkReaped(ctx, n.ID, n.HeartbeatMs); err != nil {
		return err
	}
	if taken > 0 || len(lost) > 0 {
		log.WithFields(logrus.Fields{"taken_over": taken, "lost": len(lost)}).Info("took over the runs of a dead node")
	}
	return nil
}

// adopt fires taken-over runs or records them as misfired.
func (t *takeover) adopt(ctx context.Context, deadNode string, runs []store.Run) error {
	t.metrics.TakenOver.Add(float64(len(runs)))
	ids := make([]int64, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.JobID)
	}
	jobs, err := t.st.JobGetMany(ctx, ids)
	if err != nil {
		return err
	}
	now := t.clock.Now()
	nowMs := now.UnixMilli()
	// For fire_once_now, only the latest misfired run of each job fires.
	latestMissed := map[int64]int64{}
	for _, r := range runs {
		j, ok := jobs[r.JobID]
		if ok && nowMs-r.ScheduledMs > t.cfg.MisfireThreshold.Milliseconds() && j.MisfirePolicy == kind.MisfireFireOnceNow {
			if r.ScheduledMs > latestMissed[r.JobID] {
				latestMissed[r.JobID] = r.ScheduledMs
			}
		}
	}
	var due, future []fire
	for _, r := range runs {
		j, ok := jobs[r.JobID]
		if !ok {
			if _, err := t.st.RunSetState(ctx, r.ID, kind.RunScheduled, kind.RunMisfired, "job was deleted before its run fired", nowMs); err != nil {
				return err
			}
			continue
		}
		late := nowMs - r.ScheduledMs
		if late > t.cfg.MisfireThreshold.Milliseconds() && latestMissed[r.JobID] != r.ScheduledMs {
			msg := fmt.Sprintf("owner %s died; missed by %s; do_nothing skips it", deadNode, time.Duration(late)*time.Millisecond)
			if j.MisfirePolicy == kind.MisfireFireOnceNow {
				msg = fmt.Sprintf("owner %s died; missed by %s; fire_once_now fires only the latest missed run", deadNode, time.Duration(late)*time.Millisecond)
			}
			if _, err := t.st.RunSetState(ctx, r.ID, kind.RunScheduled, kind.RunMisfired, msg, nowMs); err != nil {
				return err
			}
			t.metrics.Misfired.Inc()
			continue
		}
		jj := j
		f := fire{runID: r.ID, scheduledMs: r.ScheduledMs, shardIndex: r.ShardIndex, shardTotal: r.ShardTotal, attempt: r.Attempt, params: r.Params, job: &jj}
		if r.ScheduledMs <= nowMs {
			due = append(due, f)
		} else {
			future = append(future, f)
		}
	}
	t.ring.push(future...)
	t.fireNow(ctx, due)
	return nil
}

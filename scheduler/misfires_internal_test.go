package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

// TestFireOnceNowMakesOneCatchUpWhereverFiresWaited: late fires of a
// fire_once_now job, however they are split between ticks or replicas,
// make one catch-up for the job: a late fire is the catch-up only when no
// later fire of its job is due and the schedule loop has none left to
// record. A database that does not answer leaves them undecided (still
// scheduled), never an outcome.
func TestFireOnceNowMakesOneCatchUpWhereverFiresWaited(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := storetest.Open(t, dialect)

			t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
			now := t0.Add(15 * time.Second) // the database was away from t0 to now
			clock := clockwork.NewFakeClockAt(now)
			g, err := st.GroupCreate(ctx, store.GroupCreateParams{AppName: "app", NowMs: t0.UnixMilli()})
			require.NoError(t, err)
			seq := 0
			job := func(policy kind.Misfire, nextFire time.Time) *store.Job {
				seq++
				j, err := st.JobCreate(ctx, store.JobCreateParams{JobFields: store.JobFields{GroupID: g.ID, Name: fmt.Sprintf("j%d", seq), ScheduleType: "cron",
					ScheduleConf: "* * * * * ?", TimeZone: "UTC", MisfirePolicy: policy, RouteStrategy: "first", BlockStrategy: "SERIAL_EXECUTION", ShardCount: 1},
					Enabled: true, NextFireMs: nextFire.UnixMilli(), NowMs: t0.UnixMilli()})
				require.NoError(t, err)
				return &j
			}
			// fires records schedule runs of j at t0+secs and returns them as
			// ring fires.
			fires := func(j *store.Job, secs ...int) []fire {
				var out []fire
				for _, s := range secs {
					at := t0.Add(time.Duration(s) * time.Second).UnixMilli()
					r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: g.ID, ScheduledMs: at, ShardTotal: 1,
						TriggerType: kind.TriggerSchedule, Owner: "n", CreatedMs: t0.UnixMilli()})
					require.NoError(t, err)
					out = append(out, fire{runID: r.ID, scheduledMs: at, shardTotal: 1, job: j, trigger: kind.TriggerSchedule})
				}
				return out
			}
			log := logrus.New()
			log.SetLevel(logrus.PanicLevel)
			d := &dispatcher{cfg: Config{MisfireThreshold: 5 * time.Second}, st: st, clock: clock, warns: newWarnEvery(logrus.NewEntry(log), clock, warnInterval)}
			sent := func(fs []fire) (out []int) {
				for _, f := range fs {
					if f.misfire == "" {
						out = append(out, int((f.scheduledMs-t0.UnixMilli())/1000))
					} else {
						require.Contains(t, f.misfire, "misfired: due")
					}
				}
				return out
			}

			// Every second, its next fire not recorded yet (the schedule
			// loop was away too): the loop fires its one catch-up, so every
			// late fire held in memory is misfired, whichever tick it is in.
			every := job(kind.MisfireFireOnceNow, t0.Add(6*time.Second))
			fs := fires(every, 1, 2, 3, 4, 5)
			decided, undecided := d.decideMisfires(ctx, fs[:3])
			require.Empty(t, undecided)
			require.Empty(t, sent(decided), "fires of a job whose next fire is still to be recorded")
			decided, _ = d.decideMisfires(ctx, fs[3:])
			require.Empty(t, sent(decided), "the latest late fire is no catch-up either: the schedule loop makes it")

			// The schedule loop already recorded later fires (its catch-up,
			// or the next on-time fires): the late ones are all misfired.
			caughtUp := job(kind.MisfireFireOnceNow, now.Add(time.Second))
			fs = fires(caughtUp, 1, 2, 3)
			fires(caughtUp, 10) // the loop's catch-up, recorded after the outage
			decided, _ = d.decideMisfires(ctx, fs)
			require.Empty(t, sent(decided), "a later fire of the job is due: no second catch-up")

			// A job that fires rarely (its next fire far ahead): the latest
			// late fire is its only catch-up; the earlier ones misfire.
			rare := job(kind.MisfireFireOnceNow, t0.Add(24*time.Hour))
			fs = fires(rare, 2, 4)
			decided, _ = d.decideMisfires(ctx, fs[:1])
			require.Empty(t, sent(decided), "an earlier fire of the job, a later one due")
			decided, _ = d.decideMisfires(ctx, fs[1:])
			require.Equal(t, []int{4}, sent(decided), "the job's latest late fire is its one catch-up")
			require.True(t, decided[0].catchUp)

			// do_nothing: every late fire is misfired; fires on time go.
			nothing := job(kind.MisfireDoNothing, t0.Add(24*time.Hour))
			fs = fires(nothing, 4, 14)
			decided, _ = d.decideMisfires(ctx, fs)
			require.Equal(t, []int{14}, sent(decided), "late by less than the threshold: sent")

			// The database does not answer: the late fire_once_now fires
			// stay undecided (scheduled, offered again); the others are
			// decided as usual.
			fs = append(fires(rare, 5), fires(nothing, 3)...)
			require.NoError(t, st.Close())
			decided, undecided = d.decideMisfires(ctx, fs)
			require.Len(t, undecided, 1)
			require.Equal(t, rare.ID, undecided[0].job.ID)
			require.Empty(t, undecided[0].misfire)
			require.Len(t, decided, 1)
			require.Contains(t, decided[0].misfire, "do_nothing skips it")
		})
	}
}

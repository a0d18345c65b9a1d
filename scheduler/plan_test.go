package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/store"
)

// Every-second jobs planned several seconds at a time fire every second
// exactly once and on time, and no run is planned beyond the 5 s window.
// A stopped job fires only the runs planned before the stop (at most the
// window's), as before: stopping does not touch runs already scheduled.
func TestFrequentJobsPlannedAheadFireOnceAndStop(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, dialect string) {
		b := setup(t, dialect, noon)
		var jobs []store.Job
		for i := 0; i < 30; i++ {
			jobs = append(jobs, b.job("every-second", "cron", "* * * * * ?", "UTC", "", 0))
		}
		b.startNode("a", nil)
		ctx := context.Background()
		for s := 0; s < 15; s++ {
			b.step(1, time.Second)
			rs, err := b.st.RunList(ctx, store.RunListParams{Limit: 1000})
			require.NoError(t, err)
			for _, r := range rs {
				require.LessOrEqual(t, r.ScheduledMs, b.clock.Now().Add(5*time.Second).UnixMilli(), "a run planned beyond the window")
			}
		}
		ds := b.waitDispatched(30 * 15)
		exactlyOnce(t, ds, jobs, at(12, 0, 1), at(12, 0, 15))
		requireOnTime(t, b, ds)

		stopped := jobs[0]
		stopAt := b.clock.Now()
		require.NoError(t, b.st.JobSetEnabled(ctx, store.JobSetEnabledParams{ID: stopped.ID, Enabled: false, NowMs: stopAt.UnixMilli()}))
		b.step(1, 10*time.Second)
		ds = b.waitDispatched(30*15 + 29*10 + 2)
		after := 0
		for _, ms := range scheduledTimes(ds, stopped.ID) {
			if ms > stopAt.UnixMilli() {
				after++
				require.LessOrEqual(t, ms, stopAt.Add(5*time.Second).UnixMilli(), "a stopped job fires only what was planned before the stop")
			}
		}
		require.GreaterOrEqual(t, after, 2, "runs planned before the stop still fire (not touched)")
		exactlyOnce(t, ds, jobs[1:], at(12, 0, 1), at(12, 0, 25))
	})
}

// A job stopped and started again within the pre-read window (or given a
// new schedule: the edit sets the next fire the same way) already has runs
// planned past its new next fire. The pre-read continues after them: the
// planned runs fire once, the job then goes on every second, and the other
// jobs are not held up. Before, the pre-read inserted the planned fire time
// a second time, failed on the unique fire key, and retried every cycle:
// no job of the partition was planned again.
func TestRestartWithinTheWindowContinuesAfterThePlannedRuns(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, dialect string) {
		b := setup(t, dialect, noon)
		j := b.job("restarted", "cron", "* * * * * ?", "UTC", "", 0)
		other := b.job("other", "cron", "* * * * * ?", "UTC", "", 0)
		b.startNode("a", nil)
		ctx := context.Background()
		b.step(1, 10*time.Second)
		require.NoError(t, b.st.JobSetEnabled(ctx, store.JobSetEnabledParams{ID: j.ID, Enabled: false, NowMs: b.clock.Now().UnixMilli()}))
		b.step(1, time.Second)
		require.NoError(t, b.st.JobSetEnabled(ctx, store.JobSetEnabledParams{ID: j.ID, Enabled: true,
			NextFireMs: b.clock.Now().Add(time.Second).UnixMilli(), NowMs: b.clock.Now().UnixMilli()}))
		b.step(1, 10*time.Second)
		b.waitDispatched(2 * 21)
		time.Sleep(50 * time.Millisecond) // give a stray double dispatch the chance to show
		ds := b.waitDispatched(2 * 21)
		exactlyOnce(t, ds, []store.Job{j, other}, at(12, 0, 1), at(12, 0, 21))
		requireOnTime(t, b, ds)
	})
}

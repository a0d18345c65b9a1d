package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/apitypes"
	"github.com/ringjob/ringjob/destinations"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/schedule"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/store"
)

// scheduledJob creates an enabled job with schedule options; its first fire is
// computed the way the service computes it (the options included).
func (b *bundle) scheduledJob(name, schedType, conf string, o store.JobOptions, edit func(*store.JobFields)) store.Job {
	b.t.Helper()
	b.jobSeq++
	f := store.JobFields{GroupID: b.group.ID, Name: fmt.Sprintf("%s-%d", name, b.jobSeq), ScheduleType: schedType, ScheduleConf: conf, TimeZone: "UTC",
		MisfirePolicy: kind.MisfireDoNothing, Params: "p", RouteStrategy: "first", BlockStrategy: "SERIAL_EXECUTION", ShardCount: 1, JobOptions: o}
	if edit != nil {
		edit(&f)
	}
	s, err := schedule.Parse(schedule.Kind(schedType), conf, "UTC")
	require.NoError(b.t, err)
	next, ok := schedule.Bound(s, f.Window(f.Name)).Next(b.clock.Now())
	require.True(b.t, ok, "the job has a fire")
	j, err := b.st.JobCreate(context.Background(), store.JobCreateParams{JobFields: f, Enabled: true, NextFireMs: next.UnixMilli(), NowMs: b.clock.Now().UnixMilli()})
	require.NoError(b.t, err)
	return j
}

func TestActiveWindowFiresOnlyWithinIt(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, dialect string) {
		b := setup(t, dialect, noon)
		j := b.scheduledJob("window", "cron", "* * * * * ?", store.JobOptions{ActiveFromMs: at(12, 0, 3), ActiveUntilMs: at(12, 0, 6)}, nil)
		require.Equal(t, at(12, 0, 3), j.NextFireMs, "the first fire is the window's start")
		b.startNode("a", nil)
		b.step(1, 10*time.Second)
		ds := b.waitDispatched(4)
		require.Equal(t, []int64{at(12, 0, 3), at(12, 0, 4), at(12, 0, 5), at(12, 0, 6)}, scheduledTimes(ds, j.ID), fmtSeen(ds))
		requireOnTime(t, b, ds)
		got, err := b.st.JobGet(context.Background(), j.ID)
		require.NoError(t, err)
		require.False(t, got.Enabled, "after its window the job has no fire left: it stops")
		require.Zero(t, got.NextFireMs)
	})
}

// nameWithOffset finds a job name (as scheduledJob numbers it) whose flexible
// offset in a window of minutes lies in [lo, hi).
func nameWithOffset(t *testing.T, base string, seq, minutes int, lo, hi time.Duration) string {
	for i := 0; i < 10000; i++ {
		n := fmt.Sprintf("%s%d", base, i)
		if o := schedule.FlexOffset(fmt.Sprintf("%s-%d", n, seq), minutes); o >= lo && o < hi {
			return n
		}
	}
	t.Fatal("no name with such an offset")
	return ""
}

func TestFlexibleWindowMovesEachFireAndRecordsItsScheduleTime(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, dialect string) {
		b := setup(t, dialect, noon)
		name := nameWithOffset(t, "flex", b.jobSeq+1, 2, 3*time.Second, 8*time.Second)
		j := b.scheduledJob(name, "cron", "0 * * * * ?", store.JobOptions{FlexWindowMin: 2}, nil)
		offset := schedule.FlexOffset(j.Name, 2)
		require.Equal(t, at(12, 0, 0)+offset.Milliseconds(), j.NextFireMs, "the fire of 12:00:00 moves by the job's offset: still to come")
		b.startNode("a", nil)
		b.step(1, offset+time.Second)
		ds := b.waitDispatched(1)
		require.Equal(t, []int64{at(12, 0, 0) + offset.Milliseconds()}, scheduledTimes(ds, j.ID), fmtSeen(ds))
		requireOnTime(t, b, ds)
		rs := b.waitSettledRuns(j.ID)
		require.Len(t, rs, 1)
		require.Equal(t, offset.Milliseconds(), rs[0].WindowOffsetMs)
		require.Equal(t, at(12, 0, 0), rs[0].ScheduledMs-rs[0].WindowOffsetMs, "the run keeps its schedule time")
		rec := scheduler.FailureRecordOf(b.group, j, rs[0])
		require.Equal(t, "2026-06-01T12:00:00Z", rec.ScheduledAt)
	})
}

func TestFlexibleWindowCountsMisfiresFromItsEnd(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, dialect string) {
		b := setup(t, dialect, noon)
		// The 11:59:00 fire moved by 5..40 s was due 20..55 s ago: far beyond
		// the 5 s misfire threshold, but within its 2-minute window (which
		// ends at 12:01:00), so it fires, late, instead of misfiring.
		name := nameWithOffset(t, "flexlate", b.jobSeq+1, 2, 5*time.Second, 40*time.Second)
		j := b.scheduledJob(name, "cron", "0 * * * * ?", store.JobOptions{FlexWindowMin: 2}, nil)
		offset := schedule.FlexOffset(j.Name, 2)
		due := at(11, 59, 0) + offset.Milliseconds()
		require.NoError(t, b.st.JobSetEnabled(context.Background(), store.JobSetEnabledParams{ID: j.ID, Enabled: true, NextFireMs: due, NowMs: noon.UnixMilli()}))
		// A do_nothing job without a window misfires in the same situation.
		plain := b.job("plain", "cron", "0 * * * * ?", "UTC", kind.MisfireDoNothing, due)
		b.startNode("a", nil)
		b.step(1, 2*time.Second)
		ds := b.waitDispatched(1)
		require.Equal(t, []int64{due}, scheduledTimes(ds, j.ID), fmtSeen(ds))
		require.NotContains(t, scheduledTimes(ds, plain.ID), due)
		misfired := 0
		for _, r := range b.waitSettledRuns(plain.ID) {
			if r.ScheduledMs == due {
				require.Equal(t, kind.RunMisfired, r.State)
				misfired++
			}
		}
		require.Equal(t, 1, misfired)
	})
}

func TestMaxEventAgeEndsRetriesAndCatchUps(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, dialect string) {
		b := setup(t, dialect, noon)
		// Retries 8 s apart, at most 5 s of age (the API takes 60 s at
		// least; the store and scheduler take any): the first retry is made
		// (the fire is 1 s old when it fails), the second is not (it would
		// follow a fire 9 s old).
		j := b.scheduledJob("aged", "at", "2026-06-01T12:00:01Z", store.JobOptions{MaxEventAgeSec: 5}, func(f *store.JobFields) {
			f.RetryCount, f.RetryDelaySec = 3, 8
		})
		// A fire_once_now job 2 minutes behind is not caught up past its age.
		old := b.scheduledJob("old", "cron", "0 * * * * ?", store.JobOptions{MaxEventAgeSec: 60}, func(f *store.JobFields) { f.MisfirePolicy = kind.MisfireFireOnceNow })
		require.NoError(t, b.st.JobSetEnabled(context.Background(), store.JobSetEnabledParams{ID: old.ID, Enabled: true, NextFireMs: at(11, 58, 0), NowMs: noon.UnixMilli()}))
		n := b.startNode("a", nil)
		n.rec.mu.Lock()
		n.rec.failFirst = map[int64]int{j.ID: 10}
		n.rec.mu.Unlock()
		seen := func() []dispatchSeen {
			var all []dispatchSeen
			for _, nd := range b.nodes {
				all = append(all, nd.rec.all()...)
			}
			return all
		}
		// The retry follows the failure's outcome (written on real time) at
		// a follow-up tick: step until the fire is sent, wait for its
		// failure to be recorded before the clock moves on (else the
		// follow-up could first look at it when the fire is already past
		// its age), step until the retry is sent, then 30 s more, in which
		// no second retry may come.
		for i := 0; len(scheduledTimes(seen(), j.ID)) < 1; i++ {
			require.Less(t, i, 10, "the fire was not sent: %s", fmtSeen(seen()))
			b.step(1, time.Second)
		}
		require.Eventually(t, func() bool {
			rs := b.runs(j.ID)
			return len(rs) == 1 && rs[0].State == kind.RunFailed
		}, 10*time.Second, 5*time.Millisecond, "the fire's failure is recorded")
		for i := 0; len(scheduledTimes(seen(), j.ID)) < 2; i++ {
			require.Less(t, i, 60, "the retry was not sent: %s", fmtSeen(seen()))
			b.step(1, time.Second)
		}
		b.step(1, 30*time.Second)
		ds := seen()
		require.Len(t, scheduledTimes(ds, j.ID), 2, "the fire and one retry, no more: %s", fmtSeen(ds))
		rs := b.waitSettledRuns(j.ID)
		require.Len(t, rs, 2)
		for _, r := range rs {
			require.Equal(t, kind.RunFailed, r.State)
		}
		for _, r := range b.waitSettledRuns(old.ID) {
			if r.ScheduledMs == at(11, 58, 0) {
				require.Equal(t, kind.RunMisfired, r.State)
				require.Contains(t, r.Message, "max_event_age_sec")
			}
		}
		require.NotContains(t, scheduledTimes(ds, old.ID), at(11, 58, 0), "not caught up")
	})
}

// webhookSink is a failure destination: it answers 503 to the first
// `refuse` requests, then 200, and keeps what it took.
type webhookSink struct {
	mu     sync.Mutex
	refuse int
	tries  int
	got    []apitypes.FailureRecord
	keys   []string
}

func (w *webhookSink) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tries++
	if w.refuse > 0 {
		w.refuse--
		http.Error(rw, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	var rec apitypes.FailureRecord
	if err := json.Unmarshal(body, &rec); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.got = append(w.got, rec)
	w.keys = append(w.keys, r.Header.Get("Idempotency-Key"))
}

func (w *webhookSink) records() []apitypes.FailureRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]apitypes.FailureRecord(nil), w.got...)
}

func TestFailureRecordsReachTheirDestinationThroughAnOutage(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, dialect string) {
		b := setup(t, dialect, noon)
		sink := &webhookSink{refuse: 3}
		srv := httptest.NewServer(sink)
		t.Cleanup(srv.Close)
		b.deliverer = destinations.NewSender(destinations.Config{})
		// The group's destination serves the misfiring job; the failing job
		// has its own.
		_, err := b.st.GroupUpdate(context.Background(), store.GroupUpdateParams{ID: b.group.ID, Members: b.group.Members,
			FailureDestination: srv.URL + "/group?token=s3cret", NowMs: noon.UnixMilli()})
		require.NoError(t, err)
		failing := b.scheduledJob("failing", "at", "2026-06-01T12:00:02Z", store.JobOptions{FailureDestination: srv.URL + "/job"}, nil)
		misfiring := b.scheduledJob("misfiring", "cron", "0 * * * * ?", store.JobOptions{}, nil)
		require.NoError(t, b.st.JobSetEnabled(context.Background(), store.JobSetEnabledParams{ID: misfiring.ID, Enabled: true, NextFireMs: at(11, 59, 0), NowMs: noon.UnixMilli()}))
		n := b.startNode("a", nil)
		n.rec.mu.Lock()
		n.rec.failFirst = map[int64]int{failing.ID: 1}
		n.rec.mu.Unlock()
		// The sink refuses three tries: 1 + 2 + 4 s of backoff, then takes both.
		for i := 0; len(sink.records()) < 2; i++ {
			require.Less(t, i, 60, "the records did not arrive within a minute of the scheduler's clock")
			b.step(1, time.Second)
		}
		b.step(1, 20*time.Second) // nothing more arrives
		got := sink.records()
		require.Len(t, got, 2, "each record once after the destination came back")
		byJob := map[int64]apitypes.FailureRecord{}
		for _, r := range got {
			byJob[r.JobID] = r
		}
		require.Equal(t, "failed", byJob[failing.ID].Outcome)
		require.Equal(t, "test/"+failing.Name, byJob[failing.ID].Job)
		require.Equal(t, "2026-06-01T12:00:02Z", byJob[failing.ID].ScheduledAt)
		require.Equal(t, "boom", byJob[failing.ID].Message)
		require.Equal(t, "misfired", byJob[misfiring.ID].Outcome)
		require.Equal(t, "2026-06-01T11:59:00Z", byJob[misfiring.ID].ScheduledAt)
		pending, err := b.st.FailureDeliveryPending(context.Background())
		require.NoError(t, err)
		require.Zero(t, pending)
		d, ok, err := b.st.FailureDeliveryOfRun(context.Background(), byJob[failing.ID].RunID)
		require.NoError(t, err)
		require.True(t, ok)
		require.Positive(t, d.Attempts)
		require.NotZero(t, d.DeliveredMs)
	})
}

func TestAfterCompletionDeleteRemovesTheJobOnceItsLastRunEnded(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, dialect string) {
		b := setup(t, dialect, noon)
		once := b.scheduledJob("once", "at", "2026-06-01T12:00:02Z", store.JobOptions{AfterCompletion: kind.AfterCompletionDelete}, nil)
		// Fired, then stopped by hand with fires left: not completed, kept.
		stopped := b.scheduledJob("stopped", "cron", "* * * * * ?", store.JobOptions{AfterCompletion: kind.AfterCompletionDelete}, nil)
		b.startNode("a", nil)
		b.step(1, time.Second)
		b.waitDispatched(1)
		require.NoError(t, b.st.JobSetEnabled(context.Background(), store.JobSetEnabledParams{ID: stopped.ID, Enabled: false, NowMs: noon.UnixMilli()}))
		for i := 0; ; i++ {
			require.Less(t, i, 60, "the one-time job is not deleted within a minute of its run")
			b.step(1, time.Second)
			if _, err := b.st.JobGet(context.Background(), once.ID); errors.Is(err, store.ErrNotFound) {
				break
			}
		}
		ds := b.waitDispatched(2)
		require.Equal(t, []int64{at(12, 0, 2)}, scheduledTimes(ds, once.ID))
		_, err := b.st.JobGet(context.Background(), stopped.ID)
		require.NoError(t, err, "a job stopped by hand with fires left is kept")
		evs, err := b.st.AuditList(context.Background(), store.AuditListParams{Limit: 10})
		require.NoError(t, err)
		require.NotEmpty(t, evs)
		require.Equal(t, "scheduler", evs[0].Principal)
		require.Equal(t, "job.delete", evs[0].Action)
		require.Contains(t, evs[0].Changes, "after_completion")
	})
}

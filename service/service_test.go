package service_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var kinds = storetest.Dialects

// fakeDriver serves fake://NAME targets and records kills and log reads.
type fakeDriver struct {
	mu      sync.Mutex
	killed  []int64
	killErr error
	logs    []int64
}

func (d *fakeDriver) Run(context.Context, targets.Request) (targets.Dispatch, error) {
	return targets.Dispatch{}, nil
}
func (d *fakeDriver) Beat(context.Context, string) error            { return nil }
func (d *fakeDriver) IdleBeat(context.Context, string, int64) error { return nil }
func (d *fakeDriver) Kill(_ context.Context, _ string, runID, _ int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.killErr != nil {
		return d.killErr
	}
	d.killed = append(d.killed, runID)
	return nil
}
func (d *fakeDriver) Log(_ context.Context, target string, runID int64, from int) (targets.LogChunk, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.logs = append(d.logs, runID)
	return targets.LogChunk{FromLine: from, ToLine: from, Content: "from " + target + "\n"}, nil
}

type bundle struct {
	st    *store.Store
	svc   *service.Service
	clock *clockwork.FakeClock
	drv   *fakeDriver
}

func setup(t *testing.T, dialect string) *bundle {
	t.Helper()
	st := storetest.Open(t, dialect)
	drv := &fakeDriver{}
	reg := targets.NewRegistry()
	reg.Register("fake", drv)
	clock := clockwork.NewFakeClockAt(time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC))
	return &bundle{st: st, svc: service.New(service.Options{Store: st, Drivers: reg, Clock: clock}), clock: clock, drv: drv}
}

func TestKillRun(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, dialect)
			g, err := b.svc.CreateGroup(ctx, service.GroupCreateParams{AppName: "kills", Members: []string{"fake://a"}})
			require.NoError(t, err)
			j, err := b.svc.CreateJob(ctx, service.JobCreateParams{JobSpec: service.JobSpec{GroupID: g.ID, Name: "k"}})
			require.NoError(t, err)
			newRun := func() store.Run {
				r, created, err := b.st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: g.ID, ScheduledMs: b.clock.Now().UnixMilli(),
					TriggerType: kind.TriggerManual, Owner: "node-a", CreatedMs: b.clock.Now().UnixMilli()})
				require.NoError(t, err)
				require.True(t, created)
				return r
			}
			running := func(target string) store.Run {
				r := newRun()
				got, err := b.st.RunClaimBatch(ctx, store.RunClaimParams{IDs: []int64{r.ID}, Owner: "node-a", NowMs: b.clock.Now().UnixMilli()})
				require.NoError(t, err)
				require.Equal(t, []int64{r.ID}, got)
				if target != "" {
					_, err = b.st.RunUpdateBatch(ctx, store.RunUpdateBatchParams{FromStates: []kind.RunState{kind.RunDispatching},
						Updates: []store.RunUpdate{{ID: r.ID, State: kind.RunRunning, Target: target}}})
					require.NoError(t, err)
				}
				return r
			}

			t.Run("a scheduled run is killed in the ledger", func(t *testing.T) {
				r := newRun()
				k, err := b.svc.KillRun(ctx, r.ID)
				require.NoError(t, err)
				require.Equal(t, kind.RunKilled, k.State)
				require.NotZero(t, k.FinishedMs)
				require.True(t, k.State.Final())
				require.Empty(t, b.drv.killed, "no driver is asked about a run that was never sent")
			})
			t.Run("a running run is killed through its driver, at once when the driver accepts", func(t *testing.T) {
				r := running("fake://a")
				k, err := b.svc.KillRun(ctx, r.ID)
				require.NoError(t, err)
				require.Equal(t, kind.RunKilled, k.State, "killed as soon as the target accepted the kill")
				require.Equal(t, 500, k.ResultCode)
				require.Equal(t, []int64{r.ID}, b.drv.killed)
				// What the target reports afterwards is logged, not applied.
				applied, err := b.st.RunRecordOutcomes(ctx, []store.RunResult{{ID: r.ID, State: kind.RunSucceeded, Code: 200, FinishedMs: k.FinishedMs + 1, Source: store.SourceCallback}})
				require.NoError(t, err)
				require.Equal(t, []bool{false}, applied)
				got, err := b.svc.GetRun(ctx, r.ID)
				require.NoError(t, err)
				require.Equal(t, kind.RunKilled, got.State)
			})
			t.Run("a driver that cannot kill is an error", func(t *testing.T) {
				r := running("fake://a")
				b.drv.mu.Lock()
				b.drv.killErr = errors.New("executor unreachable")
				b.drv.mu.Unlock()
				defer func() { b.drv.mu.Lock(); b.drv.killErr = nil; b.drv.mu.Unlock() }()
				_, err := b.svc.KillRun(ctx, r.ID)
				var te *service.TargetError
				require.ErrorAs(t, err, &te)
				require.Contains(t, err.Error(), "executor unreachable")
			})
			t.Run("a run mid-dispatch without a target is a conflict", func(t *testing.T) {
				r := running("")
				_, err := b.svc.KillRun(ctx, r.ID)
				var ce *service.ConflictError
				require.ErrorAs(t, err, &ce)
				require.ErrorIs(t, err, store.ErrConflict)
			})
			t.Run("a finished run is a conflict", func(t *testing.T) {
				r := newRun()
				_, err := b.svc.KillRun(ctx, r.ID)
				require.NoError(t, err)
				_, err = b.svc.KillRun(ctx, r.ID)
				require.ErrorIs(t, err, store.ErrConflict)
			})
			t.Run("an unknown run is not found", func(t *testing.T) {
				_, err := b.svc.KillRun(ctx, 987654)
				require.ErrorIs(t, err, store.ErrNotFound)
				var nf *service.NotFoundError
				require.ErrorAs(t, err, &nf)
				require.Equal(t, "run", nf.Resource)
			})
			t.Run("logs come from the target's driver, or the store before dispatch", func(t *testing.T) {
				r := running("fake://a")
				c, err := b.svc.RunLog(ctx, r.ID, 3)
				require.NoError(t, err)
				require.Equal(t, "from fake://a\n", c.Content)
				require.Equal(t, 3, c.FromLine)

				s := newRun()
				require.NoError(t, b.st.RunLogAppend(ctx, s.ID, "line one\nline two"))
				c, err = b.svc.RunLog(ctx, s.ID, 2)
				require.NoError(t, err)
				require.Equal(t, "line two\n", c.Content)
				require.Equal(t, 2, c.ToLine)
				require.False(t, c.End)
			})
		})
	}
}

func TestUpdateJobScheduling(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, dialect)
			g, err := b.svc.CreateGroup(ctx, service.GroupCreateParams{AppName: "sched", Members: []string{"fake://a"}})
			require.NoError(t, err)
			spec := service.JobSpec{GroupID: g.ID, Name: "hourly", ScheduleType: "cron", ScheduleConf: "0 0 * * * ?"}
			j, err := b.svc.CreateJob(ctx, service.JobCreateParams{JobSpec: spec, Enabled: true})
			require.NoError(t, err)
			require.Equal(t, time.Date(2026, 6, 1, 11, 0, 0, 0, time.UTC).UnixMilli(), j.NextFireMs)

			// The scheduler advanced the next fire meanwhile; an edit that keeps
			// the schedule must not move it back.
			require.NoError(t, b.st.JobSetEnabled(ctx, store.JobSetEnabledParams{ID: j.ID, Enabled: true, NextFireMs: j.NextFireMs + 3600_000, NowMs: 1}))
			b.clock.Advance(90 * time.Minute)
			spec.Description = "edited"
			j2, err := b.svc.UpdateJob(ctx, service.JobUpdateParams{ID: j.ID, JobSpec: spec})
			require.NoError(t, err)
			require.Equal(t, "edited", j2.Description)
			require.Equal(t, j.NextFireMs+3600_000, j2.NextFireMs)

			// A new schedule fires from now.
			spec.ScheduleConf = "0 15 * * * ?"
			j3, err := b.svc.UpdateJob(ctx, service.JobUpdateParams{ID: j.ID, JobSpec: spec})
			require.NoError(t, err)
			require.Equal(t, time.Date(2026, 6, 1, 12, 15, 0, 0, time.UTC).UnixMilli(), j3.NextFireMs)

			// A started job cannot become schedule_type none.
			none := spec
			none.ScheduleType, none.ScheduleConf = "none", ""
			_, err = b.svc.UpdateJob(ctx, service.JobUpdateParams{ID: j.ID, JobSpec: none})
			var ve *service.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, "schedule_type", ve.Field)
			require.Contains(t, ve.Message, "stop the job first")
			// ... but it can when stopped in the same edit.
			off := false
			j4, err := b.svc.UpdateJob(ctx, service.JobUpdateParams{ID: j.ID, JobSpec: none, Enabled: &off})
			require.NoError(t, err)
			require.False(t, j4.Enabled)
			require.Zero(t, j4.NextFireMs)

			// Start and stop are idempotent.
			_, err = b.svc.StopJob(ctx, j.ID)
			require.NoError(t, err)
			_, err = b.svc.StartJob(ctx, j.ID)
			require.ErrorAs(t, err, &ve)
			require.Contains(t, ve.Message, "schedule type none disables start")
		})
	}
}

func TestPreviewAndPaging(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, "sqlite")
	nf, err := b.svc.PreviewSchedule(ctx, service.PreviewParams{ScheduleType: "cron", ScheduleConf: "0 30 2 * * ?", TimeZone: "Europe/Berlin"})
	require.NoError(t, err)
	require.Len(t, nf.Times, 5)
	for _, tm := range nf.Times {
		require.Equal(t, "Europe/Berlin", tm.Location().String())
		require.Equal(t, 2, tm.Hour())
		require.Equal(t, 30, tm.Minute())
	}
	_, err = b.svc.PreviewSchedule(ctx, service.PreviewParams{ScheduleType: "cron", ScheduleConf: "0 30 2 * * ?", N: 101})
	require.Error(t, err)

	for i := 0; i < 5; i++ {
		_, err := b.svc.CreateGroup(ctx, service.GroupCreateParams{AppName: "group-" + string(rune('a'+i))})
		require.NoError(t, err)
	}
	var names []string
	cursor := ""
	for {
		p, err := b.svc.ListGroups(ctx, service.GroupListParams{Cursor: cursor, Limit: 2})
		require.NoError(t, err)
		for _, g := range p.Items {
			names = append(names, g.AppName)
		}
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	require.Equal(t, []string{"group-a", "group-b", "group-c", "group-d", "group-e"}, names)

	// A cursor of another listing is refused.
	_, err = b.svc.ListJobs(ctx, service.JobListParams{Cursor: cursor})
	var ve *service.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "cursor", ve.Field)
}

// TestJobSearchLooksAtOneWindowPerPage: a name or enabled filter pages
// through the jobs a window at a time (so a page costs the same with a
// million jobs), and following next_cursor finds every match exactly once.
func TestJobSearchLooksAtOneWindowPerPage(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, dialect)
			svc := service.New(service.Options{Store: b.st, Drivers: targets.NewRegistry(), Clock: b.clock, JobScanWindow: 7})
			g, err := b.st.GroupCreate(ctx, store.GroupCreateParams{AppName: "search", Members: []string{"fake://a"}, NowMs: 1})
			require.NoError(t, err)
			var want []int64
			for i := 0; i < 30; i++ {
				name := fmt.Sprintf("beta-%s%d", strings.Repeat("x", i%3), i)
				if i%10 == 3 {
					name = "alpha-" + string(rune('a'+i))
				}
				j, err := b.st.JobCreate(ctx, store.JobCreateParams{JobFields: store.JobFields{GroupID: g.ID, Name: name, ScheduleType: "none", TimeZone: "UTC",
					MisfirePolicy: kind.MisfireDoNothing, ShardCount: 1}, NowMs: 1})
				require.NoError(t, err)
				if i%10 == 3 {
					want = append(want, j.ID)
				}
			}
			var got []int64
			cursor, pages := "", 0
			for {
				page, err := svc.ListJobs(ctx, service.JobListParams{Name: "alpha", Limit: 100, Cursor: cursor})
				require.NoError(t, err)
				pages++
				require.LessOrEqual(t, len(page.Items), 7)
				for _, j := range page.Items {
					got = append(got, j.ID)
				}
				if page.NextCursor == "" {
					break
				}
				cursor = page.NextCursor
			}
			require.Equal(t, want, got)
			require.GreaterOrEqual(t, pages, 5, "30 jobs in windows of 7")
			// Without a filter, pages are full as before.
			page, err := svc.ListJobs(ctx, service.JobListParams{Limit: 20})
			require.NoError(t, err)
			require.Len(t, page.Items, 20)
			require.NotEmpty(t, page.NextCursor)
		})
	}
}

package service

import (
	"context"
	"errors"
	"time"

	"github.com/ringjob/ringjob/store"
)

// Stats periods and resolutions.
const (
	PeriodHour = "hour"
	PeriodDay  = "day"
	PeriodWeek = "week"

	ResolutionMinute = "minute"
	ResolutionHour   = "hour"
)

// StatsParams select what the dashboard charts: runs of the last hour, day
// or week, per minute or hour, of everything, one group or one job.
type StatsParams struct {
	Period     string // hour (default), day, week
	Resolution string // minute (default for hour) or hour (default for day and week)
	GroupID    int64  // 0 = all groups
	JobID      int64  // 0 = all jobs (of the group)
}

// StatsCounts are runs by outcome and how long they ran.
type StatsCounts struct {
	Runs          int64
	Succeeded     int64
	Failed        int64
	TimedOut      int64
	Killed        int64
	Lost          int64
	Misfired      int64
	DurationSumMs int64
	DurationMaxMs int64
}

func (c *StatsCounts) add(r store.ReportRow) {
	c.Succeeded += r.Succeeded
	c.Failed += r.Failed
	c.TimedOut += r.TimedOut
	c.Killed += r.Killed
	c.Lost += r.Lost
	c.Misfired += r.Misfired
	c.Runs += r.Succeeded + r.Failed + r.TimedOut + r.Killed + r.Lost + r.Misfired
	c.DurationSumMs += r.DurationSumMs
	c.DurationMaxMs = max(c.DurationMaxMs, r.DurationMaxMs)
}

// StatsBucket is one minute or hour.
type StatsBucket struct {
	Start time.Time
	StatsCounts
}

// Stats are the charted runs: one bucket per minute or hour of the period,
// oldest first, empty ones included.
type Stats struct {
	Period     string
	Resolution string
	From, To   time.Time
	GroupID    int64
	JobID      int64
	// CountedAt is when the roll-up last counted runs (zero: never); runs
	// finished after it are not in the figures yet.
	CountedAt time.Time
	Totals    StatsCounts
	Buckets   []StatsBucket
}

// Stats reads the run reports (never the runs), so it answers in a few
// milliseconds whatever the size of the runs table.
func (s *Service) Stats(ctx context.Context, p StatsParams) (Stats, error) {
	var span time.Duration
	switch p.Period {
	case "", PeriodHour:
		p.Period, span = PeriodHour, time.Hour
	case PeriodDay:
		span = 24 * time.Hour
	case PeriodWeek:
		span = 7 * 24 * time.Hour
	default:
		return Stats{}, invalid("period", "must be hour, day or week, got %q", p.Period)
	}
	switch p.Resolution {
	case "":
		p.Resolution = ResolutionHour
		if p.Period == PeriodHour {
			p.Resolution = ResolutionMinute
		}
	case ResolutionMinute, ResolutionHour:
	default:
		return Stats{}, invalid("resolution", "must be minute or hour, got %q", p.Resolution)
	}
	if p.Resolution == ResolutionMinute && p.Period == PeriodWeek {
		return Stats{}, invalid("resolution", "minute buckets are kept for two days: use resolution=hour for a week")
	}
	if p.GroupID < 0 || p.JobID < 0 {
		return Stats{}, invalid("group_id", "ids must be positive")
	}
	if p.JobID > 0 {
		j, err := s.st.JobGet(ctx, p.JobID)
		if errors.Is(err, store.ErrNotFound) {
			return Stats{}, &NotFoundError{Resource: "job", ID: p.JobID}
		}
		if err != nil {
			return Stats{}, err
		}
		if p.GroupID > 0 && p.GroupID != j.GroupID {
			return Stats{}, invalid("group_id", "job %d is in group %d, not %d", j.ID, j.GroupID, p.GroupID)
		}
		p.GroupID = j.GroupID
	}
	size, res := time.Minute, store.ReportMinute
	if p.Resolution == ResolutionHour {
		size, res = time.Hour, store.ReportHour
	}
	// The period ends with the current bucket, so the last bar fills up live.
	to := s.clock.Now().UTC().Truncate(size).Add(size)
	from := to.Add(-span)
	rows, err := s.st.ReportQuery(ctx, store.ReportQueryParams{Resolution: res, GroupID: p.GroupID, JobID: p.JobID, FromMs: from.UnixMilli(), ToMs: to.UnixMilli()})
	if err != nil {
		return Stats{}, err
	}
	mark, err := s.st.ReportMarkGet(ctx)
	if err != nil {
		return Stats{}, err
	}
	out := Stats{Period: p.Period, Resolution: p.Resolution, From: from, To: to, GroupID: p.GroupID, JobID: p.JobID}
	if mark.AtMs > 0 {
		out.CountedAt = time.UnixMilli(mark.AtMs).UTC()
	}
	n := int(span / size)
	out.Buckets = make([]StatsBucket, n)
	for i := range out.Buckets {
		out.Buckets[i].Start = from.Add(time.Duration(i) * size)
	}
	for _, r := range rows {
		i := int((r.BucketMs - from.UnixMilli()) / size.Milliseconds())
		if i < 0 || i >= n {
			continue
		}
		out.Buckets[i].add(r)
		out.Totals.add(r)
	}
	return out, nil
}

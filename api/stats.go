package api

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/auth/access"

	"github.com/ringjob/ringjob/service"
)

// getStats serves the dashboard's charts from the run reports.
func (s *server) getStats(c *fiber.Ctx) error {
	var p service.StatsParams
	var err error
	p.Period = c.Query("period")
	p.Resolution = c.Query("resolution")
	if p.GroupID, err = queryID(c, "group_id"); err != nil {
		return err
	}
	if p.JobID, err = queryID(c, "job_id"); err != nil {
		return err
	}
	// Stats of a group (or of a job, by its group) need runs.read there;
	// server-wide stats are for admins.
	switch {
	case p.GroupID > 0:
		if err := require(c, access.PermRunsRead, p.GroupID); err != nil {
			return err
		}
	case p.JobID > 0:
		j, err := s.svc.GetJob(c.UserContext(), p.JobID)
		if err == nil {
			if err := require(c, access.PermRunsRead, j.GroupID); err != nil {
				return err
			}
		} else if !principal(c).IsAdmin() {
			return &access.Denied{Perm: access.PermRunsRead}
		}
	default:
		if err := require(c, access.PermSystemRead, 0); err != nil {
			return err
		}
	}
	st, err := s.svc.Stats(c.UserContext(), p)
	if err != nil {
		return err
	}
	return c.JSON(viewStats(st))
}

type statsCountsView struct {
	Runs          int64 `json:"runs"`
	Succeeded     int64 `json:"succeeded"`
	Failed        int64 `json:"failed"`
	TimedOut      int64 `json:"timed_out"`
	Killed        int64 `json:"killed"`
	Lost          int64 `json:"lost"`
	Misfired      int64 `json:"misfired"`
	DurationSumMs int64 `json:"duration_sum_ms"`
	DurationMaxMs int64 `json:"duration_max_ms"`
}

type statsBucketView struct {
	Start string `json:"start"`
	statsCountsView
}

type statsView struct {
	Period     string            `json:"period"`
	Resolution string            `json:"resolution"`
	From       string            `json:"from"`
	To         string            `json:"to"`
	GroupID    int64             `json:"group_id"`
	JobID      int64             `json:"job_id"`
	CountedAt  string            `json:"counted_at"` // "" before the first roll-up
	Totals     statsCountsView   `json:"totals"`
	Buckets    []statsBucketView `json:"buckets"`
}

func viewStatsCounts(c service.StatsCounts) statsCountsView {
	return statsCountsView{Runs: c.Runs, Succeeded: c.Succeeded, Failed: c.Failed, TimedOut: c.TimedOut, Killed: c.Killed,
		Lost: c.Lost, Misfired: c.Misfired, DurationSumMs: c.DurationSumMs, DurationMaxMs: c.DurationMaxMs}
}

func viewStats(st service.Stats) statsView {
	v := statsView{Period: st.Period, Resolution: st.Resolution, From: st.From.UTC().Format(time.RFC3339), To: st.To.UTC().Format(time.RFC3339),
		GroupID: st.GroupID, JobID: st.JobID, Totals: viewStatsCounts(st.Totals), Buckets: make([]statsBucketView, 0, len(st.Buckets))}
	if !st.CountedAt.IsZero() {
		v.CountedAt = st.CountedAt.UTC().Format(time.RFC3339Nano)
	}
	for _, b := range st.Buckets {
		v.Buckets = append(v.Buckets, statsBucketView{Start: b.Start.UTC().Format(time.RFC3339), statsCountsView: viewStatsCounts(b.StatsCounts)})
	}
	return v
}

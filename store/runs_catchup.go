package store

import (
	"context"
	"fmt"

	"github.com/ringjob/ringjob/internal/kind"
)

// JobCatchUp is what decides whether a late fire of a fire_once_now job is
// its job's one catch-up (see RunCatchUpState).
type JobCatchUp struct {
	JobID int64
	// NextFireMs is the job's next fire time not yet recorded as a run (0:
	// the job fires no more). When it is due, the schedule loop has fires of
	// the job still to record, and it fires them itself (late, or one
	// catch-up under fire_once_now).
	NextFireMs int64
	// LatestDueMs is the latest fire time of the job's schedule fires and
	// catch-ups (first attempts) recorded with a fire time at or before
	// the asked time, whatever their state (0: none).
	LatestDueMs int64
}

// RunCatchUpState reads, for each job, its next fire time and the latest of
// its schedule fires due at or before nowMs, so a replica holding a late
// fire can tell whether a later fire of the same job already exists or is
// still to come (then the late one is not the catch-up). Jobs that no
// longer exist are missing from the map.
func (s *Store) RunCatchUpState(ctx context.Context, jobIDs []int64, nowMs int64) (map[int64]JobCatchUp, error) {
	out := make(map[int64]JobCatchUp, len(jobIDs))
	for _, chunk := range chunkInt64(uniqueInt64(jobIDs), 500) {
		args := []any{nowMs, kind.TriggerSchedule, kind.TriggerMisfire}
		for _, id := range chunk {
			args = append(args, id)
		}
		err := s.retry(ctx, true, func() error {
			rows, err := s.db.QueryContext(ctx, "SELECT j.id, j.next_fire_ms, COALESCE((SELECT MAX(r.scheduled_ms) FROM runs r WHERE r.job_id = j.id AND r.scheduled_ms <= ?"+
				" AND r.attempt = 0 AND r.trigger_type IN (?, ?)), 0) FROM jobs j WHERE j.id IN ("+placeholders(len(chunk))+")", args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var c JobCatchUp
				if err := rows.Scan(&c.JobID, &c.NextFireMs, &c.LatestDueMs); err != nil {
					return err
				}
				out[c.JobID] = c
			}
			return rows.Err()
		})
		if err != nil {
			return nil, fmt.Errorf("read the catch-up state of %d jobs: %w", len(chunk), err)
		}
	}
	return out, nil
}

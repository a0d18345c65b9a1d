package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// RetryRunKeyPrefix starts the idempotency key of a retry run: the failed
// run's id follows, so a failure is retried once.
const RetryRunKeyPrefix = "retry-of-"

// RetryRunKey is the idempotency key of the retry of run id (a run of the
// same job).
func RetryRunKey(id int64) string { return RetryRunKeyPrefix + strconv.FormatInt(id, 10) }

// RunKey is an idempotency key of a job: the primary key of run_keys.
type RunKey struct {
	JobID int64
	Key   string
}

// RunIDsByKeys finds the runs created with these idempotency keys (primary
// key lookups in run_keys); keys with no run are absent from the map.
func (s *Store) RunIDsByKeys(ctx context.Context, keys []RunKey) (map[RunKey]int64, error) {
	out := make(map[RunKey]int64, len(keys))
	const per = 500
	for start := 0; start < len(keys); start += per {
		chunk := keys[start:min(start+per, len(keys))]
		conds := make([]string, len(chunk))
		args := make([]any, 0, 2*len(chunk))
		for i, k := range chunk {
			conds[i] = "(job_id = ? AND idempotency_key = ?)"
			args = append(args, k.JobID, k.Key)
		}
		rows, err := s.db.QueryContext(ctx, "SELECT job_id, idempotency_key, run_id FROM run_keys WHERE run_id > 0 AND ("+strings.Join(conds, " OR ")+")", args...)
		if err != nil {
			return nil, fmt.Errorf("find runs by %d idempotency keys: %w", len(chunk), err)
		}
		for rows.Next() {
			var k RunKey
			var id int64
			if err := rows.Scan(&k.JobID, &k.Key, &id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("find runs by idempotency keys: %w", err)
			}
			out[k] = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("find runs by idempotency keys: %w", err)
		}
	}
	return out, nil
}

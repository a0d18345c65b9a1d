package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"

	"fmt"

	"github.com/ringjob/ringjob/internal/kind"
)

// FailureDelivery is a record owed to a failure destination (migration
// 0087 says when one is made).
type FailureDelivery struct {
	ID          int64
	RunID       int64
	Destination string
	Record      string // the JSON record, as it is sent
	Attempts    int
	NextMs      int64
	DeliveredMs int64 // 0: not yet
	LastError   string
	CreatedMs   int64
}

const deliveryCols = "id, run_id, destination, record, attempts, next_ms, delivered_ms, last_error, created_ms"

func scanDelivery(sc interface{ Scan(...any) error }) (FailureDelivery, error) {
	var d FailureDelivery
	err := sc.Scan(&d.ID, &d.RunID, &d.Destination, &d.Record, &d.Attempts, &d.NextMs, &d.DeliveredMs, &d.LastError, &d.CreatedMs)
	return d, err
}

// FailureDeliveryCreate owes a run's record to a destination, once per run:
// a second call for the same run changes nothing and reports false.
func (s *Store) FailureDeliveryCreate(ctx context.Context, runID int64, destination, record string, nowMs int64) (bool, error) {
	res, err := s.execRetry(ctx, s.d.insertIgnore()+" INTO failure_deliveries (run_id, destination, record, next_ms, created_ms) VALUES (?, ?, ?, ?, ?)",
		runID, destination, record, nowMs, nowMs)
	if err != nil {
		return false, fmt.Errorf("owe the failure record of run %d: %w", runID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("owe the failure record of run %d: rows affected: %w", runID, err)
	}
	return n == 1, nil
}

// FailureDeliveryListDue lists undelivered records whose next try is due
// and that no replica holds a lease on, oldest first.
func (s *Store) FailureDeliveryListDue(ctx context.Context, nowMs int64, limit int) ([]FailureDelivery, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+deliveryCols+" FROM failure_deliveries WHERE delivered_ms = 0 AND next_ms <= ? AND lease_until_ms < ? ORDER BY next_ms, id LIMIT ?",
		nowMs, nowMs, limit)
	if err != nil {
		return nil, fmt.Errorf("list due failure deliveries: %w", err)
	}
	defer rows.Close()
	var out []FailureDelivery
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, fmt.Errorf("read failure delivery: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list due failure deliveries: %w", err)
	}
	return out, nil
}

// FailureDeliveryLease takes a delivery until untilMs, unless it was
// delivered or another replica holds it: only the holder sends it.
func (s *Store) FailureDeliveryLease(ctx context.Context, id, nowMs, untilMs int64) (bool, error) {
	res, err := s.execRetry(ctx, "UPDATE failure_deliveries SET lease_until_ms = ? WHERE id = ? AND delivered_ms = 0 AND lease_until_ms < ?", untilMs, id, nowMs)
	if err != nil {
		return false, fmt.Errorf("lease failure delivery %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("lease failure delivery %d: rows affected: %w", id, err)
	}
	return n == 1, nil
}

// FailureDeliveryDelivered records that the destination took the record.
func (s *Store) FailureDeliveryDelivered(ctx context.Context, id int64, attempts int, nowMs int64) error {
	if _, err := s.execRetry(ctx, "UPDATE failure_deliveries SET delivered_ms = ?, attempts = ?, lease_until_ms = 0, last_error = '' WHERE id = ?", nowMs, attempts, id); err != nil {
		return fmt.Errorf("record failure delivery %d delivered: %w", id, err)
	}
	return nil
}

// FailureDeliveryRetry records a failed try and when to try again.
func (s *Store) FailureDeliveryRetry(ctx context.Context, id int64, attempts int, nextMs int64, lastError string) error {
	if len(lastError) > 1024 {
		lastError = lastError[:1024]
	}
	if _, err := s.execRetry(ctx, "UPDATE failure_deliveries SET attempts = ?, next_ms = ?, lease_until_ms = 0, last_error = ? WHERE id = ?", attempts, nextMs, lastError, id); err != nil {
		return fmt.Errorf("record a failed try of failure delivery %d: %w", id, err)
	}
	return nil
}

// FailureDeliveryPending counts the records not delivered yet.
func (s *Store) FailureDeliveryPending(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM failure_deliveries WHERE delivered_ms = 0").Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending failure deliveries: %w", err)
	}
	return n, nil
}

// FailureDeliveryOfRun reads the delivery owed for a run, if any.
func (s *Store) FailureDeliveryOfRun(ctx context.Context, runID int64) (FailureDelivery, bool, error) {
	d, err := scanDelivery(s.db.QueryRowContext(ctx, "SELECT "+deliveryCols+" FROM failure_deliveries WHERE run_id = ?", runID))
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return FailureDelivery{}, false, nil
		}
		return FailureDelivery{}, false, fmt.Errorf("read the failure delivery of run %d: %w", runID, err)
	}
	return d, true, nil
}

// JobListDeleteAfterCompletion lists stopped jobs that have fired and are
// to be deleted once their schedule has no fire left
// (after_completion = delete); the caller checks the schedule.
func (s *Store) JobListDeleteAfterCompletion(ctx context.Context, limit int) ([]Job, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+jobCols+" FROM jobs WHERE after_completion = ? AND enabled = 0 AND last_fire_ms > 0 ORDER BY id LIMIT ?",
		kind.AfterCompletionDelete, limit)
	if err != nil {
		return nil, fmt.Errorf("list jobs to delete after completion: %w", err)
	}
	defer rows.Close()
	var out []Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("read job: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// JobDeleteCompleted deletes a completed job (and its runs, as a delete by
// hand does) with an audit event, unless it is at another version than
// read, or one of its runs still has work to follow: not final, a
// follow-up pending (retry, child, alarm) or a failure record not
// delivered. It reports whether it deleted the job.
func (s *Store) JobDeleteCompleted(ctx context.Context, job Job, nowMs int64) (bool, error) {
	deleted := false
	err := s.Tx(ctx, func(tx *Store) error {
		var busy int
		if err := tx.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs WHERE job_id = ? AND (state IN (?, ?, ?) OR followup IN (?, ?))`,
			job.ID, kind.RunScheduled, kind.RunDispatching, kind.RunRunning, followupPending, followupAlarm).Scan(&busy); err != nil {
			return fmt.Errorf("delete completed job %d: look for unfinished runs: %w", job.ID, err)
		}
		if busy == 0 {
			if err := tx.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM failure_deliveries d JOIN runs r ON r.id = d.run_id
 WHERE r.job_id = ? AND d.delivered_ms = 0`, job.ID).Scan(&busy); err != nil {
				return fmt.Errorf("delete completed job %d: look for undelivered failure records: %w", job.ID, err)
			}
		}
		if busy > 0 {
			return nil
		}
		if err := tx.jobDelete(ctx, job.ID, job.Version); err != nil {
			if errors.Is(err, ErrVersionMismatch) || errors.Is(err, ErrNotFound) {
				return nil // edited or deleted meanwhile: not this sweep's to delete
			}
			return err
		}
		deleted = true
		changes, err := json.Marshal(map[string]string{"name": job.Name, "reason": "after_completion: delete (the schedule has no fire left)"})
		if err != nil {
			return fmt.Errorf("delete completed job %d: %w", job.ID, err)
		}
		return tx.AuditAppend(ctx, AuditEvent{AtMs: nowMs, Principal: "scheduler", Action: "job.delete", ObjectType: "job",
			ObjectID: strconv.FormatInt(job.ID, 10), GroupID: job.GroupID, Changes: string(changes)})
	})
	return deleted, err
}

package store

import (
	"context"
	"fmt"
	"strings"
)

// Batch methods of a jobs-as-code apply (service/apply.go): one read of the
// current state and multi-row writes, so a plan of 10,000 jobs is a few
// dozen statements in one transaction.

// JobListGroups reads every job of the given groups, ordered by id. In a
// transaction on MySQL or PostgreSQL, lock (FOR UPDATE) keeps the rows from changing
// until it ends, so a plan checked against them is the plan that is written.
func (s *Store) JobListGroups(ctx context.Context, groupIDs []int64, lock bool) ([]Job, error) {
	var out []Job
	suffix := ""
	if lock && s.inTx && s.d.rowLocks() {
		suffix = " FOR UPDATE"
	}
	for _, chunk := range chunkInt64(groupIDs, 500) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := s.db.QueryContext(ctx, "SELECT "+jobCols+" FROM jobs WHERE group_id IN ("+placeholders(len(chunk))+") ORDER BY id"+suffix, args...)
		if err != nil {
			return nil, fmt.Errorf("read the jobs of %d groups: %w", len(chunk), err)
		}
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("read jobs: %w", err)
			}
			out = append(out, j)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read jobs: %w", err)
		}
	}
	return out, nil
}

// jobInsertCols are the columns JobInsertMany writes (child_job_ids is set
// afterwards with JobSetChildren, once every new job has its id).
const jobInsertCols = jobFieldCols + ", enabled, next_fire_ms, created_ms, updated_ms"

var jobInsertArgs = jobFieldCount + 4

// JobInsertMany inserts jobs with multi-row INSERTs and returns their ids in
// the order given, read back by their (group, name) identity. Each job's
// lock partition is its id modulo the number of lock partitions, as
// JobCreate assigns it. ChildJobIDs are written as given (ids that exist).
// A taken name is ErrConflict.
func (s *Store) JobInsertMany(ctx context.Context, ps []JobCreateParams) ([]int64, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	per := min(500, s.d.maxParams()/jobInsertArgs)
	row := "(" + placeholders(jobInsertArgs) + ")"
	for start := 0; start < len(ps); start += per {
		chunk := ps[start:min(start+per, len(ps))]
		args := make([]any, 0, len(chunk)*jobInsertArgs)
		rows := make([]string, len(chunk))
		for i, p := range chunk {
			f := p.JobFields
			next := p.NextFireMs
			if !p.Enabled {
				next = 0
			}
			rows[i] = row
			args = append(append(args, f.args()...), boolInt(p.Enabled), next, p.NowMs, p.NowMs)
		}
		if _, err := s.db.ExecContext(ctx, "INSERT INTO jobs ("+jobInsertCols+") VALUES "+strings.Join(rows, ", "), args...); err != nil {
			if s.d.isDuplicate(err) {
				return nil, fmt.Errorf("insert %d jobs: a job name is taken: %w", len(chunk), ErrConflict)
			}
			return nil, fmt.Errorf("insert %d jobs: %w", len(chunk), err)
		}
	}
	// Read the ids back by identity.
	type key struct {
		group int64
		name  string
	}
	byGroup := map[int64][]string{}
	for _, p := range ps {
		byGroup[p.GroupID] = append(byGroup[p.GroupID], p.Name)
	}
	ids := make(map[key]int64, len(ps))
	for g, names := range byGroup {
		for start := 0; start < len(names); start += 1000 {
			chunk := names[start:min(start+1000, len(names))]
			args := make([]any, 0, len(chunk)+1)
			args = append(args, g)
			for _, n := range chunk {
				args = append(args, n)
			}
			rows, err := s.db.QueryContext(ctx, "SELECT id, name FROM jobs WHERE group_id = ? AND name IN ("+placeholders(len(chunk))+")", args...)
			if err != nil {
				return nil, fmt.Errorf("read the ids of new jobs: %w", err)
			}
			for rows.Next() {
				var id int64
				var name string
				if err := rows.Scan(&id, &name); err != nil {
					rows.Close()
					return nil, fmt.Errorf("read the ids of new jobs: %w", err)
				}
				ids[key{g, name}] = id
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, fmt.Errorf("read the ids of new jobs: %w", err)
			}
		}
	}
	out := make([]int64, len(ps))
	for i, p := range ps {
		id, ok := ids[key{p.GroupID, p.Name}]
		if !ok {
			return nil, fmt.Errorf("insert job %q: not found after the insert", p.Name)
		}
		out[i] = id
	}
	var parts int64
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM lock_partitions").Scan(&parts); err != nil {
		return nil, fmt.Errorf("insert jobs: count lock partitions: %w", err)
	}
	if parts > 1 {
		for _, chunk := range chunkInt64(out, 1000) {
			args := make([]any, 0, len(chunk)+1)
			args = append(args, parts)
			for _, id := range chunk {
				args = append(args, id)
			}
			if _, err := s.db.ExecContext(ctx, "UPDATE jobs SET lock_partition = id % ? WHERE id IN ("+placeholders(len(chunk))+")", args...); err != nil {
				return nil, fmt.Errorf("insert jobs: set lock partitions: %w", err)
			}
		}
	}
	return out, nil
}

// JobSetChildrenMany sets the child jobs of jobs (job id -> children), a
// few hundred jobs per statement.
func (s *Store) JobSetChildrenMany(ctx context.Context, children map[int64][]int64) error {
	ids := make([]int64, 0, len(children))
	for id := range children {
		ids = append(ids, id)
	}
	for _, chunk := range chunkInt64(ids, 500) {
		var q strings.Builder
		args := make([]any, 0, 3*len(chunk))
		q.WriteString("UPDATE jobs SET child_job_ids = CASE id")
		for _, id := range chunk {
			q.WriteString(" WHEN ? THEN ?")
			args = append(args, id, joinIDs(children[id]))
		}
		q.WriteString(" END WHERE id IN (" + placeholders(len(chunk)) + ")")
		for _, id := range chunk {
			args = append(args, id)
		}
		if _, err := s.db.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("set the child jobs of %d jobs: %w", len(chunk), err)
		}
	}
	return nil
}

// JobReplaceParams replace a job's fields without reading it back.
type JobReplaceParams struct {
	ID int64
	JobFields
	Enabled bool
	// NextFireMs, when not nil, is the job's new next fire time (0 = none);
	// nil leaves it to the scheduler (the schedule and state did not change).
	NextFireMs *int64
	NowMs      int64
}

// JobReplace replaces a job's fields; a job that no longer exists is ErrNotFound.
func (s *Store) JobReplace(ctx context.Context, p JobReplaceParams) error {
	f := p.JobFields
	q := "UPDATE jobs SET " + jobFieldAssign + ", enabled = ?, updated_ms = ?"
	args := append(f.args(), boolInt(p.Enabled), p.NowMs)
	if p.NextFireMs != nil {
		q += ", next_fire_ms = ?"
		args = append(args, *p.NextFireMs)
	}
	res, err := s.db.ExecContext(ctx, q+" WHERE id = ?", append(args, p.ID)...)
	if err != nil {
		return s.jobWriteError(err, f, fmt.Sprintf("update job %d", p.ID))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, err := s.JobGet(ctx, p.ID); err != nil {
			return err
		}
	}
	return nil
}

// JobDeleteMany deletes jobs and what belongs to them (see JobDelete).
func (s *Store) JobDeleteMany(ctx context.Context, ids []int64) error {
	return s.Tx(ctx, func(tx *Store) error {
		for _, chunk := range chunkInt64(ids, 1000) {
			args := make([]any, len(chunk))
			for i, id := range chunk {
				args[i] = id
			}
			in := "(" + placeholders(len(chunk)) + ")"
			if _, err := tx.db.ExecContext(ctx, "DELETE FROM jobs WHERE id IN "+in, args...); err != nil {
				return fmt.Errorf("delete %d jobs: %w", len(chunk), err)
			}
			for _, q := range tx.jobDeleteCascade() {
				q = strings.ReplaceAll(q, "job_id = ?", "job_id IN "+in) // one job_id per statement
				if _, err := tx.db.ExecContext(ctx, q, args...); err != nil {
					return fmt.Errorf("delete %d jobs: %w", len(chunk), err)
				}
			}
		}
		return nil
	})
}

// AuditAppendMany writes events with multi-row INSERTs; like AuditAppend,
// call it on the Store of the change's transaction.
func (s *Store) AuditAppendMany(ctx context.Context, es []AuditEvent) error {
	const cols = 11
	per := min(500, s.d.maxParams()/cols)
	row := "(" + placeholders(cols) + ")"
	for start := 0; start < len(es); start += per {
		chunk := es[start:min(start+per, len(es))]
		args := make([]any, 0, len(chunk)*cols)
		rows := make([]string, len(chunk))
		for i, e := range chunk {
			if e.Changes == "" {
				e.Changes = "{}"
			}
			rows[i] = row
			args = append(args, e.AtMs, e.Principal, e.PrincipalID, e.TokenName, e.ClientAddr, e.RequestID, e.Action, e.ObjectType, e.ObjectID, e.GroupID, e.Changes)
		}
		if _, err := s.db.ExecContext(ctx, `INSERT INTO audit_events (at_ms, principal, principal_id, token_name, client_addr, request_id, action, object_type, object_id, group_id, changes)
 VALUES `+strings.Join(rows, ", "), args...); err != nil {
			return fmt.Errorf("append %d audit events: %w", len(chunk), err)
		}
	}
	return nil
}

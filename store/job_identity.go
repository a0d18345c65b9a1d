package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// maxDuplicateReport caps how many duplicate job names the identity
// migration lists in its error.
const maxDuplicateReport = 50

// migrateJobNamesUnique makes (group_id, name) the identity of a job. Jobs
// that share a name in one group make it refuse, listing them with the SQL
// that renames all but the oldest, so the operator decides which job keeps
// its name (scripts and job files refer to jobs by name). See
// docs/release-notes.md.
func migrateJobNamesUnique(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT j.group_id, COALESCE(g.app_name, ''), j.name, j.id FROM jobs j
 LEFT JOIN job_groups g ON g.id = j.group_id
 WHERE EXISTS (SELECT 1 FROM jobs d WHERE d.group_id = j.group_id AND d.name = j.name AND d.id <> j.id)
 ORDER BY j.group_id, j.name, j.id`)
	if err != nil {
		return fmt.Errorf("find jobs sharing a name in one group: %w", err)
	}
	type dup struct {
		app, name string
		ids       []int64
	}
	var dups []*dup
	for rows.Next() {
		var gid, id int64
		var app, name string
		if err := rows.Scan(&gid, &app, &name, &id); err != nil {
			rows.Close()
			return fmt.Errorf("find jobs sharing a name in one group: %w", err)
		}
		if app == "" {
			app = fmt.Sprintf("group %d", gid)
		}
		if n := len(dups); n > 0 && dups[n-1].app == app && dups[n-1].name == name {
			dups[n-1].ids = append(dups[n-1].ids, id)
			continue
		}
		dups = append(dups, &dup{app: app, name: name, ids: []int64{id}})
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("find jobs sharing a name in one group: %w", err)
	}
	if len(dups) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "job names must be unique within a group, and %d name(s) are used by several jobs:\n", len(dups))
		var rename []string
		for i, d := range dups {
			if i < maxDuplicateReport {
				fmt.Fprintf(&b, "  group %q, job %q: ids %s\n", d.app, d.name, joinIDs(d.ids))
			}
			for _, id := range d.ids[1:] {
				rename = append(rename, fmt.Sprint(id))
			}
		}
		fmt.Fprintf(&b, "rename all but one of each (PUT /api/v1/jobs/{id} on the old release), or keep the oldest name and suffix the others with their id:\n"+
			"  UPDATE jobs SET name = CONCAT(name, '-', id) WHERE id IN (%s);\n"+
			"then run `ringjob migrate` again", strings.Join(rename, ", "))
		return errors.New(b.String())
	}
	if _, err := tx.ExecContext(ctx, "CREATE UNIQUE INDEX jobs_group_name ON jobs (group_id, name)"); err != nil {
		return fmt.Errorf("create unique index jobs_group_name: %w", err)
	}
	return nil
}

// JobGetByName reads a job by its identity: its group's app name and its name.
func (s *Store) JobGetByName(ctx context.Context, appName, name string) (Job, error) {
	j, err := scanJob(s.db.QueryRowContext(ctx, "SELECT "+jobCols+" FROM jobs WHERE group_id = (SELECT id FROM job_groups WHERE app_name = ?) AND name = ?", appName, name))
	if errors.Is(err, sql.ErrNoRows) {
		return Job{}, fmt.Errorf("job %q in group %q: %w", name, appName, ErrNotFound)
	}
	if err != nil {
		return Job{}, fmt.Errorf("read job %q in group %q: %w", name, appName, err)
	}
	return j, nil
}

// TriggerFingerprintClaim records the fingerprint of the first request that
// used an idempotency key for a job, and returns the fingerprint recorded
// for that key (fp itself when this request was first). A fingerprint left
// behind by a run that retention has removed is replaced.
func (s *Store) TriggerFingerprintClaim(ctx context.Context, jobID int64, key, fp string, nowMs int64) (string, error) {
	res, err := s.db.ExecContext(ctx, s.d.insertIgnore()+" INTO trigger_fingerprints (job_id, idempotency_key, fingerprint, created_ms) VALUES (?, ?, ?, ?)",
		jobID, key, fp, nowMs)
	if err != nil {
		return "", fmt.Errorf("record idempotency key of job %d: %w", jobID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return fp, nil
	}
	var got string
	if err := s.db.QueryRowContext(ctx, "SELECT fingerprint FROM trigger_fingerprints WHERE job_id = ? AND idempotency_key = ?", jobID, key).Scan(&got); err != nil {
		return "", fmt.Errorf("read idempotency key of job %d: %w", jobID, err)
	}
	if got == fp {
		return got, nil
	}
	var runs int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM run_keys WHERE job_id = ? AND idempotency_key = ?", jobID, key).Scan(&runs); err != nil {
		return "", fmt.Errorf("read idempotency key of job %d: %w", jobID, err)
	}
	if runs > 0 {
		return got, nil
	}
	// The key's run is gone: the key is free again.
	if _, err := s.db.ExecContext(ctx, "UPDATE trigger_fingerprints SET fingerprint = ?, created_ms = ? WHERE job_id = ? AND idempotency_key = ?", fp, nowMs, jobID, key); err != nil {
		return "", fmt.Errorf("record idempotency key of job %d: %w", jobID, err)
	}
	return fp, nil
}

// GroupIDByAppName finds a group's id by its app name.
func (s *Store) GroupIDByAppName(ctx context.Context, appName string) (int64, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, "SELECT id FROM job_groups WHERE app_name = ?", appName).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("group %q: %w", appName, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("read group %q: %w", appName, err)
	}
	return id, nil
}

// JobName is a job's identity: its name and its group's app name.
type JobName struct {
	Name    string
	AppName string
	GroupID int64
}

// JobNamesGet reads the identities of jobs by id in one query per 1000 ids
// (a page of runs names its jobs without a query per run); missing ids are
// absent from the map.
func (s *Store) JobNamesGet(ctx context.Context, ids []int64) (map[int64]JobName, error) {
	out := make(map[int64]JobName, len(ids))
	for _, chunk := range chunkInt64(ids, 1000) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := s.db.QueryContext(ctx, "SELECT j.id, j.name, COALESCE(g.app_name, ''), j.group_id FROM jobs j LEFT JOIN job_groups g ON g.id = j.group_id WHERE j.id IN ("+placeholders(len(chunk))+")", args...)
		if err != nil {
			return nil, fmt.Errorf("read the names of %d jobs: %w", len(chunk), err)
		}
		for rows.Next() {
			var id int64
			var n JobName
			if err := rows.Scan(&id, &n.Name, &n.AppName, &n.GroupID); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read job names: %w", err)
			}
			out[id] = n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read job names: %w", err)
		}
	}
	return out, nil
}

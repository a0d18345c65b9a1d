package store

import (
	"context"
	"fmt"
	"strings"
)

// Queries the service layer (service/) needs beyond the scheduler's.

// GroupListPageParams page through groups by id.
type GroupListPageParams struct {
	AfterID int64 // groups with a larger id
	Limit   int   // 1..1000; other values mean 100
	// OnlyGroups, when not nil, keeps only these group ids (empty: none).
	OnlyGroups []int64
	// NamePrefix keeps the groups whose app name or title starts with it,
	// ignoring case; "" keeps all.
	NamePrefix string
}

// GroupListPage lists groups by id, after AfterID.
func (s *Store) GroupListPage(ctx context.Context, p GroupListPageParams) ([]Group, error) {
	limit := p.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	q, args := "SELECT "+groupCols+" FROM job_groups WHERE id > ?", []any{p.AfterID}
	q, args = onlyGroups(q, args, "id", p.OnlyGroups)
	if p.NamePrefix != "" {
		like := likeEscape(strings.ToLower(p.NamePrefix)) + "%"
		q += " AND (app_name LIKE ? ESCAPE '!' OR LOWER(title) LIKE ? ESCAPE '!')"
		args = append(args, like, like)
	}
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY id LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	defer rows.Close()
	var out []Group
	for rows.Next() {
		g, err := s.scanGroup(rows)
		if err != nil {
			return nil, fmt.Errorf("list groups: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// JobUpdateFieldsParams change a job's editable fields but not its
// scheduling state.
type JobUpdateFieldsParams struct {
	ID int64
	// IfVersion: as JobUpdateParams.IfVersion.
	IfVersion int64
	JobFields
	NowMs int64
}

// JobUpdateFields replaces a job's editable fields and leaves enabled and
// next_fire_ms alone, so an edit that keeps the schedule never races the
// pre-read loop advancing the next fire time. Use it only when the schedule
// (type, conf, time zone) is unchanged; otherwise use JobUpdate with a fresh
// next fire time.
func (s *Store) JobUpdateFields(ctx context.Context, p JobUpdateFieldsParams) (Job, error) {
	f := p.JobFields
	res, err := s.db.ExecContext(ctx, "UPDATE jobs SET "+jobFieldAssign+", updated_ms = ?, version = version + 1 WHERE id = ?"+ifVersionCond,
		append(f.args(), p.NowMs, p.ID, p.IfVersion, p.IfVersion)...)
	if err != nil {
		return Job{}, s.jobWriteError(err, f, fmt.Sprintf("update job %d", p.ID))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if err := s.versionMismatchOr(ctx, "jobs", "job", p.ID, p.IfVersion); err != nil {
			return Job{}, err
		}
	}
	return s.JobGet(ctx, p.ID)
}

// onlyGroups adds "AND col IN (ids)" to a query when ids is not nil; an
// empty, non-nil list matches nothing.
func onlyGroups(q string, args []any, col string, ids []int64) (string, []any) {
	if ids == nil {
		return q, args
	}
	if len(ids) == 0 {
		return q + " AND 1=0", args
	}
	q += " AND " + col + " IN (" + placeholders(len(ids)) + ")"
	for _, id := range ids {
		args = append(args, id)
	}
	return q, args
}

// RunMaxID is the largest run id (0 without runs): where a bounded scan of
// runs by id starts.
func (s *Store) RunMaxID(ctx context.Context) (int64, error) {
	var id int64
	if err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM runs").Scan(&id); err != nil {
		return 0, fmt.Errorf("read the largest run id: %w", err)
	}
	return id, nil
}

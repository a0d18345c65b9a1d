package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
)

// JobParent is a job that names another job among its children.
type JobParent struct {
	ID      int64
	GroupID int64
	AppName string // its group's app name
	Name    string
}

// JobParentsOf lists the jobs whose child_job_ids hold id, by id. The
// column is a comma-joined list, so a LIKE on the id's digits narrows the
// rows in SQL and the exact match is made here (job 1 is not a child of a
// job whose children are 12,31).
func (s *Store) JobParentsOf(ctx context.Context, id int64) ([]JobParent, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT j.id, j.group_id, COALESCE(g.app_name, ''), j.name, j.child_job_ids FROM jobs j
 LEFT JOIN job_groups g ON g.id = j.group_id
 WHERE j.child_job_ids LIKE ? ORDER BY j.id`, "%"+strconv.FormatInt(id, 10)+"%")
	if err != nil {
		return nil, fmt.Errorf("find the parents of job %d: %w", id, err)
	}
	defer rows.Close()
	var out []JobParent
	for rows.Next() {
		var p JobParent
		var children string
		if err := rows.Scan(&p.ID, &p.GroupID, &p.AppName, &p.Name, &children); err != nil {
			return nil, fmt.Errorf("find the parents of job %d: %w", id, err)
		}
		if slices.Contains(splitIDs(children), id) {
			out = append(out, p)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find the parents of job %d: %w", id, err)
	}
	return out, nil
}

package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// GroupCreateParams are the fields of a new group.
type GroupCreateParams struct {
	AppName string
	Title   string
	Members []string
	GroupExecutorSettings
	// FailureDestination receives the records of its jobs' failed runs
	// that have no destination of their own ("" = none).
	FailureDestination string
	NowMs              int64
}

// GroupCreate inserts a group. A taken app name is ErrConflict.
func (s *Store) GroupCreate(ctx context.Context, p GroupCreateParams) (Group, error) {
	members, err := json.Marshal(nonNil(p.Members))
	if err != nil {
		return Group{}, fmt.Errorf("encode group members: %w", err)
	}
	token, err := s.sealGroupToken(p.AppName, p.AccessToken)
	if err != nil {
		return Group{}, err
	}
	res, err := s.db.ExecContext(ctx, "INSERT INTO job_groups (app_name, title, members, access_token, protocol, accept_registrations, failure_destination, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		p.AppName, p.Title, string(members), token, p.Protocol, boolInt(p.AcceptRegistrations), p.FailureDestination, p.NowMs, p.NowMs)
	if err != nil {
		if s.d.isDuplicate(err) {
			return Group{}, fmt.Errorf("group app_name %q: %w", p.AppName, ErrConflict)
		}
		return Group{}, fmt.Errorf("insert group %q: %w", p.AppName, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Group{}, fmt.Errorf("insert group %q: read id: %w", p.AppName, err)
	}
	return s.GroupGet(ctx, id)
}

// GroupUpdateParams are the editable fields of a group (the app name is fixed).
type GroupUpdateParams struct {
	ID int64
	// IfVersion makes the write conditional: it changes nothing and fails
	// with ErrVersionMismatch unless the group is at this version (0: any).
	IfVersion int64
	Title     string
	Members   []string
	GroupExecutorSettings
	FailureDestination string
	NowMs              int64
}

// GroupUpdate changes a group's title and members.
func (s *Store) GroupUpdate(ctx context.Context, p GroupUpdateParams) (Group, error) {
	members, err := json.Marshal(nonNil(p.Members))
	if err != nil {
		return Group{}, fmt.Errorf("encode group members: %w", err)
	}
	token, err := s.sealGroupTokenOf(ctx, p.ID, p.AccessToken)
	if err != nil {
		return Group{}, err
	}
	res, err := s.db.ExecContext(ctx, "UPDATE job_groups SET title = ?, members = ?, access_token = ?, protocol = ?, accept_registrations = ?, failure_destination = ?, updated_ms = ?, version = version + 1 WHERE id = ?"+ifVersionCond,
		p.Title, string(members), token, p.Protocol, boolInt(p.AcceptRegistrations), p.FailureDestination, p.NowMs, p.ID, p.IfVersion, p.IfVersion)
	if err != nil {
		return Group{}, fmt.Errorf("update group %d: %w", p.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if err := s.versionMismatchOr(ctx, "job_groups", "group", p.ID, p.IfVersion); err != nil {
			return Group{}, err
		}
	}
	return s.GroupGet(ctx, p.ID)
}

const groupCols = "id, app_name, title, members, access_token, protocol, accept_registrations, created_ms, updated_ms, version, failure_destination"

func (s *Store) scanGroup(sc interface{ Scan(...any) error }) (Group, error) {
	var g Group
	var members string
	var accept int
	if err := sc.Scan(&g.ID, &g.AppName, &g.Title, &members, &g.AccessToken, &g.Protocol, &accept, &g.CreatedMs, &g.UpdatedMs, &g.Version, &g.FailureDestination); err != nil {
		return Group{}, err
	}
	g.AcceptRegistrations = accept != 0
	var err error
	if g.AccessToken, err = s.box.Open(g.AccessToken, groupTokenAAD(g.AppName)); err != nil {
		return Group{}, fmt.Errorf("executor token of group %s: %w", g.AppName, err)
	}
	if err := json.Unmarshal([]byte(members), &g.Members); err != nil {
		return Group{}, fmt.Errorf("decode members of group %d: %w", g.ID, err)
	}
	return g, nil
}

// GroupGet reads a group by id.
func (s *Store) GroupGet(ctx context.Context, id int64) (Group, error) {
	g, err := s.scanGroup(s.db.QueryRowContext(ctx, "SELECT "+groupCols+" FROM job_groups WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Group{}, fmt.Errorf("group %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Group{}, fmt.Errorf("read group %d: %w", id, err)
	}
	return g, nil
}

// GroupList lists all groups by id.
func (s *Store) GroupList(ctx context.Context) ([]Group, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+groupCols+" FROM job_groups ORDER BY id")
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

// GroupDelete deletes a group that has no jobs.
func (s *Store) GroupDelete(ctx context.Context, id int64) error {
	return s.GroupDeleteIf(ctx, id, 0)
}

// GroupDeleteIf deletes a group that has no jobs if it is at version
// ifVersion (0: any), else fails with ErrVersionMismatch.
func (s *Store) GroupDeleteIf(ctx context.Context, id, ifVersion int64) error {
	var jobs int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM jobs WHERE group_id = ?", id).Scan(&jobs); err != nil {
		return fmt.Errorf("delete group %d: count jobs: %w", id, err)
	}
	if jobs > 0 {
		return fmt.Errorf("group %d still has %d job(s); delete or move them first: %w", id, jobs, ErrConflict)
	}
	res, err := s.db.ExecContext(ctx, "DELETE FROM job_groups WHERE id = ?"+ifVersionCond, id, ifVersion, ifVersion)
	if err != nil {
		return fmt.Errorf("delete group %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if err := s.versionMismatchOr(ctx, "job_groups", "group", id, ifVersion); err != nil {
			return err
		}
		return fmt.Errorf("group %d: %w", id, ErrNotFound)
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

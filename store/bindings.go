package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// RoleBinding grants Role on GroupID (0 for admin) to a principal or to the
// members of an SSO group.
type RoleBinding struct {
	ID          int64
	Role        string
	GroupID     int64
	PrincipalID int64  // 0 when SSOGroup is set
	SSOGroup    string // "" when PrincipalID is set
	CreatedMs   int64
}

const bindingCols = "id, role, group_id, principal_id, sso_group, created_ms"

func scanBinding(sc interface{ Scan(...any) error }) (RoleBinding, error) {
	var b RoleBinding
	err := sc.Scan(&b.ID, &b.Role, &b.GroupID, &b.PrincipalID, &b.SSOGroup, &b.CreatedMs)
	return b, err
}

// BindingCreate stores a binding. The same binding twice is ErrConflict.
func (s *Store) BindingCreate(ctx context.Context, b RoleBinding) (RoleBinding, error) {
	res, err := s.db.ExecContext(ctx, "INSERT INTO role_bindings (role, group_id, principal_id, sso_group, created_ms) VALUES (?, ?, ?, ?, ?)",
		b.Role, b.GroupID, b.PrincipalID, b.SSOGroup, b.CreatedMs)
	if err != nil {
		if s.d.isDuplicate(err) {
			return RoleBinding{}, fmt.Errorf("this role binding exists already: %w", ErrConflict)
		}
		return RoleBinding{}, fmt.Errorf("insert role binding: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return RoleBinding{}, fmt.Errorf("insert role binding: read id: %w", err)
	}
	return s.BindingGet(ctx, id)
}

// BindingGet reads a binding.
func (s *Store) BindingGet(ctx context.Context, id int64) (RoleBinding, error) {
	b, err := scanBinding(s.db.QueryRowContext(ctx, "SELECT "+bindingCols+" FROM role_bindings WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return RoleBinding{}, fmt.Errorf("role binding %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return RoleBinding{}, fmt.Errorf("read role binding %d: %w", id, err)
	}
	return b, nil
}

// BindingList lists every binding by id (there are at most a few thousand).
func (s *Store) BindingList(ctx context.Context) ([]RoleBinding, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+bindingCols+" FROM role_bindings ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("list role bindings: %w", err)
	}
	defer rows.Close()
	var out []RoleBinding
	for rows.Next() {
		b, err := scanBinding(rows)
		if err != nil {
			return nil, fmt.Errorf("list role bindings: %w", err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// NamedBinding is a binding with the names of what it binds, for people.
type NamedBinding struct {
	RoleBinding
	PrincipalName string // "" for an SSO group binding
	PrincipalKind string
	GroupAppName  string // "" for admin (no group)
}

// BindingListNamed lists every binding, by id, with the names of its
// principal and group (the console's list; the credential cache reads
// BindingList).
func (s *Store) BindingListNamed(ctx context.Context) ([]NamedBinding, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT b.id, b.role, b.group_id, b.principal_id, b.sso_group, b.created_ms,
		COALESCE(p.name, ''), COALESCE(p.kind, ''), COALESCE(g.app_name, '')
		FROM role_bindings b LEFT JOIN principals p ON p.id = b.principal_id LEFT JOIN job_groups g ON g.id = b.group_id ORDER BY b.id`)
	if err != nil {
		return nil, fmt.Errorf("list role bindings: %w", err)
	}
	defer rows.Close()
	var out []NamedBinding
	for rows.Next() {
		var b NamedBinding
		if err := rows.Scan(&b.ID, &b.Role, &b.GroupID, &b.PrincipalID, &b.SSOGroup, &b.CreatedMs, &b.PrincipalName, &b.PrincipalKind, &b.GroupAppName); err != nil {
			return nil, fmt.Errorf("list role bindings: %w", err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// BindingDelete deletes a binding.
func (s *Store) BindingDelete(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, "DELETE FROM role_bindings WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("delete role binding %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("role binding %d: %w", id, ErrNotFound)
	}
	return nil
}

// BindingDeleteGroup deletes the bindings on a group (when it is deleted).
func (s *Store) BindingDeleteGroup(ctx context.Context, groupID int64) error {
	if _, err := s.db.ExecContext(ctx, "DELETE FROM role_bindings WHERE group_id = ? AND group_id <> 0", groupID); err != nil {
		return fmt.Errorf("delete role bindings of group %d: %w", groupID, err)
	}
	return nil
}

// BindingCountAdminUsers counts the enabled users holding admin through a
// direct binding: the ones who can always get in.
func (s *Store) BindingCountAdminUsers(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(DISTINCT b.principal_id) FROM role_bindings b JOIN principals p ON p.id = b.principal_id
 WHERE b.role = 'admin' AND p.kind = 'user' AND NOT EXISTS (SELECT 1 FROM principal_disabled d WHERE d.principal_id = p.id)`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count admin users: %w", err)
	}
	return n, nil
}

// AuthVersion reads the version of the credentials and bindings: it grows
// with every change, so replicas drop their caches when it moves.
func (s *Store) AuthVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.db.QueryRowContext(ctx, "SELECT version FROM auth_version WHERE id = 1").Scan(&v); err != nil {
		return 0, fmt.Errorf("read auth version: %w", err)
	}
	return v, nil
}

// AuthVersionBump moves the version on; call it in the transaction of the
// change.
func (s *Store) AuthVersionBump(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, "UPDATE auth_version SET version = version + 1 WHERE id = 1"); err != nil {
		return fmt.Errorf("bump auth version: %w", err)
	}
	return nil
}

// GroupOfJob returns the group of a job (ErrNotFound when there is none).
func (s *Store) GroupOfJob(ctx context.Context, id int64) (int64, error) {
	var g int64
	err := s.db.QueryRowContext(ctx, "SELECT group_id FROM jobs WHERE id = ?", id).Scan(&g)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("read the group of job %d: %w", id, err)
	}
	return g, nil
}

// GroupOfRun returns the group of a run (ErrNotFound when there is none).
func (s *Store) GroupOfRun(ctx context.Context, id int64) (int64, error) {
	var g int64
	err := s.db.QueryRowContext(ctx, "SELECT group_id FROM runs WHERE id = ?", id).Scan(&g)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("read the group of run %d: %w", id, err)
	}
	return g, nil
}

package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ringjob/ringjob/internal/principalname"
)

// Principal kinds and sources as stored.
const (
	PrincipalUser    = "user"
	PrincipalService = "service"
	SourceLocal      = "local"
	SourceOIDC       = "oidc"
)

// Principal is a user or a service account as stored. PasswordHash is the
// argon2id hash ("" = no password: SSO users and service accounts).
type Principal struct {
	ID           int64
	Name         string
	Kind         string // PrincipalUser or PrincipalService
	Source       string // SourceLocal or SourceOIDC
	Email        string
	PasswordHash string
	SSOSubject   string
	SSOGroups    []string // the groups claim at the last SSO login
	CreatedMs    int64
	UpdatedMs    int64
	LastLoginMs  int64
	DisabledMs   int64 // 0 = enabled
}

// PrincipalCreateParams are the fields of a new principal.
type PrincipalCreateParams struct {
	Name, Kind, Source, Email, PasswordHash, SSOSubject string
	SSOGroups                                           []string
	NowMs                                               int64
}

// principalCols are read FROM principalFrom: a principal with whether it
// is disabled (principal_disabled).
const principalCols = "p.id, p.name, p.kind, p.source, p.email, p.password_hash, p.sso_subject, p.sso_groups, p.created_ms, p.updated_ms, p.last_login_ms, COALESCE(d.disabled_ms, 0)"

const principalFrom = "principals p LEFT JOIN principal_disabled d ON d.principal_id = p.id"

func scanPrincipal(sc interface{ Scan(...any) error }) (Principal, error) {
	var p Principal
	var groups string
	if err := sc.Scan(&p.ID, &p.Name, &p.Kind, &p.Source, &p.Email, &p.PasswordHash, &p.SSOSubject, &groups, &p.CreatedMs, &p.UpdatedMs, &p.LastLoginMs, &p.DisabledMs); err != nil {
		return Principal{}, err
	}
	if groups != "" {
		if err := json.Unmarshal([]byte(groups), &p.SSOGroups); err != nil {
			return Principal{}, fmt.Errorf("decode sso groups of principal %d: %w", p.ID, err)
		}
	}
	return p, nil
}

// PrincipalCreate inserts a principal. A taken name is ErrConflict: one
// that compares equal to it by principalname.Key ("Admin" and "admin").
func (s *Store) PrincipalCreate(ctx context.Context, p PrincipalCreateParams) (Principal, error) {
	groups, _ := json.Marshal(nonNil(p.SSOGroups))
	res, err := s.db.ExecContext(ctx, "INSERT INTO principals (name, name_key, kind, source, email, password_hash, sso_subject, sso_groups, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		p.Name, principalname.Key(p.Name), p.Kind, p.Source, p.Email, p.PasswordHash, p.SSOSubject, string(groups), p.NowMs, p.NowMs)
	if err != nil {
		if s.d.isDuplicate(err) {
			return Principal{}, fmt.Errorf("the name %q is taken: %w", p.Name, ErrConflict)
		}
		return Principal{}, fmt.Errorf("insert principal %q: %w", p.Name, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Principal{}, fmt.Errorf("insert principal %q: read id: %w", p.Name, err)
	}
	return s.PrincipalGet(ctx, id)
}

// PrincipalGet reads a principal by id.
func (s *Store) PrincipalGet(ctx context.Context, id int64) (Principal, error) {
	p, err := scanPrincipal(s.db.QueryRowContext(ctx, "SELECT "+principalCols+" FROM "+principalFrom+" WHERE p.id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, fmt.Errorf("principal %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Principal{}, fmt.Errorf("read principal %d: %w", id, err)
	}
	return p, nil
}

// PrincipalNames reads the names of the principals ids, in one query; an id
// with no principal (deleted, or 0 for a server token) is left out.
func (s *Store) PrincipalNames(ctx context.Context, ids []int64) (map[int64]string, error) {
	names := make(map[int64]string, len(ids))
	if len(ids) == 0 {
		return names, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.db.QueryContext(ctx, "SELECT id, name FROM principals WHERE id IN ("+placeholders(len(ids))+")", args...)
	if err != nil {
		return nil, fmt.Errorf("read the names of %d principals: %w", len(ids), err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, fmt.Errorf("read the names of %d principals: %w", len(ids), err)
		}
		names[id] = name
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the names of %d principals: %w", len(ids), err)
	}
	return names, nil
}

// PrincipalByName reads the principal whose name compares equal to name by
// principalname.Key ("ALICE" finds "alice"). A row without a key (written
// by a replica of an earlier release during a rolling upgrade, after
// migration 0086) is found by its exact name.
func (s *Store) PrincipalByName(ctx context.Context, name string) (Principal, error) {
	p, err := scanPrincipal(s.db.QueryRowContext(ctx, "SELECT "+principalCols+" FROM "+principalFrom+" WHERE p.name_key = ?", principalname.Key(name)))
	if errors.Is(err, sql.ErrNoRows) {
		p, err = scanPrincipal(s.db.QueryRowContext(ctx, "SELECT "+principalCols+" FROM "+principalFrom+" WHERE p.name_key IS NULL AND p.name = ?", name))
	}
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, fmt.Errorf("principal %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Principal{}, fmt.Errorf("read principal %q: %w", name, err)
	}
	return p, nil
}

// PrincipalBySSOSubject reads the user an SSO subject ("issuer|sub") logged in as.
func (s *Store) PrincipalBySSOSubject(ctx context.Context, subject string) (Principal, error) {
	p, err := scanPrincipal(s.db.QueryRowContext(ctx, "SELECT "+principalCols+" FROM "+principalFrom+" WHERE p.sso_subject = ? AND p.sso_subject <> ''", subject))
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, fmt.Errorf("sso subject: %w", ErrNotFound)
	}
	if err != nil {
		return Principal{}, fmt.Errorf("read principal by sso subject: %w", err)
	}
	return p, nil
}

// PrincipalListParams page through principals of one kind by id.
type PrincipalListParams struct {
	Kind    string // "" = all
	AfterID int64
	Limit   int
	// NamePrefix keeps the principals whose name starts with it, ignoring
	// case; "" keeps all.
	NamePrefix string
}

// PrincipalList lists principals by id.
func (s *Store) PrincipalList(ctx context.Context, p PrincipalListParams) ([]Principal, error) {
	q := "SELECT " + principalCols + " FROM " + principalFrom + " WHERE p.id > ?"
	args := []any{p.AfterID}
	if p.Kind != "" {
		q += " AND p.kind = ?"
		args = append(args, p.Kind)
	}
	if p.NamePrefix != "" {
		q += " AND LOWER(p.name) LIKE ? ESCAPE '!'"
		args = append(args, likeEscape(strings.ToLower(p.NamePrefix))+"%")
	}
	limit := p.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY p.id LIMIT ?", args...)
	if err != nil {
		return nil, fmt.Errorf("list principals: %w", err)
	}
	defer rows.Close()
	var out []Principal
	for rows.Next() {
		pr, err := scanPrincipal(rows)
		if err != nil {
			return nil, fmt.Errorf("list principals: %w", err)
		}
		out = append(out, pr)
	}
	return out, rows.Err()
}

// PrincipalSetPassword replaces a principal's password hash.
func (s *Store) PrincipalSetPassword(ctx context.Context, id int64, hash string, nowMs int64) error {
	res, err := s.db.ExecContext(ctx, "UPDATE principals SET password_hash = ?, updated_ms = ? WHERE id = ?", hash, nowMs, id)
	if err != nil {
		return fmt.Errorf("set password of principal %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("principal %d: %w", id, ErrNotFound)
	}
	return nil
}

// PrincipalUpdateParams change a principal's profile.
type PrincipalUpdateParams struct {
	ID        int64
	Email     string
	SSOGroups []string
	NowMs     int64
}

// PrincipalUpdate replaces the email and SSO groups of a principal.
func (s *Store) PrincipalUpdate(ctx context.Context, p PrincipalUpdateParams) error {
	groups, _ := json.Marshal(nonNil(p.SSOGroups))
	res, err := s.db.ExecContext(ctx, "UPDATE principals SET email = ?, sso_groups = ?, updated_ms = ? WHERE id = ?", p.Email, string(groups), p.NowMs, p.ID)
	if err != nil {
		return fmt.Errorf("update principal %d: %w", p.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("principal %d: %w", p.ID, ErrNotFound)
	}
	return nil
}

// PrincipalRename renames a principal; a taken name (by principalname.Key,
// another principal's) is ErrConflict.
func (s *Store) PrincipalRename(ctx context.Context, id int64, name string, nowMs int64) error {
	res, err := s.db.ExecContext(ctx, "UPDATE principals SET name = ?, name_key = ?, updated_ms = ? WHERE id = ?", name, principalname.Key(name), nowMs, id)
	if err != nil {
		if s.d.isDuplicate(err) {
			return fmt.Errorf("the name %q is taken: %w", name, ErrConflict)
		}
		return fmt.Errorf("rename principal %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("principal %d: %w", id, ErrNotFound)
	}
	return nil
}

// PrincipalSetEmail replaces a principal's email.
func (s *Store) PrincipalSetEmail(ctx context.Context, id int64, email string, nowMs int64) error {
	if _, err := s.db.ExecContext(ctx, "UPDATE principals SET email = ?, updated_ms = ? WHERE id = ?", email, nowMs, id); err != nil {
		return fmt.Errorf("set email of principal %d: %w", id, err)
	}
	return nil
}

// PrincipalSetDisabled disables a principal (disabledMs > 0, when) or
// enables it (0).
func (s *Store) PrincipalSetDisabled(ctx context.Context, id int64, disabledMs, nowMs int64) error {
	if _, err := s.db.ExecContext(ctx, "DELETE FROM principal_disabled WHERE principal_id = ?", id); err != nil {
		return fmt.Errorf("enable principal %d: %w", id, err)
	}
	if disabledMs != 0 {
		if _, err := s.db.ExecContext(ctx, "INSERT INTO principal_disabled (principal_id, disabled_ms) VALUES (?, ?)", id, disabledMs); err != nil {
			return fmt.Errorf("disable principal %d: %w", id, err)
		}
	}
	if _, err := s.db.ExecContext(ctx, "UPDATE principals SET updated_ms = ? WHERE id = ?", nowMs, id); err != nil {
		return fmt.Errorf("disable principal %d: %w", id, err)
	}
	return nil
}

// PrincipalTouchLogin records a successful login.
func (s *Store) PrincipalTouchLogin(ctx context.Context, id, nowMs int64) error {
	if _, err := s.db.ExecContext(ctx, "UPDATE principals SET last_login_ms = ? WHERE id = ?", nowMs, id); err != nil {
		return fmt.Errorf("record login of principal %d: %w", id, err)
	}
	return nil
}

// PrincipalDelete deletes a principal with its tokens, sessions and role
// bindings.
func (s *Store) PrincipalDelete(ctx context.Context, id int64) error {
	return s.Tx(ctx, func(tx *Store) error {
		res, err := tx.db.ExecContext(ctx, "DELETE FROM principals WHERE id = ?", id)
		if err != nil {
			return fmt.Errorf("delete principal %d: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("principal %d: %w", id, ErrNotFound)
		}
		for _, q := range []string{
			"DELETE FROM api_tokens WHERE principal_id = ?",
			"DELETE FROM sessions WHERE principal_id = ?",
			"DELETE FROM role_bindings WHERE principal_id = ?",
			"DELETE FROM principal_disabled WHERE principal_id = ?",
		} {
			if _, err := tx.db.ExecContext(ctx, q, id); err != nil {
				return fmt.Errorf("delete principal %d: %w", id, err)
			}
		}
		return nil
	})
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// RoleAdmin is the role of a token that may do everything.
const RoleAdmin = "admin"

// Token is an API token as stored: its SHA-256 hash (hex), never the token.
type Token struct {
	ID         int64
	Name       string
	TokenHash  string // 64 lowercase hex characters
	Role       string
	CreatedMs  int64
	LastUsedMs int64 // 0 = never used
}

// TokenCreateParams create a token row.
type TokenCreateParams struct {
	Name      string
	TokenHash string
	Role      string // "" = RoleAdmin
	NowMs     int64
}

const tokenCols = "id, name, token_hash, role, created_ms, last_used_ms"

func scanToken(sc interface{ Scan(...any) error }) (Token, error) {
	var t Token
	err := sc.Scan(&t.ID, &t.Name, &t.TokenHash, &t.Role, &t.CreatedMs, &t.LastUsedMs)
	return t, err
}

// TokenCreate stores a token hash. A hash that is stored already is ErrConflict.
func (s *Store) TokenCreate(ctx context.Context, p TokenCreateParams) (Token, error) {
	role := p.Role
	if role == "" {
		role = RoleAdmin
	}
	res, err := s.db.ExecContext(ctx, "INSERT INTO api_tokens (name, token_hash, role, created_ms, last_used_ms) VALUES (?, ?, ?, ?, 0)",
		p.Name, p.TokenHash, role, p.NowMs)
	if err != nil {
		if s.d.isDuplicate(err) {
			return Token{}, fmt.Errorf("api token %q: the same token is stored already: %w", p.Name, ErrConflict)
		}
		return Token{}, fmt.Errorf("insert api token %q: %w", p.Name, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Token{}, fmt.Errorf("insert api token %q: read id: %w", p.Name, err)
	}
	t, err := scanToken(s.db.QueryRowContext(ctx, "SELECT "+tokenCols+" FROM api_tokens WHERE id = ?", id))
	if err != nil {
		return Token{}, fmt.Errorf("read api token %d: %w", id, notFound(err, "api token", id))
	}
	return t, nil
}

// TokenByHash finds a token by the hex SHA-256 of its value; ErrNotFound when
// no token has that hash.
func (s *Store) TokenByHash(ctx context.Context, hash string) (Token, error) {
	t, err := scanToken(s.db.QueryRowContext(ctx, "SELECT "+tokenCols+" FROM api_tokens WHERE token_hash = ?", hash))
	if errors.Is(err, sql.ErrNoRows) {
		return Token{}, fmt.Errorf("api token: %w", ErrNotFound)
	}
	if err != nil {
		return Token{}, fmt.Errorf("read api token: %w", err)
	}
	return t, nil
}

// TokenTouch records that a token was used at nowMs.
func (s *Store) TokenTouch(ctx context.Context, id int64, nowMs int64) error {
	if _, err := s.execRetry(ctx, "UPDATE api_tokens SET last_used_ms = ? WHERE id = ? AND last_used_ms < ?", nowMs, id, nowMs); err != nil {
		return fmt.Errorf("touch api token %d: %w", id, err)
	}
	return nil
}

// TokenCount counts the stored tokens.
func (s *Store) TokenCount(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM api_tokens").Scan(&n); err != nil {
		return 0, fmt.Errorf("count api tokens: %w", err)
	}
	return n, nil
}

// TokenDeleteByName deletes the server tokens (owned by no user or service
// account) named name, except the one whose hash is keepHash ("" keeps
// none), and returns how many went. When any went, the auth version moves
// on, so every replica drops them from its credential cache.
func (s *Store) TokenDeleteByName(ctx context.Context, name, keepHash string) (int64, error) {
	var n int64
	err := s.Tx(ctx, func(tx *Store) error {
		res, err := tx.db.ExecContext(ctx, "DELETE FROM api_tokens WHERE name = ? AND token_hash <> ? AND principal_id = 0", name, keepHash)
		if err != nil {
			return fmt.Errorf("delete api tokens named %q: %w", name, err)
		}
		if n, _ = res.RowsAffected(); n > 0 {
			return tx.AuthVersionBump(ctx)
		}
		return nil
	})
	return n, err
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Credentials: API tokens owned by principals, browser sessions, the login
// limiter's counters and SSO login states.

// AuthToken is an API token row with its owner and lifetime. PrincipalID 0
// is a server token (first-start or configured) that carries Role itself.
type AuthToken struct {
	ID          int64
	Name        string
	TokenHash   string
	Role        string
	PrincipalID int64
	Prefix      string // the first characters of the token, to recognise it in lists
	CreatedMs   int64
	LastUsedMs  int64
	ExpiresMs   int64 // 0 = never
	RevokedMs   int64 // 0 = not revoked
}

const authTokenCols = "id, name, token_hash, role, principal_id, prefix, created_ms, last_used_ms, expires_ms, revoked_ms"

func scanAuthToken(sc interface{ Scan(...any) error }) (AuthToken, error) {
	var t AuthToken
	err := sc.Scan(&t.ID, &t.Name, &t.TokenHash, &t.Role, &t.PrincipalID, &t.Prefix, &t.CreatedMs, &t.LastUsedMs, &t.ExpiresMs, &t.RevokedMs)
	return t, err
}

// TokenIssueParams are a new token owned by a principal.
type TokenIssueParams struct {
	Name        string
	TokenHash   string
	Prefix      string
	PrincipalID int64
	ExpiresMs   int64
	NowMs       int64
}

// TokenIssue stores a principal's token. Its role column is "" (the owner's
// bindings decide).
func (s *Store) TokenIssue(ctx context.Context, p TokenIssueParams) (AuthToken, error) {
	res, err := s.db.ExecContext(ctx, "INSERT INTO api_tokens (name, token_hash, role, principal_id, prefix, created_ms, last_used_ms, expires_ms, revoked_ms) VALUES (?, ?, '', ?, ?, ?, 0, ?, 0)",
		p.Name, p.TokenHash, p.PrincipalID, p.Prefix, p.NowMs, p.ExpiresMs)
	if err != nil {
		if s.d.isDuplicate(err) {
			return AuthToken{}, fmt.Errorf("api token %q: the same token is stored already: %w", p.Name, ErrConflict)
		}
		return AuthToken{}, fmt.Errorf("insert api token %q: %w", p.Name, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return AuthToken{}, fmt.Errorf("insert api token %q: read id: %w", p.Name, err)
	}
	return s.TokenGet(ctx, id)
}

// TokenGet reads a token by id.
func (s *Store) TokenGet(ctx context.Context, id int64) (AuthToken, error) {
	t, err := scanAuthToken(s.db.QueryRowContext(ctx, "SELECT "+authTokenCols+" FROM api_tokens WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return AuthToken{}, fmt.Errorf("api token %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return AuthToken{}, fmt.Errorf("read api token %d: %w", id, err)
	}
	return t, nil
}

// TokenLookup finds a token by the hex SHA-256 of its value, revoked and
// expired ones included (the caller decides).
func (s *Store) TokenLookup(ctx context.Context, hash string) (AuthToken, error) {
	t, err := scanAuthToken(s.db.QueryRowContext(ctx, "SELECT "+authTokenCols+" FROM api_tokens WHERE token_hash = ?", hash))
	if errors.Is(err, sql.ErrNoRows) {
		return AuthToken{}, fmt.Errorf("api token: %w", ErrNotFound)
	}
	if err != nil {
		return AuthToken{}, fmt.Errorf("read api token: %w", err)
	}
	return t, nil
}

// TokenListParams page through tokens by id.
type TokenListParams struct {
	PrincipalID int64 // -1 = every token
	AfterID     int64
	Limit       int
}

// TokenList lists tokens by id.
func (s *Store) TokenList(ctx context.Context, p TokenListParams) ([]AuthToken, error) {
	q := "SELECT " + authTokenCols + " FROM api_tokens WHERE id > ?"
	args := []any{p.AfterID}
	if p.PrincipalID >= 0 {
		q += " AND principal_id = ?"
		args = append(args, p.PrincipalID)
	}
	limit := p.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY id LIMIT ?", args...)
	if err != nil {
		return nil, fmt.Errorf("list api tokens: %w", err)
	}
	defer rows.Close()
	var out []AuthToken
	for rows.Next() {
		t, err := scanAuthToken(rows)
		if err != nil {
			return nil, fmt.Errorf("list api tokens: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// TokenRevoke marks a token revoked at nowMs; false when it was revoked already.
func (s *Store) TokenRevoke(ctx context.Context, id, nowMs int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, "UPDATE api_tokens SET revoked_ms = ? WHERE id = ? AND revoked_ms = 0", nowMs, id)
	if err != nil {
		return false, fmt.Errorf("revoke api token %d: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Session is a browser login stored server-side.
type Session struct {
	ID          int64
	TokenHash   string
	PrincipalID int64
	CSRFToken   string
	ClientAddr  string
	CreatedMs   int64
	LastSeenMs  int64
	ExpiresMs   int64 // absolute expiry
}

const sessionCols = "id, token_hash, principal_id, csrf_token, client_addr, created_ms, last_seen_ms, expires_ms"

func scanSession(sc interface{ Scan(...any) error }) (Session, error) {
	var x Session
	err := sc.Scan(&x.ID, &x.TokenHash, &x.PrincipalID, &x.CSRFToken, &x.ClientAddr, &x.CreatedMs, &x.LastSeenMs, &x.ExpiresMs)
	return x, err
}

// SessionCreate stores a session.
func (s *Store) SessionCreate(ctx context.Context, x Session) (Session, error) {
	res, err := s.db.ExecContext(ctx, "INSERT INTO sessions (token_hash, principal_id, csrf_token, client_addr, created_ms, last_seen_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
		x.TokenHash, x.PrincipalID, x.CSRFToken, x.ClientAddr, x.CreatedMs, x.LastSeenMs, x.ExpiresMs)
	if err != nil {
		return Session{}, fmt.Errorf("insert session: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Session{}, fmt.Errorf("insert session: read id: %w", err)
	}
	x.ID = id
	return x, nil
}

// SessionLookup finds a session by the hash of its cookie value.
func (s *Store) SessionLookup(ctx context.Context, hash string) (Session, error) {
	x, err := scanSession(s.db.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE token_hash = ?", hash))
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, fmt.Errorf("session: %w", ErrNotFound)
	}
	if err != nil {
		return Session{}, fmt.Errorf("read session: %w", err)
	}
	return x, nil
}

// SessionTouch records activity on a session (for the idle expiry).
func (s *Store) SessionTouch(ctx context.Context, id, nowMs int64) error {
	if _, err := s.execRetry(ctx, "UPDATE sessions SET last_seen_ms = ? WHERE id = ? AND last_seen_ms < ?", nowMs, id, nowMs); err != nil {
		return fmt.Errorf("touch session %d: %w", id, err)
	}
	return nil
}

// SessionDelete ends a session; false when it did not exist.
func (s *Store) SessionDelete(ctx context.Context, id int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, "DELETE FROM sessions WHERE id = ?", id)
	if err != nil {
		return false, fmt.Errorf("delete session %d: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// SessionDeleteExpired removes sessions past their absolute expiry or idle
// since before idleBeforeMs.
func (s *Store) SessionDeleteExpired(ctx context.Context, nowMs, idleBeforeMs int64) (int64, error) {
	res, err := s.execRetry(ctx, "DELETE FROM sessions WHERE expires_ms <= ? OR last_seen_ms < ?", nowMs, idleBeforeMs)
	if err != nil {
		return 0, fmt.Errorf("delete expired sessions: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// LoginFailures reads the failed-login counter under key: the count and the
// time of the last failure (0, 0 when none).
func (s *Store) LoginFailures(ctx context.Context, key string) (failures int, lastMs int64, err error) {
	err = s.db.QueryRowContext(ctx, "SELECT failures, last_ms FROM login_failures WHERE limiter_key = ?", key).Scan(&failures, &lastMs)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read login failures: %w", err)
	}
	return failures, lastMs, nil
}

// LoginFailureRecord counts one failed login under key.
func (s *Store) LoginFailureRecord(ctx context.Context, key string, nowMs int64) error {
	for attempt := 0; attempt < 3; attempt++ {
		res, err := s.execRetry(ctx, "UPDATE login_failures SET failures = failures + 1, last_ms = ? WHERE limiter_key = ?", nowMs, key)
		if err != nil {
			return fmt.Errorf("record login failure: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil
		}
		// Someone may insert it first: a duplicate (or, where a failed
		// statement would end the transaction, an insert skipped by
		// skipDuplicate) means update again.
		res, err = s.execRetry(ctx, "INSERT INTO login_failures (limiter_key, failures, last_ms) VALUES (?, 1, ?)"+s.d.skipDuplicate(), key, nowMs)
		if err == nil {
			if n, _ := res.RowsAffected(); n == 1 {
				return nil
			}
			continue
		}
		if !s.d.isDuplicate(err) {
			return fmt.Errorf("record login failure: %w", err)
		}
	}
	return fmt.Errorf("record login failure: the counter kept changing")
}

// LoginFailureClearUser clears a user's own key and every key that starts
// with perAddressPrefix (the user's per-address keys).
func (s *Store) LoginFailureClearUser(ctx context.Context, userKey, perAddressPrefix string) error {
	// '!' escapes: a backslash is an escape in MySQL string literals, not in SQLite's.
	like := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(perAddressPrefix) + "%"
	if _, err := s.execRetry(ctx, "DELETE FROM login_failures WHERE limiter_key = ? OR limiter_key LIKE ? ESCAPE '!'", userKey, like); err != nil {
		return fmt.Errorf("clear login failures of %s: %w", userKey, err)
	}
	return nil
}

// LoginFailureClear forgets the failures under keys (after a success).
func (s *Store) LoginFailureClear(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	if _, err := s.execRetry(ctx, "DELETE FROM login_failures WHERE limiter_key IN ("+placeholders(len(keys))+")", args...); err != nil {
		return fmt.Errorf("clear login failures: %w", err)
	}
	return nil
}

// SSOState is an SSO login in flight: the PKCE verifier and nonce of one
// authorization request, found again by the hash of its state parameter.
type SSOState struct {
	StateHash string
	Verifier  string
	Nonce     string
	ReturnTo  string
	ExpiresMs int64
}

// SSOStateCreate stores a login in flight.
func (s *Store) SSOStateCreate(ctx context.Context, x SSOState) error {
	if _, err := s.db.ExecContext(ctx, "INSERT INTO sso_states (state_hash, verifier, nonce, return_to, expires_ms) VALUES (?, ?, ?, ?, ?)",
		x.StateHash, x.Verifier, x.Nonce, x.ReturnTo, x.ExpiresMs); err != nil {
		return fmt.Errorf("store sso state: %w", err)
	}
	return nil
}

// SSOStateTake reads and deletes a login in flight, so a state is used at
// most once (a replayed callback finds nothing). Expired ones are removed too.
func (s *Store) SSOStateTake(ctx context.Context, hash string, nowMs int64) (SSOState, error) {
	var x SSOState
	err := s.Tx(ctx, func(tx *Store) error {
		err := tx.db.QueryRowContext(ctx, "SELECT state_hash, verifier, nonce, return_to, expires_ms FROM sso_states WHERE state_hash = ?", hash).
			Scan(&x.StateHash, &x.Verifier, &x.Nonce, &x.ReturnTo, &x.ExpiresMs)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sso state: %w", ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("read sso state: %w", err)
		}
		res, err := tx.db.ExecContext(ctx, "DELETE FROM sso_states WHERE state_hash = ?", hash)
		if err != nil {
			return fmt.Errorf("delete sso state: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("sso state: %w", ErrNotFound) // taken by a concurrent callback
		}
		_, err = tx.db.ExecContext(ctx, "DELETE FROM sso_states WHERE expires_ms < ?", nowMs)
		return err
	})
	if err != nil {
		return SSOState{}, err
	}
	if x.ExpiresMs < nowMs {
		return SSOState{}, fmt.Errorf("sso state expired: %w", ErrNotFound)
	}
	return x, nil
}

// SessionDeleteForPrincipal ends every session of a principal but keep (0 =
// none).
func (s *Store) SessionDeleteForPrincipal(ctx context.Context, principalID int64, keep ...int64) error {
	q, args := "DELETE FROM sessions WHERE principal_id = ?", []any{principalID}
	if len(keep) > 0 && keep[0] != 0 {
		q, args = q+" AND id <> ?", append(args, keep[0])
	}
	if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("delete sessions of principal %d: %w", principalID, err)
	}
	return nil
}

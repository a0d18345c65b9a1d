package store

import (
	"context"
	"fmt"
	"strings"
)

// AuditEvent is one entry of the audit log. The log is append-only: the store
// has no method to change or delete an entry.
type AuditEvent struct {
	ID          int64
	AtMs        int64
	Principal   string // "user:alice", "service:ci", "token:initial-admin", "" for anonymous (failed logins)
	PrincipalID int64
	TokenName   string
	ClientAddr  string
	RequestID   string
	Action      string // "job.create", "login.failed", ...
	ObjectType  string // "job", "group", "run", "user", "token", "role_binding", "session"
	ObjectID    string
	GroupID     int64
	Changes     string // JSON: {"field": {"before": .., "after": ..}} or {"field": value}; secrets masked
}

// AuditAppend writes an event. Call it on the Store of the change's
// transaction (Store.Tx), so the event exists exactly when the change does.
func (s *Store) AuditAppend(ctx context.Context, e AuditEvent) error {
	if e.Changes == "" {
		e.Changes = "{}"
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO audit_events (at_ms, principal, principal_id, token_name, client_addr, request_id, action, object_type, object_id, group_id, changes)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.AtMs, e.Principal, e.PrincipalID, e.TokenName, e.ClientAddr, e.RequestID, e.Action, e.ObjectType, e.ObjectID, e.GroupID, e.Changes)
	if err != nil {
		return fmt.Errorf("append audit event %s: %w", e.Action, err)
	}
	return nil
}

// AuditListParams filter the audit log, newest first.
type AuditListParams struct {
	Principal  string
	ObjectType string
	ObjectID   string
	Action     string // exact, or a prefix ending in "." ("job.")
	FromMs     int64  // at_ms >= FromMs when > 0
	ToMs       int64  // at_ms < ToMs when > 0
	BeforeID   int64  // 0 = from the newest
	Limit      int
}

// AuditList lists audit events, newest first.
func (s *Store) AuditList(ctx context.Context, p AuditListParams) ([]AuditEvent, error) {
	where := []string{"1=1"}
	var args []any
	add := func(cond string, v any) { where = append(where, cond); args = append(args, v) }
	if p.BeforeID > 0 {
		add("id < ?", p.BeforeID)
	}
	if p.Principal != "" {
		add("principal = ?", p.Principal)
	}
	if p.ObjectType != "" {
		add("object_type = ?", p.ObjectType)
	}
	if p.ObjectID != "" {
		add("object_id = ?", p.ObjectID)
	}
	if strings.HasSuffix(p.Action, ".") {
		add("action LIKE ? ESCAPE '!'", likeEscape(p.Action)+"%")
	} else if p.Action != "" {
		add("action = ?", p.Action)
	}
	if p.FromMs > 0 {
		add("at_ms >= ?", p.FromMs)
	}
	if p.ToMs > 0 {
		add("at_ms < ?", p.ToMs)
	}
	limit := p.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, `SELECT id, at_ms, principal, principal_id, token_name, client_addr, request_id, action, object_type, object_id, group_id, changes
 FROM audit_events WHERE `+strings.Join(where, " AND ")+" ORDER BY id DESC LIMIT ?", args...)
	if err != nil {
		return nil, fmt.Errorf("list audit events: %w", err)
	}
	defer rows.Close()
	var out []AuditEvent
	for rows.Next() {
		var e AuditEvent
		if err := rows.Scan(&e.ID, &e.AtMs, &e.Principal, &e.PrincipalID, &e.TokenName, &e.ClientAddr, &e.RequestID, &e.Action, &e.ObjectType, &e.ObjectID, &e.GroupID, &e.Changes); err != nil {
			return nil, fmt.Errorf("list audit events: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

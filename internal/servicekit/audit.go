package servicekit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/store"
)

// Actor is who makes a change and from where: what the audit log records.
// The API puts it into the request's context with WithActor.
type Actor struct {
	Principal  *access.Principal // nil for anonymous requests (a login)
	ClientAddr string
	RequestID  string
}

type actorKey struct{}

// WithActor returns ctx carrying a.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the actor ctx carries (the zero Actor when none: the
// server itself, for example at bootstrap).
func ActorFrom(ctx context.Context) Actor {
	a, _ := ctx.Value(actorKey{}).(Actor)
	return a
}

// AuditEntry is what a change adds to the audit log.
type AuditEntry struct {
	Action     string
	ObjectType string
	ObjectID   int64
	ObjectName string // used as object id when ObjectID is 0
	GroupID    int64
	Changes    map[string]any
}

// Audit appends e, made at atMs by the actor of ctx, to the log on tx, the
// store of the change's transaction (so the change and its event commit
// together or not at all).
func Audit(ctx context.Context, tx *store.Store, atMs int64, e AuditEntry) error {
	ev, err := AuditEvent(ctx, atMs, e)
	if err != nil {
		return err
	}
	return tx.AuditAppend(ctx, ev)
}

// AuditEvent is the event that e adds to the log, by the actor of ctx.
func AuditEvent(ctx context.Context, atMs int64, e AuditEntry) (store.AuditEvent, error) {
	a := ActorFrom(ctx)
	ev := store.AuditEvent{AtMs: atMs, ClientAddr: a.ClientAddr, RequestID: a.RequestID,
		Action: e.Action, ObjectType: e.ObjectType, GroupID: e.GroupID}
	if e.ObjectID != 0 {
		ev.ObjectID = fmt.Sprint(e.ObjectID)
	} else {
		ev.ObjectID = e.ObjectName
	}
	if p := a.Principal; p != nil {
		ev.Principal = p.String()
		ev.PrincipalID = p.ID
		ev.TokenName = p.TokenName
	} else {
		ev.Principal = "system"
	}
	if len(e.Changes) > 0 {
		b, err := json.Marshal(e.Changes)
		if err != nil {
			return ev, fmt.Errorf("audit %s: encode changes: %w", e.Action, err)
		}
		ev.Changes = string(b)
	}
	return ev, nil
}

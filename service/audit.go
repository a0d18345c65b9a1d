package service

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/ringjob/ringjob/internal/servicekit"
	"github.com/ringjob/ringjob/store"
)

// Actor is who makes a change and from where: what the audit log records
// (servicekit.Actor). The API puts it into the request's context with
// WithActor.
type Actor = servicekit.Actor

// WithActor returns ctx carrying a.
func WithActor(ctx context.Context, a Actor) context.Context { return servicekit.WithActor(ctx, a) }

// ActorFrom returns the actor ctx carries (the zero Actor when none: the
// server itself, for example at bootstrap).
func ActorFrom(ctx context.Context) Actor { return servicekit.ActorFrom(ctx) }

// Audit actions, "object.verb".
const (
	ActGroupCreate = "group.create"
	ActGroupUpdate = "group.update"
	ActGroupDelete = "group.delete"
	ActJobCreate   = "job.create"
	ActJobUpdate   = "job.update"
	ActJobDelete   = "job.delete"
	ActJobStart    = "job.start"
	ActJobStop     = "job.stop"
	ActJobTrigger  = "job.trigger"
	ActRunKill     = "run.kill"
	ActAlarmTest   = "alarm_channel.test"
	// Executor registrations (new executors, not heartbeats) and removals,
	// and refusals of either, by the executor API.
	ActExecutorRegister        = "executor.register"
	ActExecutorRegisterRefused = "executor.register_refused"
	ActExecutorRemove          = "executor.remove"
	ActExecutorRemoveRefused   = "executor.remove_refused"
	// ActGroupExecutorToken: a group's executor token was set, generated or
	// cleared (the token itself is never logged).
	ActGroupExecutorToken = "group.executor_token"
)

// auditEntry is what a change adds to the audit log.
type auditEntry = servicekit.AuditEntry

// audit appends e to the log on tx, the store of the change's transaction.
func (s *Service) audit(ctx context.Context, tx *store.Store, e auditEntry) error {
	return servicekit.Audit(ctx, tx, s.nowMs(), e)
}

// auditEvent is the event that e adds to the log, by the actor of ctx.
func (s *Service) auditEvent(ctx context.Context, e auditEntry) (store.AuditEvent, error) {
	return servicekit.AuditEvent(ctx, s.nowMs(), e)
}

// fieldsOf flattens a stored object into snake_case fields for the audit
// log, masking secrets.
func fieldsOf(v any) map[string]any {
	out := map[string]any{}
	rv := reflect.ValueOf(v)
	rt := rv.Type()
	var walk func(rv reflect.Value, rt reflect.Type)
	walk = func(rv reflect.Value, rt reflect.Type) {
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			if !f.IsExported() {
				continue
			}
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(rv.Field(i), f.Type)
				continue
			}
			name := snake(f.Name)
			val := rv.Field(i).Interface()
			if isSecretField(name) {
				if reflect.ValueOf(val).IsZero() {
					val = ""
				} else {
					val = "***"
				}
			}
			out[name] = val
		}
	}
	walk(rv, rt)
	return out
}

func isSecretField(name string) bool {
	return strings.Contains(name, "token") || strings.Contains(name, "password") || strings.Contains(name, "secret")
}

// snake turns a Go field name into snake_case ("GroupID" -> "group_id").
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// diffFields keeps the fields that changed, as {"before": .., "after": ..};
// bookkeeping fields (times, the version) are left out.
func diffFields(before, after map[string]any) map[string]any {
	out := map[string]any{}
	for k, a := range after {
		if strings.HasSuffix(k, "_ms") || k == "version" {
			continue
		}
		b := before[k]
		if !reflect.DeepEqual(a, b) {
			out[k] = map[string]any{"before": b, "after": a}
		}
	}
	return out
}

// AuditListParams filter the audit log.
type AuditListParams struct {
	Principal  string // "user:alice"
	ObjectType string
	ObjectID   string
	Action     string // exact, or a prefix ending in "." ("job.")
	From, To   time.Time
	Cursor     string
	Limit      int
}

// ListAudit lists audit events, newest first.
func (s *Service) ListAudit(ctx context.Context, p AuditListParams) (Page[store.AuditEvent], error) {
	limit, err := pageLimit(p.Limit)
	if err != nil {
		return Page[store.AuditEvent]{}, err
	}
	before, err := decodeCursor("a", p.Cursor)
	if err != nil {
		return Page[store.AuditEvent]{}, err
	}
	for _, f := range []struct{ name, v string }{{"principal", p.Principal}, {"object_type", p.ObjectType}, {"object_id", p.ObjectID}, {"action", p.Action}} {
		if err := checkText(f.name, f.v, 0, 128, false); err != nil {
			return Page[store.AuditEvent]{}, err
		}
	}
	if !p.From.IsZero() && !p.To.IsZero() && !p.To.After(p.From) {
		return Page[store.AuditEvent]{}, invalid("to", "must be after from")
	}
	q := store.AuditListParams{Principal: p.Principal, ObjectType: p.ObjectType, ObjectID: p.ObjectID, Action: p.Action, BeforeID: before, Limit: limit + 1}
	if !p.From.IsZero() {
		q.FromMs = p.From.UnixMilli()
	}
	if !p.To.IsZero() {
		q.ToMs = p.To.UnixMilli()
	}
	es, err := s.st.AuditList(ctx, q)
	if err != nil {
		return Page[store.AuditEvent]{}, fmt.Errorf("list audit events: %w", err)
	}
	return paginate(es, limit, "a", func(e store.AuditEvent) int64 { return e.ID }), nil
}

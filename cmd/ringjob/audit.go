package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringjob/ringjob/client"
)

func (a *app) newAuditCommand() *cobra.Command {
	audit := groupCommand("audit", "Read the audit log (admins and auditors)")
	addClientFlags(audit)
	audit.AddCommand(a.newAuditListCommand())
	return audit
}

// auditChanges summarises an event's changes for a table cell. Changes are
// {field: {"before": b, "after": a}} (or plain values): a change shows as
// "field: b -> a", a field set by a create (before null) as "field=a", and
// empty values a create leaves at their defaults are left out.
func auditChanges(raw json.RawMessage) string {
	var m map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		ch, ok := m[k].(map[string]any)
		_, hasBefore := ch["before"]
		_, hasAfter := ch["after"]
		switch {
		case !ok || !hasBefore || !hasAfter:
			parts = append(parts, k+"="+short(m[k]))
		case ch["before"] == nil && isEmptyJSON(ch["after"]):
		case ch["before"] == nil:
			parts = append(parts, k+"="+short(ch["after"]))
		default:
			parts = append(parts, fmt.Sprintf("%s: %s -> %s", k, short(ch["before"]), short(ch["after"])))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// isEmptyJSON tells a default a create leaves unset: "", 0, false, [], {}.
func isEmptyJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case float64:
		return x == 0
	case bool:
		return !x
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func short(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

func auditTable(es []client.AuditEvent) *table {
	t := &table{header: []string{"ID", "AT", "WHO", "ACTION", "OBJECT", "CHANGES"}}
	for _, e := range es {
		who := e.Principal
		if e.TokenName != "" {
			who += " (token " + e.TokenName + ")"
		}
		obj := e.ObjectType
		if e.ObjectID != "" {
			obj += " " + e.ObjectID
		}
		t.add(e.ID, e.At, who, e.Action, obj, auditChanges(e.Changes))
	}
	return t
}

func (a *app) newAuditListCommand() *cobra.Command {
	var out outputFormat
	var principal, action, objectType, objectID, cursor string
	var since time.Duration
	var from, to string
	var limit int
	cmd := &cobra.Command{
		Use:   "list [--principal P] [--action A] [--object-type T [--object-id ID]] [--since 24h | --from T --to T]",
		Short: "List audit events, newest first",
		Long: `List audit events, newest first, --limit at a time. When more follow, the
command that shows the next page is printed on stderr (its --cursor).
The table shows what each change did (field: before -> after); -o json|yaml
prints the events whole.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since < 0 {
				return usageErrorf("--since must be positive, got %s", since)
			}
			if since > 0 && from != "" {
				return usageErrorf("give --since or --from, not both")
			}
			for _, t := range []struct{ flag, v string }{{"--from", from}, {"--to", to}} {
				if t.v == "" {
					continue
				}
				if _, err := time.Parse(time.RFC3339, t.v); err != nil {
					return usageErrorf("%s %q: want an RFC 3339 time, e.g. 2026-01-02T15:04:05Z", t.flag, t.v)
				}
			}
			if since > 0 {
				from = time.Now().Add(-since).UTC().Format(time.RFC3339)
			}
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			filters := map[string]string{"principal": principal, "action": action, "object_type": objectType, "object_id": objectID, "from": from, "to": to}
			p, err := c.ListAudit(cmd.Context(), client.ListOptions{Limit: limit, Cursor: cursor, Filters: filters})
			if err != nil {
				return fmt.Errorf("list audit events: %w", err)
			}
			if p.Items == nil {
				p.Items = []client.AuditEvent{}
			}
			if p.NextCursor != "" {
				fmt.Fprintf(a.stderr, "More events follow: add --cursor %s\n", p.NextCursor)
			}
			return printObjects(a.stdout, out, p.Items, func() *table { return auditTable(p.Items) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&principal, "principal", "", "only the events of this principal, e.g. user:alice or service:ci")
	f.StringVar(&action, "action", "", "only this action, e.g. job.update, user.create")
	f.StringVar(&objectType, "object-type", "", "only events on this kind of object, e.g. job, group, user")
	f.StringVar(&objectID, "object-id", "", "only events on this object (with --object-type)")
	f.DurationVar(&since, "since", 0, "only events of the last DURATION, e.g. 24h")
	f.StringVar(&from, "from", "", "only events at or after this time (RFC 3339)")
	f.StringVar(&to, "to", "", "only events before this time (RFC 3339)")
	f.IntVar(&limit, "limit", 50, "at most this many events")
	f.StringVar(&cursor, "cursor", "", "the page after this cursor (printed by the previous page)")
	addOutputFlag(cmd, &out)
	return cmd
}

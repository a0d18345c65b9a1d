package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// state dumps what the API's writes change (every table they touch, minus
// what moves by itself: run outcomes, last-used times), so a refused write
// can be shown to have changed nothing.
func (b *bundle) state() string {
	b.t.Helper()
	var out strings.Builder
	for _, q := range []string{
		"SELECT id, app_name, title, members FROM job_groups ORDER BY id",
		"SELECT id, name, enabled, schedule_conf, description FROM jobs ORDER BY id",
		"SELECT id, kill_requested FROM runs ORDER BY id",
		"SELECT id, name, email, password_hash FROM principals ORDER BY id",
		"SELECT id, role, group_id, principal_id, sso_group FROM role_bindings ORDER BY id",
		"SELECT id, name, revoked_ms FROM api_tokens ORDER BY id",
		"SELECT id, principal_id FROM sessions ORDER BY id",
		"SELECT limiter_key, failures FROM login_failures ORDER BY limiter_key",
		"SELECT principal_id FROM principal_disabled ORDER BY principal_id",
	} {
		rows, err := b.st.DB().Query(q)
		require.NoError(b.t, err, q)
		cols, err := rows.Columns()
		require.NoError(b.t, err)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(b.t, rows.Scan(ptrs...))
			for _, v := range vals {
				if raw, ok := v.([]byte); ok {
					v = string(raw)
				}
				fmt.Fprintf(&out, "%v|", v)
			}
			out.WriteString("\n")
		}
		require.NoError(b.t, rows.Err())
		rows.Close()
		out.WriteString("--\n")
	}
	return out.String()
}

func (b *bundle) auditActions() map[string]int {
	b.t.Helper()
	rows, err := b.st.DB().Query("SELECT action FROM audit_events")
	require.NoError(b.t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var a string
		require.NoError(b.t, rows.Scan(&a))
		out[a]++
	}
	require.NoError(b.t, rows.Err())
	return out
}

// TestEveryWriteIsAuditedInItsTransaction walks every kind of write the API
// has. Each is made first while the audit log cannot be written (its table
// renamed away): it must fail and change nothing (the change and its event
// are one transaction). Then it is made again and must succeed with exactly
// one audit event of its action.
func TestEveryWriteIsAuditedInItsTransaction(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			b := setup(t, kind, setupOpts{})
			gid := b.group("atomic", "local://echo")
			sleepers := b.group("atomic-sleep", "local://sleep")
			job := id(b.job(map[string]any{"group_id": gid, "name": "audited", "schedule_type": "cron", "schedule_conf": "0 0 3 * * ?", "enabled": false}))
			sleeper := id(b.job(map[string]any{"group_id": sleepers, "name": "sleeps"}))
			var running int64
			startSleeper := func() { // just before the kill: it sleeps 30 s
				running = id(b.must(201, "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", sleeper), map[string]any{}))
				b.waitRun(running, "running", func(r map[string]any) bool { return r["state"] == "running" })
			}
			b.createUser("ulla", "", 0)
			_, sess := b.login("ulla", testPassword)
			var lastID = map[string]int64{}

			writes := []struct {
				name, action string
				do           func() resp
				status       int
				remember     string // keep the created object's id under this key
			}{
				{"create group", "group.create", func() resp {
					return b.call("POST", "/api/v1/groups", map[string]any{"app_name": "made", "members": []string{}})
				}, 201, "group"},
				{"update group", "group.update", func() resp {
					return b.call("PUT", fmt.Sprintf("/api/v1/groups/%d", lastID["group"]), map[string]any{"app_name": "made", "title": "edited", "members": []string{}})
				}, 200, ""},
				{"create job", "job.create", func() resp { return b.call("POST", "/api/v1/jobs", map[string]any{"group_id": gid, "name": "made"}) }, 201, "job"},
				{"update job", "job.update", func() resp {
					return b.call("PATCH", fmt.Sprintf("/api/v1/jobs/%d", job), map[string]any{"description": "edited"})
				}, 200, ""},
				{"start job", "job.start", func() resp { return b.call("POST", fmt.Sprintf("/api/v1/jobs/%d/start", job), nil) }, 200, ""},
				{"stop job", "job.stop", func() resp { return b.call("POST", fmt.Sprintf("/api/v1/jobs/%d/stop", job), nil) }, 200, ""},
				{"trigger job", "job.trigger", func() resp {
					return b.call("POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", job), map[string]any{"params": "p"})
				}, 201, ""},
				{"kill run", "run.kill", func() resp { return b.call("POST", fmt.Sprintf("/api/v1/runs/%d/kill", running), nil) }, 202, ""},
				{"delete job", "job.delete", func() resp { return b.call("DELETE", fmt.Sprintf("/api/v1/jobs/%d", lastID["job"]), nil) }, 204, ""},
				{"delete group", "group.delete", func() resp { return b.call("DELETE", fmt.Sprintf("/api/v1/groups/%d", lastID["group"]), nil) }, 204, ""},
				{"create user", "user.create", func() resp {
					return b.call("POST", "/api/v1/users", map[string]any{"name": "made", "password": testPassword})
				}, 201, "user"},
				{"set password", "user.password", func() resp {
					return b.call("PUT", fmt.Sprintf("/api/v1/users/%d/password", lastID["user"]), map[string]any{"password": "another long password"})
				}, 204, ""},
				{"update user", "user.update", func() resp {
					return b.call("PATCH", fmt.Sprintf("/api/v1/users/%d", lastID["user"]), map[string]any{"name": "renamed", "disabled": true})
				}, 200, ""},
				{"create service account", "service_account.create", func() resp {
					return b.call("POST", "/api/v1/service-accounts", map[string]any{"name": "made-sa"})
				}, 201, "sa"},
				{"grant role", "role_binding.create", func() resp {
					return b.call("POST", "/api/v1/role-bindings", map[string]any{"role": "viewer", "group_id": gid, "principal_id": lastID["sa"]})
				}, 201, "binding"},
				{"take role", "role_binding.delete", func() resp { return b.call("DELETE", fmt.Sprintf("/api/v1/role-bindings/%d", lastID["binding"]), nil) }, 204, ""},
				{"create token", "token.create", func() resp {
					return b.call("POST", "/api/v1/tokens", map[string]any{"name": "ci", "principal_id": lastID["sa"]})
				}, 201, "token"},
				{"revoke token", "token.revoke", func() resp { return b.call("DELETE", fmt.Sprintf("/api/v1/tokens/%d", lastID["token"]), nil) }, 200, ""},
				{"disable service account", "service_account.update", func() resp {
					return b.call("PATCH", fmt.Sprintf("/api/v1/service-accounts/%d", lastID["sa"]), map[string]any{"disabled": true})
				}, 200, ""},
				{"delete service account", "service_account.delete", func() resp { return b.call("DELETE", fmt.Sprintf("/api/v1/service-accounts/%d", lastID["sa"]), nil) }, 204, ""},
				{"delete user", "user.delete", func() resp { return b.call("DELETE", fmt.Sprintf("/api/v1/users/%d", lastID["user"]), nil) }, 204, ""},
				{"failed login", "login.failed", func() resp {
					return b.call("POST", "/api/v1/session", map[string]any{"username": "ulla", "password": "not her password"}, "Authorization", "")
				}, 401, ""},
				{"login", "login", func() resp {
					return b.call("POST", "/api/v1/session", map[string]any{"username": "ulla", "password": testPassword}, "Authorization", "")
				}, 201, ""},
				{"change own password", "user.password", func() resp {
					return sess.call("PUT", "/api/v1/me/password", map[string]any{"old_password": testPassword, "new_password": "her new password"}, true)
				}, 204, ""},
				{"logout", "logout", func() resp { return sess.call("DELETE", "/api/v1/session", nil, true) }, 204, ""},
			}
			prepare := map[string]func(){"kill run": startSleeper}
			for _, w := range writes {
				if p := prepare[w.name]; p != nil {
					p()
				}
				before, audits := b.state(), b.auditActions()
				_, err := b.st.DB().Exec("ALTER TABLE audit_events RENAME TO audit_events_away")
				require.NoError(t, err)
				r := w.do()
				_, err = b.st.DB().Exec("ALTER TABLE audit_events_away RENAME TO audit_events")
				require.NoError(t, err)
				require.GreaterOrEqual(t, r.Status, 500, "%s without its audit event must fail: %s", w.name, r.Body)
				require.Equal(t, before, b.state(), "%s failed to audit, yet changed something", w.name)
				require.Equal(t, audits, b.auditActions())

				r = w.do()
				if w.action == "run.kill" && r.Status == 200 { // 202 while the process is being ended
					r.Status = 202
				}
				require.Equal(t, w.status, r.Status, "%s: %s\nserver errors:\n%s", w.name, r.Body, b.errorLines())
				if w.remember != "" {
					lastID[w.remember] = id(r.JSON(t))
				}
				after := b.auditActions()
				require.Equal(t, audits[w.action]+1, after[w.action], "%s: one %s event", w.name, w.action)
				after[w.action]--
				if after[w.action] == 0 {
					delete(after, w.action)
				}
				require.Equal(t, audits, after, "%s wrote only its own event", w.name)
			}
		})
	}
}

// errorLines are the server's error log lines, to say why a request failed.
func (b *bundle) errorLines() string {
	var out []string
	for _, l := range strings.Split(b.logs.String(), "\n") {
		if strings.Contains(l, `"level":"error"`) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

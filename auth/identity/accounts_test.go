package identity_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// replica is one server's service layer and identity service.
type replica struct {
	*service.Service
	id *identity.Service
}

// replicas opens n stores on one database, each with its service and a
// running auth watcher on the real clock (as two scheduler replicas have).
func replicas(t *testing.T, kind string, n int) []replica {
	t.Helper()
	ctx := context.Background()
	var open func() (*store.Store, error)
	if kind == "mysql" {
		dsn := dbtest.MySQL(t)
		open = func() (*store.Store, error) { return store.OpenMySQL(ctx, dsn) }
	} else {
		path := dbtest.SQLitePath(t)
		open = func() (*store.Store, error) { return store.OpenSQLite(ctx, path) }
	}
	var out []replica
	for i := 0; i < n; i++ {
		st, err := open()
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		_, err = st.Migrate(ctx)
		require.NoError(t, err)
		id := identity.New(identity.Options{Store: st, Clock: clockwork.NewRealClock()})
		svc := service.New(service.Options{Store: st, Drivers: targets.NewRegistry(), Clock: clockwork.NewRealClock(), OnAuthChange: id.AuthChanged})
		w := id.Watcher()
		require.NoError(t, w.Start(ctx))
		t.Cleanup(w.Stop)
		out = append(out, replica{svc, id})
	}
	return out
}

// TestRevocationReachesEveryReplica: a token revoked on one replica is
// refused by another (which had it cached) within one second; so are a
// deleted binding's permissions and a logged-out session.
func TestRevocationReachesEveryReplica(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rs := replicas(t, kind, 2)
			one, two := rs[0], rs[1]
			g, err := one.CreateGroup(ctx, service.GroupCreateParams{AppName: "group-a"})
			require.NoError(t, err)
			sa, err := one.id.CreateServiceAccount(ctx, "ci")
			require.NoError(t, err)
			b, err := one.id.CreateBinding(ctx, identity.BindingCreateParams{Role: "operator", GroupID: g.ID, PrincipalID: sa.ID})
			require.NoError(t, err)
			tok, rec, err := one.id.CreateToken(ctx, identity.TokenCreateParams{PrincipalID: sa.ID, Name: "ci"})
			require.NoError(t, err)

			// Replica two caches the token and its permissions.
			for i := 0; i < 3; i++ {
				p, err := two.id.AuthenticateToken(ctx, tok)
				require.NoError(t, err)
				require.True(t, p.Can(access.PermJobsOperate, g.ID))
			}

			require.NoError(t, one.id.DeleteBinding(ctx, b.ID))
			start := time.Now()
			waitUntil(t, time.Second, func() bool {
				p, err := two.id.AuthenticateToken(ctx, tok)
				return err == nil && !p.Can(access.PermJobsOperate, g.ID)
			})
			t.Logf("%s: binding removal seen by the other replica after %s", kind, time.Since(start))

			_, err = one.id.RevokeToken(ctx, rec.ID)
			require.NoError(t, err)
			_, err = one.id.AuthenticateToken(ctx, tok)
			require.ErrorIs(t, err, identity.ErrTokenRevoked, "refused at once where it was revoked")
			start = time.Now()
			waitUntil(t, time.Second, func() bool {
				_, err := two.id.AuthenticateToken(ctx, tok)
				return errors.Is(err, identity.ErrTokenRevoked)
			})
			t.Logf("%s: revocation seen by the other replica after %s", kind, time.Since(start))

			// A session logged out on one replica is refused on the other.
			_, err = one.id.CreateUser(ctx, identity.UserCreateParams{Name: "alice", Password: "a long enough password"})
			require.NoError(t, err)
			res, err := one.id.Login(ctx, identity.LoginParams{Username: "alice", Password: "a long enough password", ClientAddr: "127.0.0.1"})
			require.NoError(t, err)
			_, err = two.id.AuthenticateSession(ctx, res.Cookie)
			require.NoError(t, err, "another replica accepts the session")
			require.NoError(t, one.id.Logout(ctx, res.Session.ID))
			waitUntil(t, time.Second, func() bool {
				_, err := two.id.AuthenticateSession(ctx, res.Cookie)
				return errors.Is(err, identity.ErrSessionExpired)
			})

			// A disabled user's token and session are refused by the other
			// replica too, and work again once it is enabled.
			res, err = one.id.Login(ctx, identity.LoginParams{Username: "alice", Password: "a long enough password", ClientAddr: "127.0.0.1"})
			require.NoError(t, err)
			atok, _, err := one.id.CreateToken(ctx, identity.TokenCreateParams{PrincipalID: res.Principal.ID, Name: "alice's"})
			require.NoError(t, err)
			_, err = two.id.AuthenticateToken(ctx, atok)
			require.NoError(t, err)
			_, err = two.id.AuthenticateSession(ctx, res.Cookie)
			require.NoError(t, err)
			yes, no := true, false
			_, err = one.id.UpdatePrincipal(ctx, identity.PrincipalUpdateParams{Kind: store.PrincipalUser, ID: res.Principal.ID, Disabled: &yes})
			require.NoError(t, err)
			_, err = one.id.AuthenticateToken(ctx, atok)
			require.ErrorIs(t, err, identity.ErrDisabled, "refused at once where it was disabled")
			start = time.Now()
			waitUntil(t, time.Second, func() bool {
				_, terr := two.id.AuthenticateToken(ctx, atok)
				_, serr := two.id.AuthenticateSession(ctx, res.Cookie)
				return errors.Is(terr, identity.ErrDisabled) && errors.Is(serr, identity.ErrUnauthenticated)
			})
			t.Logf("%s: disabling seen by the other replica after %s", kind, time.Since(start))
			_, err = one.id.UpdatePrincipal(ctx, identity.PrincipalUpdateParams{Kind: store.PrincipalUser, ID: res.Principal.ID, Disabled: &no})
			require.NoError(t, err)
			waitUntil(t, time.Second, func() bool {
				_, err := two.id.AuthenticateToken(ctx, atok)
				return err == nil
			})
		})
	}
}

func waitUntil(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s", within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAuditIsAtomicWithTheChange: a successful change has exactly one audit
// event; a refused one none; and when the audit event cannot be written, the
// change is not made either.
func TestAuditIsAtomicWithTheChange(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := service.WithActor(context.Background(), service.Actor{ClientAddr: "192.0.2.7", RequestID: "req-1"})
			b := setup(t, kind)
			count := func(action string) int {
				var n int
				require.NoError(t, b.st.DB().QueryRow("SELECT COUNT(*) FROM audit_events WHERE action = ?", action).Scan(&n))
				return n
			}
			g, err := b.svc.CreateGroup(ctx, service.GroupCreateParams{AppName: "billing", Title: "Billing", ExecutorToken: "a-secret-executor-token"})
			require.NoError(t, err)
			require.Equal(t, 1, count(service.ActGroupCreate))
			page, err := b.svc.ListAudit(ctx, service.AuditListParams{Action: service.ActGroupCreate})
			require.NoError(t, err)
			ev := page.Items[0]
			require.Equal(t, "192.0.2.7", ev.ClientAddr)
			require.Equal(t, "req-1", ev.RequestID)
			require.Equal(t, "system", ev.Principal)
			require.NotContains(t, ev.Changes, "a-secret-executor-token", "secrets are masked")
			require.Contains(t, ev.Changes, `"***"`)

			// Refused: no event.
			_, err = b.svc.CreateGroup(ctx, service.GroupCreateParams{AppName: "billing"})
			require.Error(t, err)
			require.Equal(t, 1, count(service.ActGroupCreate))

			// An edit records before and after of the changed fields only
			// (an edit that does not send the executor token keeps it).
			_, err = b.svc.UpdateGroup(ctx, service.GroupUpdateParams{ID: g.ID, Title: "Billing team"})
			require.NoError(t, err)
			page, err = b.svc.ListAudit(ctx, service.AuditListParams{Action: service.ActGroupUpdate})
			require.NoError(t, err)
			require.JSONEq(t, `{"title":{"before":"Billing","after":"Billing team"}}`, page.Items[0].Changes)
			// Clearing it says so, without the token.
			cleared := ""
			_, err = b.svc.UpdateGroup(ctx, service.GroupUpdateParams{ID: g.ID, Title: "Billing team", ExecutorToken: &cleared})
			require.NoError(t, err)
			page, err = b.svc.ListAudit(ctx, service.AuditListParams{Action: service.ActGroupUpdate})
			require.NoError(t, err)
			require.JSONEq(t, `{"access_token":{"before":"***","after":""},"executor_token":"cleared"}`, page.Items[0].Changes)

			// The audit log cannot be written: the change is not made.
			_, err = b.st.DB().Exec("ALTER TABLE audit_events RENAME TO audit_events_away")
			require.NoError(t, err)
			_, err = b.svc.CreateGroup(ctx, service.GroupCreateParams{AppName: "orphan"})
			require.Error(t, err)
			_, err = b.id.CreateServiceAccount(ctx, "orphan")
			require.Error(t, err)
			_, err = b.st.DB().Exec("ALTER TABLE audit_events_away RENAME TO audit_events")
			require.NoError(t, err)
			gs, err := b.svc.ListGroups(ctx, service.GroupListParams{})
			require.NoError(t, err)
			require.Len(t, gs.Items, 1, "the group without its audit event was rolled back")
			ps, err := b.id.ListPrincipals(ctx, store.PrincipalService, identity.PrincipalListParams{})
			require.NoError(t, err)
			require.Empty(t, ps.Items)

			// Cursor paging and filters.
			for i := 0; i < 5; i++ {
				_, err := b.id.CreateServiceAccount(ctx, "sa-"+string(rune('a'+i)))
				require.NoError(t, err)
			}
			var seen []int64
			cursor := ""
			for {
				p, err := b.svc.ListAudit(ctx, service.AuditListParams{ObjectType: store.PrincipalService, Limit: 2, Cursor: cursor})
				require.NoError(t, err)
				for _, e := range p.Items {
					seen = append(seen, e.ID)
				}
				if p.NextCursor == "" {
					break
				}
				cursor = p.NextCursor
			}
			require.Len(t, seen, 5)
			for i := 1; i < len(seen); i++ {
				require.Greater(t, seen[i-1], seen[i], "newest first")
			}
		})
	}
}

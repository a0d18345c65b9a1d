package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/auth/identity"
)

const testPassword = "correct horse battery"

// createUser makes a local user and grants it role (on group, for group roles).
func (b *bundle) createUser(name, role string, group int64) int64 {
	b.t.Helper()
	u := b.must(201, "POST", "/api/v1/users", map[string]any{"name": name, "password": testPassword})
	if role != "" {
		b.must(201, "POST", "/api/v1/role-bindings", map[string]any{"role": role, "group_id": group, "principal_id": id(u)})
	}
	return id(u)
}

// session is a logged-in browser: its cookie and CSRF token.
type session struct {
	b      *bundle
	cookie *http.Cookie
	csrf   string
}

func (b *bundle) login(name, password string) (resp, *session) {
	b.t.Helper()
	r := b.call("POST", "/api/v1/session", map[string]any{"username": name, "password": password}, "Authorization", "")
	if r.Status != 201 {
		return r, nil
	}
	s := &session{b: b, csrf: r.JSON(b.t)["csrf_token"].(string)}
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "rj_session" {
			s.cookie = c
		}
	}
	require.NotNil(b.t, s.cookie, "no session cookie in %v", r.Header)
	return r, s
}

// call sends a request with the session cookie and, when withCSRF, the token.
func (s *session) call(method, path string, body any, withCSRF bool) resp {
	s.b.t.Helper()
	hdr := []string{"Authorization", "", "Cookie", s.cookie.Name + "=" + s.cookie.Value}
	if withCSRF {
		hdr = append(hdr, "X-CSRF-Token", s.csrf)
	}
	return s.b.call(method, path, body, hdr...)
}

func (b *bundle) auditCount() int {
	b.t.Helper()
	var n int
	require.NoError(b.t, b.st.DB().QueryRow("SELECT COUNT(*) FROM audit_events").Scan(&n))
	return n
}

func TestSessions(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(time.Now())
			b := setup(t, kind, setupOpts{noSched: true, clock: clock,
				access: identity.AccessOptions{SessionIdle: 10 * time.Minute, SessionMax: time.Hour}})
			gid := b.group("sessions", "local://echo")
			b.createUser("alice", "owner", gid)

			r, s := b.login("alice", testPassword)
			require.NotNil(t, s, "%s", r.Body)
			require.True(t, s.cookie.HttpOnly)
			require.Equal(t, http.SameSiteLaxMode, s.cookie.SameSite)
			require.False(t, s.cookie.Secure, "plain HTTP without SecureCookies")
			require.NotContains(t, string(r.Body), s.cookie.Value, "the cookie value is never in a body")

			me := s.call("GET", "/api/v1/me", nil, false).JSON(t)
			require.Equal(t, "alice", me["name"])
			require.Equal(t, "session", me["auth"])
			require.Equal(t, s.csrf, me["csrf_token"])
			require.Equal(t, []any{"groups.edit", "groups.read", "jobs.operate", "jobs.read", "jobs.write", "runs.kill", "runs.read"},
				me["group_permissions"].(map[string]any)[fmt.Sprint(gid)])

			job := map[string]any{"group_id": gid, "name": "by-session", "handler": "h"}
			t.Run("writes need the CSRF token", func(t *testing.T) {
				before := b.counts()
				r := s.call("POST", "/api/v1/jobs", job, false)
				require.Equal(t, 403, r.Status, "%s", r.Body)
				code, _, _ := r.errCode(t)
				require.Equal(t, "csrf_failed", code)
				r = s.call("POST", "/api/v1/jobs", job, false)
				wrong := b.call("POST", "/api/v1/jobs", job, "Authorization", "", "Cookie", "rj_session="+s.cookie.Value, "X-CSRF-Token", "not-the-token")
				require.Equal(t, 403, wrong.Status)
				require.Equal(t, before, b.counts(), "nothing changed")
				require.Equal(t, 201, s.call("POST", "/api/v1/jobs", job, true).Status)
				require.Equal(t, 200, s.call("GET", "/api/v1/jobs", nil, false).Status, "reads need no CSRF token")
			})
			t.Run("idle expiry", func(t *testing.T) {
				_, s2 := b.login("alice", testPassword)
				clock.Advance(9 * time.Minute)
				require.Equal(t, 200, s2.call("GET", "/api/v1/me", nil, false).Status)
				clock.Advance(2 * time.Minute) // 11 minutes since login, 2 since the last use
				require.Equal(t, 200, s2.call("GET", "/api/v1/me", nil, false).Status, "use within the idle time keeps it")
				clock.Advance(11 * time.Minute)
				r := s2.call("GET", "/api/v1/me", nil, false)
				require.Equal(t, 401, r.Status, "%s", r.Body)
			})
			t.Run("absolute expiry", func(t *testing.T) {
				_, s3 := b.login("alice", testPassword)
				for i := 0; i < 6; i++ {
					clock.Advance(9 * time.Minute)
					r := s3.call("GET", "/api/v1/me", nil, false)
					require.Equal(t, 200, r.Status, "%d %s", i, r.Body)
				}
				clock.Advance(9 * time.Minute)
				require.Equal(t, 401, s3.call("GET", "/api/v1/me", nil, false).Status, "63 minutes after login, past session_max")
			})
			t.Run("logout ends the session; the cookie replayed is refused", func(t *testing.T) {
				_, s4 := b.login("alice", testPassword)
				require.Equal(t, 403, s4.call("DELETE", "/api/v1/session", nil, false).Status, "logout needs CSRF too")
				require.Equal(t, 204, s4.call("DELETE", "/api/v1/session", nil, true).Status)
				r := s4.call("GET", "/api/v1/me", nil, false)
				require.Equal(t, 401, r.Status)
				require.Contains(t, string(r.Body), "logged out")
				before := b.counts()
				require.Equal(t, 401, s4.call("POST", "/api/v1/jobs", map[string]any{"group_id": gid, "name": "replayed", "handler": "h"}, true).Status)
				require.Equal(t, before, b.counts())
			})
			t.Run("a stale cookie does not block a new login", func(t *testing.T) {
				r := b.call("POST", "/api/v1/session", map[string]any{"username": "alice", "password": testPassword}, "Authorization", "", "Cookie", "rj_session=stale")
				require.Equal(t, 201, r.Status, "%s", r.Body)
			})
			require.NotContains(t, b.logs.String(), testPassword)
		})
	}
}

func TestSecureCookieBehindTLS(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{noSched: true, secure: true})
	b.createUser("bob", "", 0)
	_, s := b.login("bob", testPassword)
	require.True(t, s.cookie.Secure)
}

func TestLoginLimiter(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(time.Now())
			b := setup(t, kind, setupOpts{noSched: true, clock: clock})
			b.createUser("carol", "", 0)

			// Unknown user and wrong password answer alike.
			r1, _ := b.login("nobody-here", "whatever password")
			r2, _ := b.login("carol", "wrong password!!")
			require.Equal(t, 401, r1.Status)
			require.Equal(t, r1.JSON(t), r2.JSON(t))

			for i := 0; i < 4; i++ {
				r, _ := b.login("carol", "wrong password!!")
				require.Equal(t, 401, r.Status, "%d: %s", i, r.Body)
			}
			// Five failures for carol from this client address: the next
			// attempt waits, even with the right password.
			r, _ := b.login("carol", testPassword)
			require.Equal(t, 429, r.Status, "%s", r.Body)
			require.Equal(t, "1", r.Header.Get("Retry-After"))
			clock.Advance(1100 * time.Millisecond)
			r, s := b.login("carol", testPassword)
			require.Equal(t, 201, r.Status, "%s", r.Body)
			require.NotNil(t, s)
			// The success cleared carol's count from here: five free tries again.
			for i := 0; i < 5; i++ {
				r, _ := b.login("carol", "wrong password!!")
				require.Equal(t, 401, r.Status, "%d: %s", i, r.Body)
			}
			clock.Advance(1100 * time.Millisecond)
			r, _ = b.login("carol", "wrong password!!") // the 6th failure from here: 2 s now
			require.Equal(t, 401, r.Status, "%s", r.Body)
			r, _ = b.login("carol", testPassword)
			require.Equal(t, 429, r.Status, "%s", r.Body)
			require.Equal(t, "2", r.Header.Get("Retry-After"))

			// Failed logins are audited, without the password.
			page := b.must(200, "GET", "/api/v1/audit?action=login.failed", nil)
			require.Len(t, page["items"], 12)
			require.NotContains(t, string(b.call("GET", "/api/v1/audit", nil).Body), "wrong password")

			t.Run("a user locked from one address signs in from another", func(t *testing.T) {
				ctx := context.Background()
				b.createUser("dave", "", 0)
				for i := 0; i < 8; i++ {
					_, err := b.id.Login(ctx, identity.LoginParams{Username: "dave", Password: "wrong password!!", ClientAddr: "10.6.6.6"})
					if i < 5 {
						require.ErrorIs(t, err, identity.ErrLoginFailed)
					} else {
						var th *identity.ThrottledError
						require.ErrorAs(t, err, &th, "the attacker's address waits")
					}
				}
				_, err := b.id.Login(ctx, identity.LoginParams{Username: "dave", Password: testPassword, ClientAddr: "10.6.6.6"})
				var th *identity.ThrottledError
				require.ErrorAs(t, err, &th, "even with the right password, from the attacker's address")
				_, err = b.id.Login(ctx, identity.LoginParams{Username: "DAVE", Password: "wrong password!!", ClientAddr: "10.6.6.6"})
				require.ErrorAs(t, err, &th, "the name is compared case-folded")
				_, err = b.id.Login(ctx, identity.LoginParams{Username: "dave", Password: testPassword, ClientAddr: "10.9.9.9"})
				require.NoError(t, err, "dave from his own address is not locked out")
				page := b.must(200, "GET", "/api/v1/audit?action=login.throttled", nil)
				require.GreaterOrEqual(t, len(page["items"].([]any)), 4, "throttled logins are audited")
			})
			t.Run("guessing spread over many addresses is bounded per user", func(t *testing.T) {
				ctx := context.Background()
				b.createUser("erin", "", 0)
				for i := 0; i < identity.DefaultUserFreeTries; i++ {
					_, err := b.id.Login(ctx, identity.LoginParams{Username: "erin", Password: "wrong password!!", ClientAddr: fmt.Sprintf("10.1.%d.%d", i/200, i%200)})
					require.ErrorIs(t, err, identity.ErrLoginFailed, "%d", i)
				}
				_, err := b.id.Login(ctx, identity.LoginParams{Username: "erin", Password: testPassword, ClientAddr: "10.9.9.8"})
				var th *identity.ThrottledError
				require.ErrorAs(t, err, &th)
			})
			t.Run("parallel attempts count while they are checked", func(t *testing.T) {
				ctx := context.Background()
				b.createUser("frank", "", 0)
				var wg sync.WaitGroup
				var mu sync.Mutex
				outcomes := map[string]int{}
				for i := 0; i < 16; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, err := b.id.Login(ctx, identity.LoginParams{Username: "frank", Password: "wrong password!!", ClientAddr: "10.7.7.7"})
						var th *identity.ThrottledError
						var busy *identity.BusyError
						k := "other: " + fmt.Sprint(err)
						switch {
						case errors.Is(err, identity.ErrLoginFailed):
							k = "checked"
						case errors.As(err, &th):
							k = "throttled"
						case errors.As(err, &busy):
							k = "busy"
						}
						mu.Lock()
						outcomes[k]++
						mu.Unlock()
					}()
				}
				wg.Wait()
				require.LessOrEqual(t, outcomes["checked"], identity.DefaultLoginFreeTries, "%v", outcomes)
				require.Equal(t, 16, outcomes["checked"]+outcomes["throttled"]+outcomes["busy"], "%v", outcomes)
			})
		})
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(time.Now())
			b := setup(t, kind, setupOpts{noSched: true, clock: clock, watch: true})
			gid := b.group("ci-group", "local://echo")
			sa := b.must(201, "POST", "/api/v1/service-accounts", map[string]any{"name": "ci"})
			b.must(201, "POST", "/api/v1/role-bindings", map[string]any{"role": "operator", "group_id": gid, "principal_id": id(sa)})
			tok := b.must(201, "POST", "/api/v1/tokens", map[string]any{"name": "github-actions", "principal_id": id(sa), "expires_in_sec": 3600})
			secret := tok["token"].(string)
			require.True(t, strings.HasPrefix(secret, "rj_"))
			before := len(b.must(200, "GET", fmt.Sprintf("/api/v1/tokens?principal_id=%d", id(sa)), nil)["items"].([]any))
			for _, bad := range []struct {
				body  map[string]any
				field string
			}{
				{map[string]any{"expires_in_sec": 0}, "expires_in_sec"},
				{map[string]any{"expires_in_sec": 10*365*24*3600 + 1}, "expires_in_sec"},
				{map[string]any{"expires_at": "9999-12-31T00:00:00Z"}, "expires_at"},
				{map[string]any{"expires_at": clock.Now().Add(11 * 365 * 24 * time.Hour).UTC().Format(time.RFC3339)}, "expires_at"},
			} {
				bad.body["name"], bad.body["principal_id"] = "bad-expiry", id(sa)
				r := b.call("POST", "/api/v1/tokens", bad.body)
				require.Equal(t, 400, r.Status, "%v: %s", bad.body, r.Body)
				_, field, _ := r.errCode(t)
				require.Equal(t, bad.field, field, "%v", bad.body)
			}
			require.Len(t, b.must(200, "GET", fmt.Sprintf("/api/v1/tokens?principal_id=%d", id(sa)), nil)["items"], before, "no token was made")
			require.True(t, strings.HasPrefix(secret, tok["prefix"].(string)))
			ci := func(method, path string, body any) resp {
				return b.call(method, path, body, "Authorization", "Bearer "+secret)
			}
			me := ci("GET", "/api/v1/me", nil).JSON(t)
			require.Equal(t, "ci", me["name"])
			require.Equal(t, "github-actions", me["token_name"])

			list := b.must(200, "GET", fmt.Sprintf("/api/v1/tokens?principal_id=%d", id(sa)), nil)
			require.Len(t, list["items"], 1)
			item := list["items"].([]any)[0].(map[string]any)
			require.Nil(t, item["token"], "a listed token never shows its secret")
			require.Equal(t, "ci", item["principal_name"], "a listed token names its owner")
			require.Equal(t, "ci", b.must(200, "GET", fmt.Sprintf("/api/v1/tokens/%d", id(tok)), nil)["principal_name"])
			require.Eventually(t, func() bool { // written by the auth watcher, off the request path
				it := b.must(200, "GET", fmt.Sprintf("/api/v1/tokens/%d", id(tok)), nil)
				return it["last_used_at"] != nil
			}, 5*time.Second, 10*time.Millisecond)
			require.NotNil(t, item["expires_at"])
			require.NotContains(t, fmt.Sprint(list), secret)

			t.Run("expired", func(t *testing.T) {
				short := b.must(201, "POST", "/api/v1/tokens", map[string]any{"name": "short", "principal_id": id(sa), "expires_in_sec": 60})
				require.Equal(t, 200, b.call("GET", "/api/v1/me", nil, "Authorization", "Bearer "+short["token"].(string)).Status)
				clock.Advance(61 * time.Second)
				r := b.call("GET", "/api/v1/me", nil, "Authorization", "Bearer "+short["token"].(string))
				require.Equal(t, 401, r.Status)
				require.Contains(t, string(r.Body), "expired")
			})
			t.Run("revoked at once", func(t *testing.T) {
				require.Equal(t, 200, ci("GET", "/api/v1/jobs", nil).Status)
				rev := b.must(200, "DELETE", fmt.Sprintf("/api/v1/tokens/%d", id(tok)), nil)
				require.NotNil(t, rev["revoked_at"])
				r := ci("GET", "/api/v1/jobs", nil)
				require.Equal(t, 401, r.Status)
				require.Contains(t, string(r.Body), "revoked")
			})
			t.Run("malformed", func(t *testing.T) {
				for _, h := range []string{"Bearer", "Basic abc", "Bearer rj_nope", "Bearer " + strings.Repeat("x", 2000), "Bearer \xff\xfe"} {
					r := b.call("GET", "/api/v1/me", nil, "Authorization", h)
					require.Equal(t, 401, r.Status, "%.40q: %s", h, r.Body)
				}
			})
			t.Run("token of a deleted service account", func(t *testing.T) {
				sa2 := b.must(201, "POST", "/api/v1/service-accounts", map[string]any{"name": "temp"})
				t2 := b.must(201, "POST", "/api/v1/tokens", map[string]any{"name": "t", "principal_id": id(sa2)})
				require.Equal(t, 200, b.call("GET", "/api/v1/me", nil, "Authorization", "Bearer "+t2["token"].(string)).Status)
				b.must(204, "DELETE", fmt.Sprintf("/api/v1/service-accounts/%d", id(sa2)), nil)
				require.Equal(t, 401, b.call("GET", "/api/v1/me", nil, "Authorization", "Bearer "+t2["token"].(string)).Status)
			})
			t.Run("a principal reaches only its own tokens", func(t *testing.T) {
				own := b.must(201, "POST", "/api/v1/tokens", map[string]any{"name": "own", "principal_id": id(sa)})
				sec := own["token"].(string)
				as := func(method, path string, body any) resp {
					return b.call(method, path, body, "Authorization", "Bearer "+sec)
				}
				mine := as("POST", "/api/v1/tokens", map[string]any{"name": "self-made"})
				require.Equal(t, 201, mine.Status, "%s", mine.Body)
				r := as("GET", "/api/v1/tokens", nil).JSON(t)
				for _, it := range r["items"].([]any) {
					require.Equal(t, float64(id(sa)), it.(map[string]any)["principal_id"])
				}
				other := as("POST", "/api/v1/tokens", map[string]any{"name": "for someone else", "principal_id": 999})
				require.Equal(t, 403, other.Status)
				require.Equal(t, 403, as("GET", "/api/v1/tokens/1", nil).Status, "the initial admin token is not theirs")
				require.Equal(t, 403, as("DELETE", "/api/v1/tokens/1", nil).Status)
			})
			require.NotContains(t, b.logs.String(), secret)
		})
	}
}

func TestAccountsBadInput(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			b := setup(t, kind, setupOpts{noSched: true})
			gid := b.group("bad-input", "local://echo")
			admin := b.createUser("root-user", "admin", 0)
			sa := id(b.must(201, "POST", "/api/v1/service-accounts", map[string]any{"name": "svc"}))
			cases := []struct {
				name, method, path string
				body               any
				status             int
				field              string
			}{
				{"unknown role", "POST", "/api/v1/role-bindings", map[string]any{"role": "superuser", "group_id": gid, "principal_id": sa}, 400, "role"},
				{"group that does not exist", "POST", "/api/v1/role-bindings", map[string]any{"role": "viewer", "group_id": 9999, "principal_id": sa}, 400, "group_id"},
				{"group role without group", "POST", "/api/v1/role-bindings", map[string]any{"role": "viewer", "principal_id": sa}, 400, "group_id"},
				{"admin on a group", "POST", "/api/v1/role-bindings", map[string]any{"role": "admin", "group_id": gid, "principal_id": sa}, 400, "group_id"},
				{"principal that does not exist", "POST", "/api/v1/role-bindings", map[string]any{"role": "viewer", "group_id": gid, "principal_id": 9999}, 400, "principal_id"},
				{"both principal and sso group", "POST", "/api/v1/role-bindings", map[string]any{"role": "viewer", "group_id": gid, "principal_id": sa, "sso_group": "x"}, 400, "sso_group"},
				{"oversized username", "POST", "/api/v1/users", map[string]any{"name": strings.Repeat("a", 65), "password": testPassword}, 400, "name"},
				{"non-UTF-8 username", "POST", "/api/v1/users", "{\"name\": \"bad\xff\", \"password\": \"correct horse battery\"}", 400, ""},
				{"username with spaces", "POST", "/api/v1/users", map[string]any{"name": "a b", "password": testPassword}, 400, "name"},
				{"short password", "POST", "/api/v1/users", map[string]any{"name": "shorty", "password": "short"}, 400, "password"},
				{"taken name", "POST", "/api/v1/service-accounts", map[string]any{"name": "svc"}, 409, "name"},
				{"token in the past", "POST", "/api/v1/tokens", map[string]any{"name": "x", "principal_id": sa, "expires_at": "2001-01-01T00:00:00Z"}, 400, "expires_at"},
				{"token without name", "POST", "/api/v1/tokens", map[string]any{"principal_id": sa}, 400, "name"},
				{"token for nobody", "POST", "/api/v1/tokens", map[string]any{"name": "x", "principal_id": 9999}, 404, ""},
				{"oversized login name", "POST", "/api/v1/session", map[string]any{"username": strings.Repeat("a", 300), "password": "x"}, 400, "username"},
				{"non-UTF-8 login name", "POST", "/api/v1/session", "{\"username\": \"\xff\xfe\", \"password\": \"x\"}", 400, ""},
				{"last admin removed", "DELETE", fmt.Sprintf("/api/v1/users/%d", admin), nil, 409, ""},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					before, audits := b.counts(), b.auditCount()
					var n int
					require.NoError(t, b.st.DB().QueryRow("SELECT (SELECT COUNT(*) FROM principals) + (SELECT COUNT(*) FROM role_bindings) + (SELECT COUNT(*) FROM api_tokens)").Scan(&n))
					r := b.call(c.method, c.path, c.body)
					require.Equal(t, c.status, r.Status, "%s", r.Body)
					_, field, msg := r.errCode(t)
					require.Equal(t, c.field, field, msg)
					require.NotEmpty(t, msg)
					require.Equal(t, before, b.counts())
					require.Equal(t, audits, b.auditCount(), "a refused change writes no audit row")
					var m int
					require.NoError(t, b.st.DB().QueryRow("SELECT (SELECT COUNT(*) FROM principals) + (SELECT COUNT(*) FROM role_bindings) + (SELECT COUNT(*) FROM api_tokens)").Scan(&m))
					require.Equal(t, n, m, "nothing changed")
				})
			}
			t.Run("last admin binding removed", func(t *testing.T) {
				bs := b.must(200, "GET", "/api/v1/role-bindings", nil)
				var adminBinding int64
				for _, it := range bs["items"].([]any) {
					if m := it.(map[string]any); m["role"] == "admin" && int64(m["principal_id"].(float64)) == admin {
						adminBinding = id(m)
					}
				}
				r := b.call("DELETE", fmt.Sprintf("/api/v1/role-bindings/%d", adminBinding), nil)
				require.Equal(t, 409, r.Status, "%s", r.Body)
				require.Contains(t, string(r.Body), "last admin")
				// With a second admin, the first may go.
				b.createUser("second-admin", "admin", 0)
				b.must(204, "DELETE", fmt.Sprintf("/api/v1/role-bindings/%d", adminBinding), nil)
			})
		})
	}
}

func TestListsShowOnlyWhatMayBeSeen(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{noSched: true})
	ga := b.group("visible", "local://echo")
	gb := b.group("hidden", "local://echo")
	ja := b.job(map[string]any{"group_id": ga, "name": "a", "handler": "h"})
	b.job(map[string]any{"group_id": gb, "name": "b", "handler": "h"})
	ctx := context.Background()
	_ = ctx
	b.createUser("vera", "viewer", ga)
	_, s := b.login("vera", testPassword)

	groups := s.call("GET", "/api/v1/groups", nil, false).JSON(t)["items"].([]any)
	require.Len(t, groups, 1)
	require.Equal(t, float64(ga), groups[0].(map[string]any)["id"])
	jobs := s.call("GET", "/api/v1/jobs", nil, false).JSON(t)["items"].([]any)
	require.Len(t, jobs, 1)
	require.Equal(t, float64(id(ja)), jobs[0].(map[string]any)["id"])
	require.Len(t, s.call("GET", "/api/v1/runs", nil, false).JSON(t)["items"], 0)
	r := s.call("GET", fmt.Sprintf("/api/v1/jobs?group_id=%d", gb), nil, false)
	require.Equal(t, 403, r.Status)
	require.Contains(t, string(r.Body), "jobs.read")
}

// TestUserLifecycle: a user changes its own password (the old one
// required), an admin renames and disables it (its session and token are
// refused at once), enables it again, and cannot disable the last admin.
func TestUserLifecycle(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			b := setup(t, kind, setupOpts{noSched: true})
			gid := b.group("lifecycle", "local://echo")
			root := b.createUser("root", "admin", 0)
			bob := b.createUser("bob", "viewer", gid)
			_, s := b.login("bob", testPassword)
			_, other := b.login("bob", testPassword)
			tok := s.call("POST", "/api/v1/tokens", map[string]any{"name": "laptop"}, true).JSON(t)["token"].(string)
			asToken := func(method, path string, body any) resp {
				return b.call(method, path, body, "Authorization", "Bearer "+tok)
			}
			hash := func() string {
				var h string
				require.NoError(t, b.st.DB().QueryRow("SELECT password_hash FROM principals WHERE id = ?", bob).Scan(&h))
				return h
			}

			// Own password: the old one is required and must be right.
			before := hash()
			for _, c := range []struct {
				body  map[string]any
				field string
			}{
				{map[string]any{"new_password": "a brand new password"}, "old_password"},
				{map[string]any{"old_password": "not my password", "new_password": "a brand new password"}, "old_password"},
				{map[string]any{"old_password": testPassword, "new_password": "short"}, "new_password"},
				{map[string]any{"old_password": testPassword, "new_password": testPassword}, "new_password"},
			} {
				r := s.call("PUT", "/api/v1/me/password", c.body, true)
				require.Equal(t, 400, r.Status, "%s", r.Body)
				_, field, msg := r.errCode(t)
				require.Equal(t, c.field, field, msg)
				require.Equal(t, before, hash(), "a refused change changes nothing")
			}
			require.Equal(t, 403, s.call("PUT", "/api/v1/me/password", map[string]any{"old_password": testPassword, "new_password": "a brand new password"}, false).Status,
				"a session write needs its CSRF token")
			r := b.call("PUT", "/api/v1/me/password", map[string]any{"old_password": "x", "new_password": "a brand new password"})
			require.Equal(t, 400, r.Status, "the server token belongs to no user: %s", r.Body)
			require.Equal(t, 204, s.call("PUT", "/api/v1/me/password", map[string]any{"old_password": testPassword, "new_password": "a brand new password"}, true).Status)
			require.NotEqual(t, before, hash())
			require.Equal(t, 200, s.call("GET", "/api/v1/me", nil, false).Status, "the session that changed it stays")
			require.Equal(t, 401, other.call("GET", "/api/v1/me", nil, false).Status, "the user's other sessions end")
			require.Equal(t, 200, asToken("GET", "/api/v1/me", nil).Status, "tokens stay")
			r, _ = b.login("bob", testPassword)
			require.Equal(t, 401, r.Status)
			_, s = b.login("bob", "a brand new password")
			require.NotNil(t, s)

			// Rename: the user's credentials follow the new name.
			renamed := b.must(200, "PATCH", fmt.Sprintf("/api/v1/users/%d", bob), map[string]any{"name": "robert", "email": "robert@example.com"})
			require.Equal(t, "robert", renamed["name"])
			require.Equal(t, "robert@example.com", renamed["email"])
			require.Equal(t, "robert", s.call("GET", "/api/v1/me", nil, false).JSON(t)["name"])
			for _, c := range []struct {
				body   map[string]any
				status int
				field  string
			}{
				{map[string]any{"name": "root"}, 409, "name"},
				{map[string]any{"name": "has space"}, 400, "name"},
				{map[string]any{"name": strings.Repeat("x", 65)}, 400, "name"},
				{map[string]any{"email": strings.Repeat("x", 256)}, 400, "email"},
				{map[string]any{"role": "admin"}, 400, "role"},
			} {
				r := b.call("PATCH", fmt.Sprintf("/api/v1/users/%d", bob), c.body)
				require.Equal(t, c.status, r.Status, "%v: %s", c.body, r.Body)
				_, field, _ := r.errCode(t)
				require.Equal(t, c.field, field)
			}
			require.Equal(t, "robert", b.must(200, "GET", fmt.Sprintf("/api/v1/users/%d", bob), nil)["name"])

			// Disable: session and token refused at once; login refused.
			require.Equal(t, true, b.must(200, "PATCH", fmt.Sprintf("/api/v1/users/%d", bob), map[string]any{"disabled": true})["disabled"])
			r = asToken("GET", "/api/v1/me", nil)
			require.Equal(t, 401, r.Status)
			require.Contains(t, string(r.Body), "disabled")
			require.Equal(t, 401, s.call("GET", "/api/v1/me", nil, false).Status)
			r, _ = b.login("robert", "a brand new password")
			require.Equal(t, 401, r.Status)
			require.Contains(t, string(r.Body), "disabled")
			b.must(200, "PATCH", fmt.Sprintf("/api/v1/users/%d", bob), map[string]any{"disabled": false})
			require.Equal(t, 200, asToken("GET", "/api/v1/me", nil).Status, "enabled again: its tokens work")

			// The last admin can be neither disabled nor deleted nor demoted.
			audits := b.auditCount()
			r = b.call("PATCH", fmt.Sprintf("/api/v1/users/%d", root), map[string]any{"disabled": true})
			require.Equal(t, 409, r.Status, "%s", r.Body)
			require.Contains(t, string(r.Body), "last admin")
			require.Equal(t, false, b.must(200, "GET", fmt.Sprintf("/api/v1/users/%d", root), nil)["disabled"])
			require.Equal(t, 409, b.call("DELETE", fmt.Sprintf("/api/v1/users/%d", root), nil).Status)
			require.Equal(t, audits, b.auditCount())

			// Every change is in the audit log with its before and after.
			page := b.must(200, "GET", fmt.Sprintf("/api/v1/audit?object_type=user&object_id=%d", bob), nil)
			var actions []string
			for _, it := range page["items"].([]any) {
				actions = append(actions, it.(map[string]any)["action"].(string))
			}
			require.Equal(t, []string{"user.update", "login.failed", "user.update", "user.update", "user.password"}, actions[:5],
				"enabled, refused login while disabled, disabled, renamed, own password")
			renameEvent := page["items"].([]any)[3].(map[string]any)
			require.Equal(t, map[string]any{"name": map[string]any{"before": "bob", "after": "robert"}, "email": map[string]any{"before": "", "after": "robert@example.com"}}, renameEvent["changes"])
		})
	}
}

// TestTrustedProxies: X-Forwarded-For names the client only when the peer
// is a trusted proxy, and is read from the right, so a client cannot choose
// the address the limiter and the audit log key on.
func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	failedFrom := func(t *testing.T, b *bundle, xff string) string {
		t.Helper()
		r := b.call("POST", "/api/v1/session", map[string]any{"username": "nobody", "password": "wrong password!!"}, "Authorization", "", "X-Forwarded-For", xff)
		require.Equal(t, 401, r.Status, "%s", r.Body)
		page := b.must(200, "GET", "/api/v1/audit?action=login.failed&limit=1", nil)["items"].([]any)
		return page[0].(map[string]any)["client_addr"].(string)
	}
	t.Run("no trusted proxy: the peer", func(t *testing.T) {
		b := setup(t, "sqlite", setupOpts{noSched: true})
		require.Equal(t, "127.0.0.1", failedFrom(t, b, "203.0.113.9"))
	})
	t.Run("behind a trusted proxy", func(t *testing.T) {
		b := setup(t, "sqlite", setupOpts{noSched: true, proxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8")}})
		for xff, want := range map[string]string{
			"203.0.113.9":                    "203.0.113.9",
			"198.51.100.7, 203.0.113.9":      "203.0.113.9", // the left entry is the client's own claim
			"203.0.113.9, 10.1.2.3":          "203.0.113.9", // a second trusted proxy is skipped
			"not-an-address, 203.0.113.9":    "203.0.113.9",
			"203.0.113.9, not-an-address":    "127.0.0.1",
			"":                               "127.0.0.1",
			"[2001:db8::1]:443, 2001:db8::2": "2001:db8::2",
			"::ffff:203.0.113.10, 127.0.0.1": "203.0.113.10",
		} {
			require.Equal(t, want, failedFrom(t, b, xff), "X-Forwarded-For: %q", xff)
		}
	})
}

// TestDeviceProofOfRecentSuccess: an attacker who trips the user-wide login
// limit from many addresses does not lock the user's own device out: a
// device that signed in recently holds a signed device cookie that exempts
// it from that limit (only). Without the cookie, or with a forged, expired
// or another user's one, the user is throttled like anybody.
func TestDeviceProofOfRecentSuccess(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(time.Now())
			b := setup(t, kind, setupOpts{noSched: true, clock: clock, proxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
				access: identity.AccessOptions{UserFreeTries: 10, DeviceProofTTL: 10 * time.Minute}})
			b.createUser("grace", "", 0)
			b.createUser("heidi", "", 0)
			const home = "203.0.113.5"
			login := func(user, password, from, device string) resp {
				t.Helper()
				hdr := []string{"Authorization", "", "X-Forwarded-For", from}
				if device != "" {
					hdr = append(hdr, "Cookie", "rj_device="+device)
				}
				return b.call("POST", "/api/v1/session", map[string]any{"username": user, "password": password}, hdr...)
			}
			deviceCookie := func(r resp) *http.Cookie {
				t.Helper()
				for _, c := range (&http.Response{Header: r.Header}).Cookies() {
					if c.Name == "rj_device" {
						return c
					}
				}
				t.Fatalf("no device cookie in %v", r.Header)
				return nil
			}
			// attack fails n logins of grace, each from an address of its own
			// (so the per-address keys never trip).
			next := 0
			attack := func(n int) {
				t.Helper()
				for i := 0; i < n; i++ {
					next++
					r := login("grace", "wrong password!!", fmt.Sprintf("198.51.%d.%d", next/200, next%200), "")
					require.Equal(t, 401, r.Status, "attempt %d: %s", next, r.Body)
				}
			}

			r := login("grace", testPassword, home, "")
			require.Equal(t, 201, r.Status, "%s", r.Body)
			proof := deviceCookie(r)
			require.True(t, proof.HttpOnly)
			require.Equal(t, http.SameSiteStrictMode, proof.SameSite)
			require.Equal(t, "/api/v1/session", proof.Path, "sent to the login only")
			require.False(t, proof.Secure, "plain HTTP without secure cookies configured")
			require.WithinDuration(t, clock.Now().Add(10*time.Minute), proof.Expires, 2*time.Second)
			r = login("heidi", testPassword, "203.0.113.77", "")
			require.Equal(t, 201, r.Status, "%s", r.Body)
			heidis := deviceCookie(r).Value

			attack(10)
			r = login("grace", testPassword, home, "")
			require.Equal(t, 429, r.Status, "without the cookie grace is throttled: %s", r.Body)
			r = login("grace", testPassword, home, proof.Value)
			require.Equal(t, 201, r.Status, "with it she signs in: %s", r.Body)
			renewed := deviceCookie(r).Value

			// Forged: another signature, an altered expiry, another user's
			// cookie, garbage.
			forged := proof.Value[:len(proof.Value)-2] + "AA"
			if forged == proof.Value {
				forged = proof.Value[:len(proof.Value)-2] + "BB"
			}
			parts := strings.Split(proof.Value, ".")
			require.Len(t, parts, 4)
			later := strings.Join([]string{parts[0], "99999999999999", parts[2], parts[3]}, ".")
			for name, bad := range map[string]string{"bad signature": forged, "altered expiry": later, "heidi's": heidis, "garbage": "v1.x.y.z"} {
				r = login("grace", testPassword, home, bad)
				require.Equal(t, 429, r.Status, "%s cookie: %s", name, r.Body)
			}

			// The per-address limits still apply to a device with the cookie:
			// five wrong passwords of grace from her own address, then the
			// right one waits.
			for i := 0; i < 5; i++ {
				r = login("grace", "wrong password!!", home, renewed)
				require.Equal(t, 401, r.Status, "%d: %s", i, r.Body)
			}
			r = login("grace", testPassword, home, renewed)
			require.Equal(t, 429, r.Status, "the user+address limit holds: %s", r.Body)

			// Expired: once the user-wide delay has passed, grace signs in from
			// another address and gets a fresh cookie; when the first one has
			// expired and the attacker trips the limit again, the first gives
			// no exemption, the fresh one does.
			clock.Advance(5 * time.Minute)
			r = login("grace", testPassword, "203.0.113.8", "")
			require.Equal(t, 201, r.Status, "%s", r.Body)
			fresh := deviceCookie(r).Value
			clock.Advance(5*time.Minute + time.Second)
			attack(1)
			r = login("grace", testPassword, "203.0.113.6", proof.Value)
			require.Equal(t, 429, r.Status, "expired cookie: %s", r.Body)
			r = login("grace", testPassword, "203.0.113.6", fresh)
			require.Equal(t, 201, r.Status, "fresh cookie: %s", r.Body)
			r = login("grace", testPassword, "203.0.113.6", "")
			require.Equal(t, 429, r.Status, "%s", r.Body)
		})
	}
}

package api_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"
	"github.com/zitadel/oidc/v3/example/server/storage"
	zoidc "github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/ringjob/ringjob/auth/sso"
)

// issuer is a real OpenID provider in the test process, built from
// zitadel's OpenID Provider package (op) with its example storage: discovery,
// JWKS, authorization with PKCE, a token endpoint that checks the client
// secret and the verifier, and signed ID tokens. Its login page signs the
// user of claims in at once. Knobs make it misbehave, each through a seam of
// op's own interfaces (signing key, audience, token lifetime).
type issuer struct {
	srv      *httptest.Server
	store    *storage.Storage
	clients  map[string]*storage.Client
	otherKey *rsa.PrivateKey // signs "bad signature" tokens under the real key's id

	mu        sync.Mutex
	claims    map[string]any // of the next login: preferred_username, email, groups
	badSig    bool
	audience  string
	expiresIn time.Duration
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	is := &issuer{otherKey: other, audience: "ringjob", expiresIn: time.Hour}
	mux := http.NewServeMux()
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	// Ringjob's callback is not known yet (its server starts later):
	// allowRedirect registers the client.
	is.clients = map[string]*storage.Client{}
	is.store = storage.NewStorageWithClients(issuerUsers{is}, is.clients)
	var key [32]byte
	_, err = rand.Read(key[:])
	require.NoError(t, err)
	prov, err := op.NewProvider(&op.Config{CryptoKey: key, CodeMethodS256: true}, issuerStorage{Storage: is.store, is: is},
		op.StaticIssuer(is.srv.URL), op.WithAllowInsecure())
	require.NoError(t, err)
	mux.HandleFunc("/login/username", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("authRequestID")
		if err := is.store.CheckUsernamePassword(is.username(), "pw", id); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, is.srv.URL+"/authorize/callback?id="+url.QueryEscape(id), http.StatusFound)
	})
	mux.Handle("/", prov)
	return is
}

// allowRedirect registers Ringjob (client "ringjob", secret "s3cret") with
// its callback URL.
func (is *issuer) allowRedirect(callback string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.clients["ringjob"] = storage.WebClient("ringjob", "s3cret", callback)
}

func (is *issuer) username() string {
	is.mu.Lock()
	defer is.mu.Unlock()
	u, _ := is.claims["preferred_username"].(string)
	return u
}

// issuerUsers is the issuer's one user: whoever the claims say.
type issuerUsers struct{ is *issuer }

func (u issuerUsers) GetUserByID(id string) *storage.User {
	if id != "user-42" {
		return nil
	}
	u.is.mu.Lock()
	defer u.is.mu.Unlock()
	name, _ := u.is.claims["preferred_username"].(string)
	email, _ := u.is.claims["email"].(string)
	return &storage.User{ID: "user-42", Username: name, Password: "pw", Email: email, EmailVerified: true}
}

func (u issuerUsers) GetUserByUsername(name string) *storage.User {
	if usr := u.GetUserByID("user-42"); usr != nil && usr.Username == name {
		return usr
	}
	return nil
}

func (u issuerUsers) ExampleClientID() string { return "service" }

// issuerStorage is the example storage with the knobs: the groups claim,
// a foreign signing key, another audience, the ID token's lifetime, and
// every claim in the ID token (as most IdPs are configured for groups).
type issuerStorage struct {
	*storage.Storage
	is *issuer
}

func (s issuerStorage) SetUserinfoFromScopes(ctx context.Context, info *zoidc.UserInfo, userID, clientID string, scopes []string) error {
	if err := s.Storage.SetUserinfoFromScopes(ctx, info, userID, clientID, scopes); err != nil {
		return err
	}
	s.is.mu.Lock()
	defer s.is.mu.Unlock()
	if g, ok := s.is.claims["groups"]; ok {
		info.AppendClaims("groups", g)
	}
	return nil
}

func (s issuerStorage) SigningKey(ctx context.Context) (op.SigningKey, error) {
	k, err := s.Storage.SigningKey(ctx)
	if err != nil {
		return nil, err
	}
	s.is.mu.Lock()
	defer s.is.mu.Unlock()
	if s.is.badSig {
		return foreignKey{id: k.ID(), key: s.is.otherKey}, nil
	}
	return k, nil
}

func (s issuerStorage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	r, err := s.Storage.AuthRequestByCode(ctx, code)
	if err != nil {
		return nil, err
	}
	s.is.mu.Lock()
	defer s.is.mu.Unlock()
	return audienceOf{AuthRequest: r, aud: s.is.audience}, nil
}

func (s issuerStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	s.is.mu.Lock()
	defer s.is.mu.Unlock()
	return lifetimeOf{Client: c, idToken: s.is.expiresIn, id: s.is.audience}, nil
}

type foreignKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k foreignKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k foreignKey) Key() any                                    { return k.key }
func (k foreignKey) ID() string                                  { return k.id }

type audienceOf struct {
	op.AuthRequest
	aud string
}

// The token is issued to another client: op always adds the client's id to
// the audience, so the client id itself is what the knob changes (on the
// request and the client alike, which op compares).
func (a audienceOf) GetAudience() []string { return []string{a.aud} }
func (a audienceOf) GetClientID() string   { return a.aud }

type lifetimeOf struct {
	op.Client
	idToken time.Duration
	id      string
}

func (c lifetimeOf) GetID() string                        { return c.id }
func (c lifetimeOf) IDTokenLifetime() time.Duration       { return c.idToken }
func (c lifetimeOf) IDTokenUserinfoClaimsAssertion() bool { return true }

func (is *issuer) set(f func(is *issuer)) {
	is.mu.Lock()
	defer is.mu.Unlock()
	f(is)
}

// noFollow is a client that shows redirects instead of following them.
var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, u string, cookies ...*http.Cookie) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	require.NoError(t, err)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	res, err := noFollow.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	return res
}

// ssoStart runs the browser's part of a sign-in up to Ringjob's callback:
// the callback URL the issuer sends the browser to, and the state cookie
// Ringjob gave the browser that started it.
func ssoStart(t *testing.T, b *bundle, returnTo string) (callback string, state *http.Cookie) {
	t.Helper()
	start := get(t, b.url+"/api/v1/sso/login?return_to="+url.QueryEscape(returnTo))
	require.Equal(t, 302, start.StatusCode)
	for _, c := range start.Cookies() {
		if c.Name == "ringjob_sso_state" {
			state = c
		}
	}
	require.NotNil(t, state, "the login sets the state cookie")
	require.True(t, state.HttpOnly)
	require.Equal(t, "/api/v1/sso/callback", state.Path)
	next := start.Header.Get("Location")
	for hops := 0; !strings.HasPrefix(next, b.url); hops++ {
		require.Less(t, hops, 5, "the issuer keeps redirecting")
		atIdP := get(t, next)
		require.Equal(t, 302, atIdP.StatusCode, "the issuer refused the authorization request at %s", next)
		loc, err := atIdP.Location()
		require.NoError(t, err)
		next = loc.String()
	}
	return next, state
}

// ssoLogin runs the browser's part of a sign-in and returns the answer of
// Ringjob's callback and the callback URL (to replay it).
func ssoLogin(t *testing.T, b *bundle) (*http.Response, string) {
	t.Helper()
	callback, state := ssoStart(t, b, "/jobs")
	return get(t, callback, state), callback
}

// sessionOf is the session cookie an answer sets (nil when none).
func sessionOf(res *http.Response) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == "rj_session" && c.Value != "" {
			return c
		}
	}
	return nil
}

func TestSSO(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			is := newIssuer(t)
			b := setup(t, kind, setupOpts{noSched: true, sso: func(u string) *sso.Provider {
				is.allowRedirect(u + "/api/v1/sso/callback")
				return sso.New(sso.Config{IssuerURL: is.srv.URL, ClientID: "ringjob", ClientSecret: "s3cret", RedirectURL: u + "/api/v1/sso/callback",
					UsernameClaim: "preferred_username", GroupsClaim: "groups"}, nil)
			}})
			gid := b.group("billing", "local://echo")
			b.must(201, "POST", "/api/v1/role-bindings", map[string]any{"role": "operator", "group_id": gid, "sso_group": "billing-devs"})
			require.Equal(t, map[string]any{"enabled": true, "login_url": "/api/v1/sso/login"}, b.call("GET", "/api/v1/sso", nil, "Authorization", "").JSON(t))

			t.Run("login maps the claims and the group binding", func(t *testing.T) {
				is.set(func(is *issuer) {
					is.claims = map[string]any{"preferred_username": "erin", "email": "erin@example.com", "groups": []string{"billing-devs", "everyone"}}
				})
				res, _ := ssoLogin(t, b)
				require.Equal(t, 302, res.StatusCode)
				require.Equal(t, "/jobs", res.Header.Get("Location"))
				var cookie *http.Cookie
				for _, c := range res.Cookies() {
					if c.Name == "rj_session" {
						cookie = c
					}
				}
				require.NotNil(t, cookie)
				require.True(t, cookie.HttpOnly)
				me := b.call("GET", "/api/v1/me", nil, "Authorization", "", "Cookie", "rj_session="+cookie.Value).JSON(t)
				require.Equal(t, "erin", me["name"])
				require.Equal(t, []any{"billing-devs", "everyone"}, me["sso_groups"])
				require.Equal(t, []any{map[string]any{"group_id": float64(gid), "role": "operator"}}, me["roles"])
				users := b.must(200, "GET", "/api/v1/users", nil)["items"].([]any)
				require.Len(t, users, 1)
				u := users[0].(map[string]any)
				require.Equal(t, "oidc", u["source"])
				require.Equal(t, "erin@example.com", u["email"])

				// A second login is the same user, with its groups refreshed.
				is.set(func(is *issuer) {
					is.claims = map[string]any{"preferred_username": "erin", "email": "erin@example.com", "groups": []string{"everyone"}}
				})
				res, _ = ssoLogin(t, b)
				require.Equal(t, 302, res.StatusCode)
				for _, c := range res.Cookies() {
					if c.Name == "rj_session" {
						cookie = c
					}
				}
				me = b.call("GET", "/api/v1/me", nil, "Authorization", "", "Cookie", "rj_session="+cookie.Value).JSON(t)
				require.Empty(t, me["roles"], "out of billing-devs, no longer operator")
				require.Len(t, b.must(200, "GET", "/api/v1/users", nil)["items"], 1)
			})
			refused := func(t *testing.T, f func(is *issuer), want string) {
				t.Helper()
				is.set(func(is *issuer) {
					is.claims = map[string]any{"preferred_username": "mallory"}
					is.badSig, is.audience, is.expiresIn = false, "ringjob", time.Hour
					f(is)
				})
				res, _ := ssoLogin(t, b)
				require.Equal(t, 401, res.StatusCode)
				require.Nil(t, sessionOf(res))
				for _, it := range b.must(200, "GET", "/api/v1/users", nil)["items"].([]any) {
					require.NotEqual(t, "mallory", it.(map[string]any)["name"], "no user was created")
				}
				page := b.must(200, "GET", "/api/v1/audit?action=login.failed&limit=1", nil)["items"].([]any)
				require.Contains(t, fmt.Sprint(page[0].(map[string]any)["changes"]), want)
			}
			t.Run("bad signature", func(t *testing.T) { refused(t, func(is *issuer) { is.badSig = true }, "verify") })
			t.Run("wrong audience", func(t *testing.T) { refused(t, func(is *issuer) { is.audience = "someone-else" }, "audience") })
			t.Run("expired token", func(t *testing.T) { refused(t, func(is *issuer) { is.expiresIn = -time.Minute }, "expired") })
			t.Run("replayed state", func(t *testing.T) {
				is.set(func(is *issuer) {
					is.claims = map[string]any{"preferred_username": "erin", "groups": []string{"billing-devs"}}
					is.badSig, is.audience, is.expiresIn = false, "ringjob", time.Hour
				})
				callback, state := ssoStart(t, b, "/jobs")
				res := get(t, callback, state)
				require.Equal(t, 302, res.StatusCode)
				again := get(t, callback, state)
				require.Equal(t, 400, again.StatusCode, "a state works once")
				require.Nil(t, sessionOf(again))
				forged := get(t, b.url+"/api/v1/sso/callback?code=x&state=never-issued", &http.Cookie{Name: "ringjob_sso_state", Value: "never-issued"})
				require.Equal(t, 400, forged.StatusCode)
			})
			t.Run("a callback only signs in the browser that started it", func(t *testing.T) {
				is.set(func(is *issuer) {
					is.claims = map[string]any{"preferred_username": "attacker-sso"}
					is.badSig, is.audience, is.expiresIn = false, "ringjob", time.Hour
				})
				// The attacker signs in up to the callback and hands its URL
				// to a victim (login CSRF).
				callback, attackerState := ssoStart(t, b, "/jobs")
				_, victimState := ssoStart(t, b, "/jobs") // a victim with a sign-in of its own in flight
				for _, cookies := range [][]*http.Cookie{nil, {victimState}} {
					res := get(t, callback, cookies...)
					require.Equal(t, 401, res.StatusCode)
					require.Nil(t, sessionOf(res), "the victim is not signed in as the attacker")
				}
				for _, it := range b.must(200, "GET", "/api/v1/users", nil)["items"].([]any) {
					require.NotEqual(t, "attacker-sso", it.(map[string]any)["name"], "no user was created")
				}
				res := get(t, callback, attackerState)
				require.Equal(t, 302, res.StatusCode, "the browser that started it signs in")
				require.NotNil(t, sessionOf(res))
			})
			t.Run("return_to must stay on this server", func(t *testing.T) {
				for _, bad := range []string{"//evil.example.com/", "/%0B/evil.example", "/%09/evil.example", "/\\evil.example", "/\t/evil.example",
					"https://evil.example/", "/%0D%0ALocation:%20//evil.example", "/ /evil.example"} {
					res := get(t, b.url+"/api/v1/sso/login?return_to="+url.QueryEscape(bad))
					require.Equal(t, 400, res.StatusCode, "%q", bad)
					require.Empty(t, res.Cookies(), "%q: no sign-in was started", bad)
				}
				is.set(func(is *issuer) { is.claims = map[string]any{"preferred_username": "erin"} })
				for raw, want := range map[string]string{"///evil.example": "/evil.example", "/%2F%2Fevil.example": "/evil.example", "/jobs?q=a%20b#top": "/jobs?q=a%20b#top"} {
					callback, state := ssoStart(t, b, raw)
					res := get(t, callback, state)
					require.Equal(t, 302, res.StatusCode, raw)
					require.Equal(t, want, res.Header.Get("Location"), "%q is rebuilt as a path on this server", raw)
				}
			})
		})
	}
}

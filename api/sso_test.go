package api_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/sso"
)

// issuer is a real OpenID provider in the test process: discovery, JWKS, an
// authorization endpoint that signs the user in at once, and a token
// endpoint that checks the client secret and the PKCE verifier and answers
// an RS256-signed ID token. Knobs make it misbehave.
type issuer struct {
	srv      *httptest.Server
	key      *rsa.PrivateKey
	otherKey *rsa.PrivateKey // signs "bad signature" tokens under the same kid

	mu        sync.Mutex
	codes     map[string]authReq
	claims    map[string]any // of the next login
	badSig    bool
	audience  string
	expiresIn time.Duration
}

type authReq struct{ challenge, nonce string }

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	k1, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	k2, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	is := &issuer{key: k1, otherKey: k2, codes: map[string]authReq{}, audience: "ringjob", expiresIn: time.Hour}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.srv.URL, "authorization_endpoint": is.srv.URL + "/authorize", "token_endpoint": is.srv.URL + "/token",
			"jwks_uri": is.srv.URL + "/keys", "id_token_signing_alg_values_supported": []string{"RS256"},
			"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
			"code_challenge_methods_supported": []string{"S256"},
		})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &is.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("client_id") != "ringjob" || q.Get("response_type") != "code" {
			http.Error(w, "bad authorization request", 400)
			return
		}
		code := fmt.Sprintf("code-%d", time.Now().UnixNano())
		is.mu.Lock()
		is.codes[code] = authReq{challenge: q.Get("code_challenge"), nonce: q.Get("nonce")}
		is.mu.Unlock()
		back, _ := url.Parse(q.Get("redirect_uri"))
		bq := back.Query()
		bq.Set("code", code)
		bq.Set("state", q.Get("state"))
		back.RawQuery = bq.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		is.mu.Lock()
		req, found := is.codes[r.PostForm.Get("code")]
		delete(is.codes, r.PostForm.Get("code"))
		claims, badSig, aud, exp := is.claims, is.badSig, is.audience, is.expiresIn
		is.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if id != "ringjob" || secret != "s3cret" || !found || base64.RawURLEncoding.EncodeToString(sum[:]) != req.challenge {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		now := time.Now()
		c := map[string]any{"iss": is.srv.URL, "sub": "user-42", "aud": aud, "iat": now.Unix(), "exp": now.Add(exp).Unix(), "nonce": req.nonce}
		for k, v := range claims {
			c[k] = v
		}
		key := is.key
		if badSig {
			key = is.otherKey
		}
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		payload, _ := json.Marshal(c)
		obj, err := signer.Sign(payload)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		raw, _ := obj.CompactSerialize()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": 3600, "id_token": raw})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

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

// ssoLogin runs the browser's part of a sign-in and returns the answer of
// Ringjob's callback and the callback URL (to replay it).
func ssoLogin(t *testing.T, b *bundle) (*http.Response, string) {
	t.Helper()
	start := get(t, b.url+"/api/v1/sso/login?return_to=/jobs")
	require.Equal(t, 302, start.StatusCode)
	atIdP := get(t, start.Header.Get("Location"))
	require.Equal(t, 302, atIdP.StatusCode, "the issuer refused the authorization request")
	callback := atIdP.Header.Get("Location")
	return get(t, callback), callback
}

func TestSSO(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			is := newIssuer(t)
			b := setup(t, kind, setupOpts{noSched: true, sso: func(u string) *sso.Provider {
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
				require.Empty(t, res.Cookies())
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
				res, callback := ssoLogin(t, b)
				require.Equal(t, 302, res.StatusCode)
				again := get(t, callback)
				require.Equal(t, 400, again.StatusCode, "a state works once")
				require.Empty(t, again.Cookies())
				forged := get(t, b.url+"/api/v1/sso/callback?code=x&state=never-issued")
				require.Equal(t, 400, forged.StatusCode)
			})
			t.Run("return_to must stay on this server", func(t *testing.T) {
				res := get(t, b.url+"/api/v1/sso/login?return_to=//evil.example.com/")
				require.Equal(t, 400, res.StatusCode)
			})
		})
	}
}

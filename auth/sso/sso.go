// Package sso signs users in through an OpenID Connect provider with the
// authorization code flow and PKCE (S256), using coreos/go-oidc to discover
// the provider and verify ID tokens (signature against the provider's JWKS,
// issuer, audience = client id, expiry, nonce) and x/oauth2 for the code
// exchange. It knows nothing of sessions or roles: it turns a callback into
// an Identity; the service layer makes the user and the session.
package sso

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/jonboulle/clockwork"
	"golang.org/x/oauth2"
)

// Config is the OIDC client of Ringjob at one provider.
type Config struct {
	// IssuerURL is the provider's issuer (its discovery document is at
	// IssuerURL/.well-known/openid-configuration). Empty turns SSO off.
	IssuerURL string `yaml:"issuer_url"`
	// ClientID and ClientSecret identify Ringjob at the provider.
	ClientID     string `yaml:"client_id"`
	ClientSecret string `yaml:"client_secret"`
	// RedirectURL is PUBLIC_URL/api/v1/sso/callback, registered at the provider.
	RedirectURL string `yaml:"redirect_url"`
	// Scopes asked for; "openid" is always added. Default openid, profile, email.
	Scopes []string `yaml:"scopes"`
	// The claims carrying the username (default preferred_username, then
	// email), the email (default email) and the groups (default groups).
	UsernameClaim string `yaml:"username_claim"`
	EmailClaim    string `yaml:"email_claim"`
	GroupsClaim   string `yaml:"groups_claim"`
}

// Enabled reports whether SSO is configured.
func (c Config) Enabled() bool { return c.IssuerURL != "" }

// WithDefaults fills in the default scopes and claim names.
func (c Config) WithDefaults() Config {
	if len(c.Scopes) == 0 {
		c.Scopes = []string{"profile", "email"}
	}
	if c.UsernameClaim == "" {
		c.UsernameClaim = "preferred_username"
	}
	if c.EmailClaim == "" {
		c.EmailClaim = "email"
	}
	if c.GroupsClaim == "" {
		c.GroupsClaim = "groups"
	}
	return c
}

// Validate names the first missing or malformed field (as auth.sso.FIELD).
func (c Config) Validate() error {
	if !c.Enabled() {
		return nil
	}
	switch {
	case !strings.HasPrefix(c.IssuerURL, "https://") && !strings.HasPrefix(c.IssuerURL, "http://"):
		return fmt.Errorf("auth.sso.issuer_url must be an http(s) URL, got %q", c.IssuerURL)
	case c.ClientID == "":
		return fmt.Errorf("auth.sso.client_id is required when auth.sso.issuer_url is set")
	case c.ClientSecret == "":
		return fmt.Errorf("auth.sso.client_secret is required (or RINGJOB_SSO_CLIENT_SECRET)")
	case !strings.HasPrefix(c.RedirectURL, "https://") && !strings.HasPrefix(c.RedirectURL, "http://"):
		return fmt.Errorf("auth.sso.redirect_url must be PUBLIC_URL/api/v1/sso/callback, got %q", c.RedirectURL)
	}
	return nil
}

// Identity is who the provider says signed in.
type Identity struct {
	Subject  string // issuer + "|" + sub: stable across renames
	Username string
	Email    string
	Groups   []string
}

// ErrRefused wraps every reason a callback is not a login (the provider's
// error, a failed exchange, an ID token that does not verify, a missing
// claim). Its message is safe to show.
var ErrRefused = errors.New("single sign-on refused")

// Provider is a configured OIDC provider. Discovery happens on first use
// (and again after a failure), so a server starts while its IdP is down.
type Provider struct {
	cfg   Config
	clock clockwork.Clock

	mu       sync.Mutex
	oauth    *oauth2.Config
	verifier *oidc.IDTokenVerifier
}

// New makes a provider for cfg (defaults filled in); clock tells the
// verifier the time (nil = real).
func New(cfg Config, clock clockwork.Clock) *Provider {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	return &Provider{cfg: cfg.WithDefaults(), clock: clock}
}

func (p *Provider) discover(ctx context.Context) (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.oauth != nil {
		return p.oauth, p.verifier, nil
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	prov, err := oidc.NewProvider(oidc.ClientContext(dctx, nil), p.cfg.IssuerURL)
	if err != nil {
		return nil, nil, fmt.Errorf("discover the OIDC provider %s: %w", p.cfg.IssuerURL, err)
	}
	scopes := append([]string{oidc.ScopeOpenID}, p.cfg.Scopes...)
	p.oauth = &oauth2.Config{ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret, RedirectURL: p.cfg.RedirectURL,
		Endpoint: prov.Endpoint(), Scopes: dedupe(scopes)}
	p.verifier = prov.Verifier(&oidc.Config{ClientID: p.cfg.ClientID, Now: p.clock.Now})
	return p.oauth, p.verifier, nil
}

// Start is one login in flight: state and nonce go to the provider, the
// verifier stays here (stored by the caller until the callback).
type Start struct {
	URL      string
	State    string
	Verifier string
	Nonce    string
}

// Begin makes an authorization request with fresh state, nonce and PKCE
// verifier.
func (p *Provider) Begin(ctx context.Context) (Start, error) {
	oc, _, err := p.discover(ctx)
	if err != nil {
		return Start{}, err
	}
	st := Start{Verifier: oauth2.GenerateVerifier()}
	if st.State, err = random(); err != nil {
		return Start{}, err
	}
	if st.Nonce, err = random(); err != nil {
		return Start{}, err
	}
	st.URL = oc.AuthCodeURL(st.State, oauth2.S256ChallengeOption(st.Verifier), oidc.Nonce(st.Nonce))
	return st, nil
}

// Finish exchanges the code (with the PKCE verifier), verifies the ID token
// (signature, issuer, audience, expiry, nonce) and maps its claims.
func (p *Provider) Finish(ctx context.Context, code, verifier, nonce string) (Identity, error) {
	oc, ver, err := p.discover(ctx)
	if err != nil {
		return Identity{}, err
	}
	xctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	tok, err := oc.Exchange(xctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		return Identity{}, fmt.Errorf("%w: the code exchange failed: %v", ErrRefused, err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return Identity{}, fmt.Errorf("%w: the provider sent no ID token", ErrRefused)
	}
	idt, err := ver.Verify(xctx, raw)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: the ID token does not verify: %v", ErrRefused, err)
	}
	if idt.Nonce != nonce {
		return Identity{}, fmt.Errorf("%w: the ID token's nonce does not match this login", ErrRefused)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, fmt.Errorf("%w: read the ID token's claims: %v", ErrRefused, err)
	}
	id := Identity{Subject: idt.Issuer + "|" + idt.Subject}
	id.Username, _ = claims[p.cfg.UsernameClaim].(string)
	id.Email, _ = claims[p.cfg.EmailClaim].(string)
	if id.Username == "" {
		id.Username = id.Email
	}
	if id.Username == "" {
		return Identity{}, fmt.Errorf("%w: the ID token has no %s claim to name the user", ErrRefused, p.cfg.UsernameClaim)
	}
	switch g := claims[p.cfg.GroupsClaim].(type) {
	case []any:
		for _, v := range g {
			if s, ok := v.(string); ok && s != "" {
				id.Groups = append(id.Groups, s)
			}
		}
	case string:
		if g != "" {
			id.Groups = []string{g}
		}
	}
	return id, nil
}

func random() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("sso: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

package identity

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ringjob/ringjob/internal/servicekit"
	"github.com/ringjob/ringjob/store"
)

// SSOStateTTL: SSO login states live this long between the redirect to the provider and
// the callback.
const SSOStateTTL = 10 * time.Minute

// ErrSSOState refuses a callback whose state is unknown, expired or used
// already (a replayed callback).
var ErrSSOState = &servicekit.ValidationError{Field: "state", Message: "this sign-in is unknown, expired or already used; start again from /api/v1/sso/login"}

// SSOIdentity is who the identity provider says signed in.
type SSOIdentity struct {
	Subject  string // issuer|sub
	Username string
	Email    string
	Groups   []string
}

// SSOBegin stores a login in flight (found again by its state).
func (s *Service) SSOBegin(ctx context.Context, state, verifier, nonce, returnTo string) error {
	return s.st.SSOStateCreate(ctx, store.SSOState{StateHash: HashToken(state), Verifier: verifier, Nonce: nonce, ReturnTo: returnTo,
		ExpiresMs: s.clock.Now().Add(SSOStateTTL).UnixMilli()})
}

// SSOTake returns and forgets the login in flight of state: a state works
// once.
func (s *Service) SSOTake(ctx context.Context, state string) (store.SSOState, error) {
	if state == "" || len(state) > maxTokenLen {
		return store.SSOState{}, ErrSSOState
	}
	x, err := s.st.SSOStateTake(ctx, HashToken(state), s.nowMs())
	if errors.Is(err, store.ErrNotFound) {
		return store.SSOState{}, ErrSSOState
	}
	return x, err
}

// LoginSSO opens a session for an identity the provider vouched for: the
// user is created at the first login (named by the username claim) and its
// email and groups are refreshed at each.
func (s *Service) LoginSSO(ctx context.Context, id SSOIdentity, clientAddr string) (LoginResult, error) {
	name := ssoName(id.Username)
	if err := checkPrincipalName("username", name); err != nil {
		return LoginResult{}, err
	}
	groups := id.Groups
	if len(groups) > 200 {
		groups = groups[:200]
	}
	for i, g := range groups {
		groups[i] = truncate(g, MaxSSOGroup)
	}
	now := s.nowMs()
	var pr store.Principal
	var cookie string
	var x store.Session
	// The user, its claims, the session and the login's audit event are
	// written together.
	err := s.st.Tx(ctx, func(tx *store.Store) error {
		var err error
		pr, err = tx.PrincipalBySSOSubject(ctx, id.Subject)
		switch {
		case errors.Is(err, store.ErrNotFound):
			pr, err = tx.PrincipalCreate(ctx, store.PrincipalCreateParams{Name: name, Kind: store.PrincipalUser, Source: store.SourceOIDC,
				Email: truncate(id.Email, MaxEmail), SSOSubject: id.Subject, SSOGroups: groups, NowMs: now})
			if errors.Is(err, store.ErrConflict) {
				return &servicekit.ConflictError{Field: "username", Message: fmt.Sprintf("the name %q is taken by another user; an admin must rename or delete that user first", name)}
			}
			if err != nil {
				return err
			}
			if err := s.audit(ctx, tx, auditEntry{Action: ActUserCreate, ObjectType: store.PrincipalUser, ObjectID: pr.ID,
				Changes: map[string]any{"name": pr.Name, "email": pr.Email, "source": store.SourceOIDC, "sso_groups": groups}}); err != nil {
				return err
			}
		case err != nil:
			return err
		case pr.DisabledMs != 0:
			return ErrDisabled
		default:
			if err := tx.PrincipalUpdate(ctx, store.PrincipalUpdateParams{ID: pr.ID, Email: truncate(id.Email, MaxEmail), SSOGroups: groups, NowMs: now}); err != nil {
				return err
			}
			pr.Email, pr.SSOGroups = id.Email, groups
		}
		if err := tx.AuthVersionBump(ctx); err != nil { // group claims may have changed what this user may do
			return err
		}
		cookie, x, err = s.openSessionIn(ctx, tx, pr, clientAddr, map[string]any{"method": "oidc", "sso_groups": groups})
		return err
	})
	if err != nil {
		return LoginResult{}, fmt.Errorf("sso login: %w", err)
	}
	s.authChanged()
	return s.sessionOpened(ctx, cookie, x)
}

// SSOLoginFailed audits a refused SSO callback.
func (s *Service) SSOLoginFailed(ctx context.Context, reason string) {
	err := s.st.Tx(ctx, func(tx *store.Store) error {
		return s.audit(ctx, tx, auditEntry{Action: ActLoginFailed, ObjectType: "session", Changes: map[string]any{"method": "oidc", "reason": truncate(reason, 500)}})
	})
	if err != nil {
		s.log.WithError(err).Warn("audit a refused sso login")
	}
}

// ssoName keeps the characters a principal name may have.
func ssoName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '@' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return truncate(b.String(), MaxPrincipalName)
}

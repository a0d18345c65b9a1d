package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/ringjob/ringjob/store"
)

// Token format and limits.
const (
	// TokenPrefix starts every generated token.
	TokenPrefix = "rj_"
	// MinConfiguredTokenLen is the shortest token an operator may configure.
	MinConfiguredTokenLen = 32
	// maxTokenLen bounds what Authenticate hashes.
	maxTokenLen = 1024
	// touchEvery throttles last_used_ms writes.
	touchEvery = time.Minute
)

// Principal is the brief identity of an API token (see access.Principal for
// what a request may do).
type Principal struct {
	TokenID   int64
	TokenName string
	Role      string
}

// GenerateToken returns a new API token: "rj_" and 32 random bytes in
// unpadded base64url.
func GenerateToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate api token: %w", err)
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// HashToken is what is stored for a token: its SHA-256 in lowercase hex.
// Tokens are high-entropy random strings, so a fast hash suffices (bcrypt is
// for passwords, which people choose).
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// ConfiguredTokenName names the API token that comes from api.admin_token.
const ConfiguredTokenName = "configured"

// EnsureAdminToken makes sure the REST API can be used and nobody else can:
//   - configured non-empty: its hash is stored (role admin, name
//     "configured") unless it is already, and any other token that an
//     earlier config stored is deleted (replacing api.admin_token revokes
//     the old one); returns "".
//   - configured empty: tokens an earlier config stored are deleted (the
//     config no longer grants them), then as below.
//   - otherwise, when no token exists at all: generates one, stores its hash,
//     and returns it; the caller shows it once, it cannot be read back.
//   - otherwise: returns "".
func (s *Service) EnsureAdminToken(ctx context.Context, configured string) (generated string, err error) {
	if configured != "" {
		if len(configured) < MinConfiguredTokenLen || len(configured) > maxTokenLen {
			return "", invalid("admin_token", "must be %d..%d characters, got %d; generate one with `openssl rand -base64 32`, or leave it empty and Ringjob generates one at first start",
				MinConfiguredTokenLen, maxTokenLen, len(configured))
		}
		hash := HashToken(configured)
		if _, err := s.st.TokenByHash(ctx, hash); err == nil {
			if _, err := s.st.TokenDeleteByName(ctx, ConfiguredTokenName, hash); err != nil {
				return "", fmt.Errorf("revoke the previous configured admin token: %w", err)
			}
			return "", nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return "", fmt.Errorf("look up the configured admin token: %w", err)
		}
		err := s.createBootstrapToken(ctx, ConfiguredTokenName, hash)
		if err != nil && !errors.Is(err, store.ErrConflict) { // a replica starting alongside stored it first
			return "", fmt.Errorf("store the configured admin token: %w", err)
		}
		if _, err := s.st.TokenDeleteByName(ctx, ConfiguredTokenName, hash); err != nil {
			return "", fmt.Errorf("revoke the previous configured admin token: %w", err)
		}
		return "", nil
	}
	if _, err := s.st.TokenDeleteByName(ctx, ConfiguredTokenName, ""); err != nil {
		return "", fmt.Errorf("revoke the configured admin token that the config no longer has: %w", err)
	}
	n, err := s.st.TokenCount(ctx)
	if err != nil {
		return "", err
	}
	if n > 0 {
		return "", nil
	}
	tok, err := GenerateToken()
	if err != nil {
		return "", err
	}
	if err := s.createBootstrapToken(ctx, "initial-admin", HashToken(tok)); err != nil {
		return "", fmt.Errorf("store the generated admin token: %w", err)
	}
	return tok, nil
}

// createBootstrapToken stores an admin token of the configuration or the
// first start, with its audit event.
func (s *Service) createBootstrapToken(ctx context.Context, name, hash string) error {
	return s.st.Tx(ctx, func(tx *store.Store) error {
		t, err := tx.TokenCreate(ctx, store.TokenCreateParams{Name: name, TokenHash: hash, Role: store.RoleAdmin, NowMs: s.nowMs()})
		if err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActTokenCreate, ObjectType: "token", ObjectID: t.ID,
			Changes: map[string]any{"name": name, "role": store.RoleAdmin, "source": "server start"}})
	})
}

// Authenticate returns the token identity of an API token, or an error
// matching ErrUnauthenticated. It is AuthenticateToken in brief.
func (s *Service) Authenticate(ctx context.Context, token string) (Principal, error) {
	p, err := s.AuthenticateToken(ctx, token)
	if err != nil {
		return Principal{}, err
	}
	role := ""
	if p.IsAdmin() {
		role = store.RoleAdmin
	}
	return Principal{TokenID: p.TokenID, TokenName: p.TokenName, Role: role}, nil
}

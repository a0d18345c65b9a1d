package identity_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/servicekit"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var kinds = storetest.Dialects

// bundle is one database with the identity service and, for tests that need
// groups to bind roles on, the service layer over it.
type bundle struct {
	st    *store.Store
	svc   *service.Service
	id    *identity.Service
	clock *clockwork.FakeClock
}

func setup(t *testing.T, dialect string) *bundle {
	t.Helper()
	st := storetest.Open(t, dialect)
	clock := clockwork.NewFakeClockAt(time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC))
	id := identity.New(identity.Options{Store: st, Clock: clock})
	svc := service.New(service.Options{Store: st, Drivers: targets.NewRegistry(), Clock: clock, OnAuthChange: id.AuthChanged})
	return &bundle{st: st, svc: svc, id: id, clock: clock}
}

func TestEnsureAdminToken(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, dialect)

			tok, err := b.id.EnsureAdminToken(ctx, "")
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(tok, "rj_"), tok)
			require.Len(t, tok, 3+43) // 32 bytes in unpadded base64url

			again, err := b.id.EnsureAdminToken(ctx, "")
			require.NoError(t, err)
			require.Empty(t, again, "a token exists, so none is generated")

			p, err := b.id.Authenticate(ctx, tok)
			require.NoError(t, err)
			require.Equal(t, store.RoleAdmin, p.Role)
			require.Equal(t, "initial-admin", p.TokenName)

			for _, bad := range []string{"", "rj_wrong", tok + "x", strings.ToUpper(tok), strings.Repeat("a", 5000)} {
				_, err := b.id.Authenticate(ctx, bad)
				require.ErrorIs(t, err, identity.ErrUnauthenticated, "token %q", bad)
			}

			// Only the hash is stored.
			raw := tableText(t, b.st)
			require.NotContains(t, raw, tok)
			require.NotContains(t, raw, strings.TrimPrefix(tok, "rj_"))
			require.Contains(t, raw, identity.HashToken(tok))

			// Use is recorded.
			tk, err := b.st.TokenByHash(ctx, identity.HashToken(tok))
			require.NoError(t, err)
			require.Equal(t, b.clock.Now().UnixMilli(), tk.LastUsedMs)

			t.Run("configured token", func(t *testing.T) {
				configured := "configured-token-with-enough-entropy-0123456789"
				gen, err := b.id.EnsureAdminToken(ctx, configured)
				require.NoError(t, err)
				require.Empty(t, gen)
				_, err = b.id.EnsureAdminToken(ctx, configured) // idempotent
				require.NoError(t, err)
				n, err := b.st.TokenCount(ctx)
				require.NoError(t, err)
				require.Equal(t, 2, n)
				p, err := b.id.Authenticate(ctx, configured)
				require.NoError(t, err)
				require.Equal(t, "configured", p.TokenName)
				require.NotContains(t, tableText(t, b.st), configured)

				// Replacing api.admin_token revokes the old one at the next start;
				// the generated token stays.
				replaced := "replaced-token-with-enough-entropy-9876543210"
				_, err = b.id.EnsureAdminToken(ctx, replaced)
				require.NoError(t, err)
				_, err = b.id.Authenticate(ctx, configured)
				require.ErrorIs(t, err, identity.ErrUnauthenticated, "the previous config token is revoked")
				_, err = b.id.Authenticate(ctx, replaced)
				require.NoError(t, err)
				_, err = b.id.Authenticate(ctx, tok)
				require.NoError(t, err, "tokens that did not come from the config stay")

				// Removing it from the config revokes it too.
				gen, err = b.id.EnsureAdminToken(ctx, "")
				require.NoError(t, err)
				require.Empty(t, gen, "another token exists, so none is generated")
				_, err = b.id.Authenticate(ctx, replaced)
				require.ErrorIs(t, err, identity.ErrUnauthenticated)
			})
			t.Run("short configured token is refused", func(t *testing.T) {
				_, err := b.id.EnsureAdminToken(ctx, "secret")
				var ve *servicekit.ValidationError
				require.ErrorAs(t, err, &ve)
				require.Contains(t, ve.Message, "openssl rand")
			})
		})
	}
	t.Run("configured token on an empty database generates none", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setup(t, "sqlite")
		gen, err := b.id.EnsureAdminToken(ctx, "a-configured-token-that-is-long-enough-xyz")
		require.NoError(t, err)
		require.Empty(t, gen)
		n, err := b.st.TokenCount(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	})
}

// tableText is every value of every api_tokens row, concatenated.
func tableText(t *testing.T, st *store.Store) string {
	t.Helper()
	rows, err := st.DB().Query("SELECT id, name, token_hash, role, created_ms, last_used_ms FROM api_tokens")
	require.NoError(t, err)
	defer rows.Close()
	var sb strings.Builder
	for rows.Next() {
		var id, c, u int64
		var name, hash, role string
		require.NoError(t, rows.Scan(&id, &name, &hash, &role, &c, &u))
		sb.WriteString(name + "|" + hash + "|" + role + "\n")
	}
	require.NoError(t, rows.Err())
	return sb.String()
}

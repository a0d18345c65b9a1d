package store_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/secretbox"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

func newKey(t *testing.T) []byte {
	k := make([]byte, 32)
	_, err := rand.Read(k)
	require.NoError(t, err)
	return k
}

// rawSecrets is what a copy of the database shows of the secrets.
func rawSecrets(t *testing.T, st *store.Store) string {
	t.Helper()
	var out string
	rows, err := st.DB().Query("SELECT access_token FROM job_groups UNION ALL SELECT value FROM settings")
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var v string
		require.NoError(t, rows.Scan(&v))
		out += v + "\n"
	}
	return out
}

// TestSecretsSealedAtRest: group executor tokens and sealed settings are
// never in the database in plaintext once a key is set; values stored
// before (plaintext) or under a previous key are sealed again under the
// current key, and a database copied without the key gives nothing away.
func TestSecretsSealedAtRest(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		const tok, secret = "orders-group-token-0123456789", "run-token-secret-value"
		// Before any key: plaintext (an upgrade from an older version).
		old, err := st.GroupCreate(ctx, store.GroupCreateParams{AppName: "legacy", NowMs: t0,
			GroupExecutorSettings: store.GroupExecutorSettings{AccessToken: "legacy-token-0123456789"}})
		require.NoError(t, err)
		_, err = st.SettingInit(ctx, "secret", secret, t0)
		require.NoError(t, err)

		k1, k2 := newKey(t), newKey(t)
		box1, err := secretbox.New(k1)
		require.NoError(t, err)
		st.UseSecrets(box1, "secret")
		n, err := st.SecretsReseal(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n, "the legacy token and the setting")
		g, err := st.GroupCreate(ctx, store.GroupCreateParams{AppName: "orders", NowMs: t0,
			GroupExecutorSettings: store.GroupExecutorSettings{AccessToken: tok, AcceptRegistrations: true}})
		require.NoError(t, err)
		require.Equal(t, tok, g.AccessToken)
		long, err := st.GroupCreate(ctx, store.GroupCreateParams{AppName: "longest", NowMs: t0,
			GroupExecutorSettings: store.GroupExecutorSettings{AccessToken: strings.Repeat("x", 255)}})
		require.NoError(t, err, "the longest token fits sealed")
		require.Len(t, long.AccessToken, 255)
		raw := rawSecrets(t, st)
		require.NotContains(t, raw, tok)
		require.NotContains(t, raw, "legacy-token")
		require.NotContains(t, raw, secret)

		read := func() {
			t.Helper()
			g, err := st.GroupGet(ctx, g.ID)
			require.NoError(t, err)
			require.Equal(t, tok, g.AccessToken)
			es, ok, err := st.GroupExecutorSettingsByApp(ctx, "legacy")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, "legacy-token-0123456789", es.AccessToken)
			v, _, err := st.SettingGet(ctx, "secret")
			require.NoError(t, err)
			require.Equal(t, secret, v)
		}
		read()
		require.NoError(t, st.GroupSetExecutorSettings(ctx, old.ID, store.GroupExecutorSettings{AccessToken: "legacy-token-0123456789"}))
		read()

		// Rotation: k2 seals, k1 still opens; the reseal moves every value to k2.
		box2, err := secretbox.New(k2, k1)
		require.NoError(t, err)
		st.UseSecrets(box2, "secret")
		read()
		n, err = st.SecretsReseal(ctx)
		require.NoError(t, err)
		require.Equal(t, 4, n)
		only2, err := secretbox.New(k2)
		require.NoError(t, err)
		st.UseSecrets(only2, "secret")
		read()

		// Without the key, nothing opens, and the error says which key is needed.
		st.UseSecrets(nil, "secret")
		_, err = st.GroupGet(ctx, g.ID)
		require.ErrorIs(t, err, secretbox.ErrNoKey)
		require.ErrorContains(t, err, secretbox.KeyID(k2))
	})
}

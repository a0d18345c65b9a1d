package secretbox_test

import (
	"crypto/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/secretbox"
)

func key(t *testing.T) []byte {
	k := make([]byte, 32)
	_, err := rand.Read(k)
	require.NoError(t, err)
	return k
}

func TestSealOpenRotate(t *testing.T) {
	t.Parallel()
	k1, k2 := key(t), key(t)
	old, err := secretbox.New(k1)
	require.NoError(t, err)
	sealed, err := old.Seal("orders-token-0123456789", "group:1")
	require.NoError(t, err)
	require.True(t, secretbox.IsSealed(sealed))
	require.NotContains(t, sealed, "orders-token")

	got, err := old.Open(sealed, "group:1")
	require.NoError(t, err)
	require.Equal(t, "orders-token-0123456789", got)
	_, err = old.Open(sealed, "group:2")
	require.Error(t, err, "a sealed value copied to another row does not open")

	// Rotation: the new key seals, the old one still opens.
	rotated, err := secretbox.New(k2, k1)
	require.NoError(t, err)
	require.True(t, rotated.NeedsReseal(sealed))
	got, err = rotated.Open(sealed, "group:1")
	require.NoError(t, err)
	require.Equal(t, "orders-token-0123456789", got)
	resealed, err := rotated.Seal(got, "group:1")
	require.NoError(t, err)
	require.False(t, rotated.NeedsReseal(resealed))

	// Without the key the value does not open; plaintext passes through.
	onlyNew, err := secretbox.New(k2)
	require.NoError(t, err)
	_, err = onlyNew.Open(sealed, "group:1")
	require.ErrorIs(t, err, secretbox.ErrNoKey)
	var none *secretbox.Box
	_, err = none.Open(sealed, "group:1")
	require.ErrorIs(t, err, secretbox.ErrNoKey)
	plain, err := none.Open("plain", "x")
	require.NoError(t, err)
	require.Equal(t, "plain", plain)
	require.True(t, onlyNew.NeedsReseal("plain"))

	_, err = secretbox.ParseKey("c2hvcnQ=")
	require.ErrorContains(t, err, "32 bytes")
}

package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/store"
)

// Profiles are off unless the server enables them, and then only admin
// tokens may read them.
func TestPprof(t *testing.T) {
	t.Parallel()
	t.Run("off by default", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "sqlite", setupOpts{noSched: true})
		require.Equal(t, http.StatusNotFound, b.call("GET", "/debug/pprof/cmdline", nil).Status)
	})
	t.Run("on, for admins only", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "sqlite", setupOpts{noSched: true, pprof: true})
		r := b.call("GET", "/debug/pprof/cmdline", nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		require.NotEmpty(t, r.Body)
		r = b.call("GET", "/debug/pprof/goroutine?debug=1", nil)
		require.Equal(t, http.StatusOK, r.Status)
		require.Contains(t, string(r.Body), "goroutine profile")

		r = b.call("GET", "/debug/pprof/cmdline", nil, "Authorization", "")
		require.Equal(t, http.StatusUnauthorized, r.Status)

		viewer, err := identity.GenerateToken()
		require.NoError(t, err)
		_, err = b.st.TokenCreate(context.Background(), store.TokenCreateParams{Name: "viewer", TokenHash: identity.HashToken(viewer), Role: "viewer", NowMs: 1})
		require.NoError(t, err)
		r = b.call("GET", "/debug/pprof/cmdline", nil, "Authorization", "Bearer "+viewer)
		require.Equal(t, http.StatusForbidden, r.Status, "%s", r.Body)
		code, _, _ := r.errCode(t)
		require.Equal(t, "permission_denied", code) // names the missing permission (system.manage)
	})
}

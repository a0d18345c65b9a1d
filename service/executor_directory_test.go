package service_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/xxlwire"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// The executor token and protocol a dispatch uses come from memory: an edit
// through this replica is used at once, an edit through another replica
// (straight into the database here) within DirectoryTTL, and an executor
// that registered elsewhere a moment ago is found on the first dispatch.
func TestExecutorDirectory(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			b := setup(t, kind)
			ctx := context.Background()
			var registryChanges atomic.Int32
			ex := service.NewExecutors(service.ExecutorsOptions{Store: b.st, Clock: b.clock, OnRegistryChange: func() { registryChanges.Add(1) }})
			_, _, err := ex.EnsureToken(ctx, "global-token-0123456789")
			require.NoError(t, err)
			svc := service.New(service.Options{Store: b.st, Drivers: targetsRegistry(), Clock: b.clock, OnGroupChange: ex.GroupsChanged})

			g, err := svc.CreateGroup(ctx, service.GroupCreateParams{AppName: "orders", ExecutorToken: "orders-token-one"})
			require.NoError(t, err)
			beat := xxlwire.RegistryRequest{RegistryGroup: "EXECUTOR", RegistryKey: "orders", RegistryValue: "http://o:1/"}
			require.NoError(t, ex.Register(ctx, "orders-token-one", beat))
			require.NoError(t, ex.Register(ctx, "orders-token-one", beat))
			require.EqualValues(t, 1, registryChanges.Load(), "a new executor is a change; its heartbeats are not")

			auth := func(target string) (string, string, bool) {
				t.Helper()
				app, tok, v35, err := ex.Auth(ctx, target)
				require.NoError(t, err)
				return app, tok, v35
			}
			app, tok, v35 := auth("http://o:1")
			require.Equal(t, "orders", app)
			require.Equal(t, "orders-token-one", tok)
			require.False(t, v35)

			t.Run("an edit through this replica is used at once", func(t *testing.T) {
				_, err := svc.UpdateGroup(ctx, service.GroupUpdateParams{ID: g.ID, ExecutorToken: ptr("orders-token-two"), Protocol: "3.5"})
				require.NoError(t, err)
				_, tok, v35 := auth("http://o:1/")
				require.Equal(t, "orders-token-two", tok)
				require.True(t, v35)
			})

			t.Run("an edit through another replica is used within DirectoryTTL", func(t *testing.T) {
				require.NoError(t, b.st.GroupSetExecutorSettings(ctx, g.ID, store.GroupExecutorSettings{AccessToken: "orders-token-three"}))
				_, tok, _ := auth("http://o:1/")
				require.Equal(t, "orders-token-two", tok, "served from memory, not read per dispatch")
				b.clock.Advance(service.DirectoryTTL)
				_, tok, v35 := auth("http://o:1/")
				require.Equal(t, "orders-token-three", tok)
				require.False(t, v35)
			})

			t.Run("an executor registered through another replica is found at once", func(t *testing.T) {
				require.NoError(t, b.st.RegistryUpsert(ctx, store.RegistryUpsertParams{AppName: "orders", Address: "http://p:2", NowMs: b.clock.Now().UnixMilli()}))
				app, tok, _ := auth("http://p:2/")
				require.Equal(t, "orders", app)
				require.Equal(t, "orders-token-three", tok)
			})

			t.Run("an address nobody registered gets the global token", func(t *testing.T) {
				app, tok, v35 := auth("http://static:3/")
				require.Empty(t, app)
				require.Equal(t, "global-token-0123456789", tok)
				require.False(t, v35)
			})

			t.Run("a goodbye is a change", func(t *testing.T) {
				require.NoError(t, ex.Unregister(ctx, "orders-token-three", beat))
				require.EqualValues(t, 2, registryChanges.Load())
				app, tok, _ := auth("http://o:1/")
				require.Empty(t, app, "a removed executor is forgotten at once on this replica")
				require.Equal(t, "global-token-0123456789", tok)
			})
		})
	}
}

func targetsRegistry() *targets.Registry {
	reg := targets.NewRegistry()
	reg.Register("fake", &fakeDriver{})
	return reg
}

func ptr[T any](v T) *T { return &v }

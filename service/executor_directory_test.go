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

			billing, err := svc.CreateGroup(ctx, service.GroupCreateParams{AppName: "billing"})
			require.NoError(t, err)
			// authAs is what a run of group gid sends to target.
			authAs := func(gid int64, target string) (string, string, bool, error) {
				return ex.Auth(targets.WithGroup(ctx, gid), target)
			}
			auth := func(target string) (string, string, bool) {
				t.Helper()
				app, tok, v35, err := authAs(g.ID, target)
				require.NoError(t, err)
				return app, tok, v35
			}
			app, tok, v35 := auth("http://o:1")
			require.Equal(t, "orders", app)
			require.Equal(t, "orders-token-one", tok)
			require.False(t, v35)

			t.Run("an edit through this replica is used at once", func(t *testing.T) {
				_, err := svc.UpdateGroup(ctx, service.GroupUpdateParams{ID: g.ID, Title: "Orders", ExecutorToken: ptr("orders-token-two"), Protocol: "3.5"})
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
				_, _, _, err := authAs(billing.ID, "http://p:2/")
				require.ErrorIs(t, err, service.ErrForeignExecutor, "another group's run is not sent to it")
				app, tok, _ := auth("http://p:2/")
				require.Equal(t, "orders", app)
				require.Equal(t, "orders-token-three", tok)
			})

			t.Run("a static member gets the token of the run's group", func(t *testing.T) {
				app, tok, v35 := auth("http://static:3/")
				require.Equal(t, "orders", app)
				require.Equal(t, "orders-token-three", tok, "the group's own token, not the global one")
				require.False(t, v35)
				app, tok, _, err := authAs(billing.ID, "http://static:3/")
				require.NoError(t, err)
				require.Equal(t, "billing", app)
				require.Equal(t, "global-token-0123456789", tok, "a group with no token of its own sends the global one")
			})

			t.Run("without the run's group nothing is sent", func(t *testing.T) {
				_, tok, _, err := ex.Auth(ctx, "http://o:1/")
				require.Error(t, err)
				require.Empty(t, tok)
			})

			t.Run("a goodbye is a change", func(t *testing.T) {
				_, _, _, err := authAs(billing.ID, "http://o:1/")
				require.ErrorIs(t, err, service.ErrForeignExecutor)
				require.NoError(t, ex.Unregister(ctx, "orders-token-three", beat))
				require.EqualValues(t, 2, registryChanges.Load())
				app, tok, _, err := authAs(billing.ID, "http://o:1/")
				require.NoError(t, err, "a removed executor is forgotten at once on this replica")
				require.Equal(t, "billing", app)
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

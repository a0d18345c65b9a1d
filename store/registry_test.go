package store_test

import (
	"context"
	"testing"

	"github.com/ringjob/ringjob/store"
	"github.com/stretchr/testify/require"
)

func TestExecutorRegistry(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		for _, a := range []string{"http://b:9999", "http://a:9999"} {
			require.NoError(t, st.RegistryUpsert(ctx, store.RegistryUpsertParams{AppName: "orders", Address: a, NowMs: t0}))
		}
		require.NoError(t, st.RegistryUpsert(ctx, store.RegistryUpsertParams{AppName: "orders", Address: "http://a:9999", NowMs: t0 + 30_000}))
		require.NoError(t, st.RegistryUpsert(ctx, store.RegistryUpsertParams{AppName: "other", Address: "http://c:1", NowMs: t0}))
		live, err := st.RegistryList(ctx, store.RegistryListParams{AppName: "orders", SinceMs: t0})
		require.NoError(t, err)
		require.Len(t, live, 2)
		require.Equal(t, "http://a:9999", live[0].Address, "sorted by address")
		n, err := st.RegistryDeleteStale(ctx, t0+1)
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		live, _ = st.RegistryList(ctx, store.RegistryListParams{})
		require.Equal(t, []store.Executor{{AppName: "orders", Address: "http://a:9999", UpdatedMs: t0 + 30_000}}, live)
		require.NoError(t, st.RegistryRemove(ctx, "orders", "http://a:9999"))
		live, _ = st.RegistryList(ctx, store.RegistryListParams{})
		require.Empty(t, live)

		v, err := st.SettingInit(ctx, "executor_token", "first", t0)
		require.NoError(t, err)
		require.Equal(t, "first", v)
		v, err = st.SettingInit(ctx, "executor_token", "second", t0)
		require.NoError(t, err)
		require.Equal(t, "first", v, "the first value stays")

		g, err := st.GroupCreate(ctx, store.GroupCreateParams{AppName: "orders", NowMs: t0})
		require.NoError(t, err)
		require.NoError(t, st.GroupSetExecutorSettings(ctx, g.ID, store.GroupExecutorSettings{AccessToken: "tok", Protocol: "3.5"}))
		es, ok, err := st.GroupExecutorSettingsByApp(ctx, "orders")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, store.GroupExecutorSettings{AccessToken: "tok", Protocol: "3.5"}, es)
		_, ok, err = st.GroupExecutorSettingsByApp(ctx, "nope")
		require.NoError(t, err)
		require.False(t, ok)
	})
}

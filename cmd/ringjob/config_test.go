package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestThroughputSettings(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, yaml string) string {
		p := filepath.Join(t.TempDir(), "ringjob.yaml")
		require.NoError(t, os.WriteFile(p, []byte(yaml), 0o600))
		return p
	}
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

	c, err := loadConfig(write(t, "database_url: sqlite://x.db\n"), env(nil), nil)
	require.NoError(t, err)
	require.False(t, c.API.Pprof, "profiles are off by default")

	c, err = loadConfig(write(t, "database_url: sqlite://x.db\napi:\n  pprof: true\nexecutors:\n  max_connections_per_executor: 8\n"), env(nil), nil)
	require.NoError(t, err)
	require.True(t, c.API.Pprof)
	require.Equal(t, 8, c.Executors.MaxConnectionsPerExecutor)

	c, err = loadConfig(write(t, "database_url: sqlite://x.db\n"), env(map[string]string{"RINGJOB_PPROF": "true"}), nil)
	require.NoError(t, err)
	require.True(t, c.API.Pprof)

	_, err = loadConfig(write(t, "database_url: sqlite://x.db\n"), env(map[string]string{"RINGJOB_PPROF": "yes please"}), nil)
	require.ErrorContains(t, err, "RINGJOB_PPROF")

	_, err = loadConfig(write(t, "database_url: sqlite://x.db\nexecutors:\n  max_connections_per_executor: -1\n"), env(nil), nil)
	require.ErrorContains(t, err, "executors.max_connections_per_executor")
}

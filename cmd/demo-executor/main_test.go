package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/executor"
)

func TestParse(t *testing.T) {
	env := map[string]string{
		"RINGJOB_ADMIN":              "http://admin:8080",
		"RINGJOB_EXECUTOR_TOKEN":     "from-env",
		"RINGJOB_APP":                "env-app",
		"RINGJOB_LOG_RETENTION_DAYS": "7",
	}
	c, err := parse([]string{"-app", "flag-app"}, func(k string) string { return env[k] }, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "http://admin:8080", c.admin)
	require.Equal(t, "from-env", c.token)
	require.Equal(t, "flag-app", c.app, "a flag wins over the environment")
	require.Equal(t, "127.0.0.1:9999", c.listen)
	require.Equal(t, 7, c.retentionDays)

	_, err = parse(nil, func(string) string { return "" }, io.Discard)
	require.ErrorContains(t, err, "RINGJOB_EXECUTOR_TOKEN")
}

func TestHandlers(t *testing.T) {
	job := &executor.Job{Params: "10ms"}
	d, err := parseDuration("1.5")
	require.NoError(t, err)
	require.Equal(t, 1500*time.Millisecond, d)
	_, err = parseDuration("soon")
	require.ErrorContains(t, err, "not a duration")
	require.Error(t, fail(context.Background(), job))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, sleep(ctx, &executor.Job{Params: "1h"}), context.Canceled)
}

package lambda

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/targets"
	"github.com/ringjob/ringjob/targets/targettest"
)

// TestMaxRunTime: the bound the scheduler's deadline check gets for a
// function run with no job timeout: a synchronous invoke is waited for
// MaxWait at most; an Event run may wait in Lambda's queue EventMaxAge and
// then run 15 minutes. Asked through the registry, as the scheduler does.
func TestMaxRunTime(t *testing.T) {
	t.Parallel()
	d, err := New(Config{Sink: targettest.NewMemorySink(), Endpoint: "http://127.0.0.1:1",
		CallbackURL: "http://127.0.0.1:1/api/callback", RunToken: func(int64) string { return "t" },
		MaxWait: 3 * time.Minute, EventMaxAge: time.Hour})
	require.NoError(t, err)
	reg := targets.NewRegistry()
	reg.Register("lambda", d)
	require.Equal(t, 3*time.Minute, reg.MaxRunTime("lambda://us-east-1/fn"))
	require.Equal(t, time.Hour+15*time.Minute, reg.MaxRunTime("lambda://us-east-1/fn?mode=event"))
	require.Zero(t, reg.MaxRunTime("lambda://not a target"), "an unreadable target has no bound")
	require.Zero(t, reg.MaxRunTime("local://x"), "a scheme without a driver has no bound")
}

package kind

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRunState(t *testing.T) {
	t.Parallel()

	t.Run("final states are exactly the ones a run never leaves", func(t *testing.T) {
		t.Parallel()
		for _, s := range RunStates {
			require.Equal(t, s != RunScheduled && s != RunDispatching && s != RunRunning, s.Final(), s)
		}
		require.Equal(t, FinalRunStates, RunStates[3:])
		require.False(t, RunState("").Final())
	})

	t.Run("a kill is neither retried nor a misfire", func(t *testing.T) {
		t.Parallel()
		for _, s := range []RunState{RunFailed, RunTimedOut, RunLost} {
			require.True(t, s.Retryable(), s)
		}
		for _, s := range []RunState{RunSucceeded, RunKilled, RunMisfired, RunRunning, RunScheduled} {
			require.False(t, s.Retryable(), s)
		}
	})

	t.Run("parse accepts known names and lists them on error", func(t *testing.T) {
		t.Parallel()
		s, err := ParseRunState(" Timed_Out ")
		require.NoError(t, err)
		require.Equal(t, RunTimedOut, s)
		_, err = ParseRunState("done")
		require.ErrorContains(t, err, `unknown run state "done": use one of scheduled, dispatching, running, succeeded`)
	})
}

func TestParseBlock(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Block{"": BlockSerial, "serial_execution": BlockSerial, " DISCARD_LATER": BlockDiscardLater, "cover_early": BlockCoverEarly} {
		got, err := ParseBlock(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := ParseBlock("QUEUE")
	require.ErrorContains(t, err, `unknown block strategy "QUEUE": use one of SERIAL_EXECUTION, DISCARD_LATER, COVER_EARLY`)
}

func TestAlarmNames(t *testing.T) {
	t.Parallel()
	for _, c := range AlarmChannels {
		require.True(t, c.Valid(), c)
	}
	require.False(t, AlarmChannel("sms").Valid())
	require.Equal(t, "not_needed", AlarmNotNeeded.String())
	require.Equal(t, "unknown", AlarmStatus(9).String())
}

package lifecycle

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLoop(t *testing.T) {
	var l Loop
	l.Stop() // before Start: no-op
	require.False(t, l.Started())
	clk := clockwork.NewFakeClock()
	ticks := make(chan struct{}, 10)
	l.Start(context.Background(), func(ctx context.Context) {
		for Sleep(ctx, clk, time.Second) {
			ticks <- struct{}{}
		}
	})
	l.Start(context.Background(), func(context.Context) { t.Error("second Start must not run") })
	require.True(t, l.Started())
	require.NoError(t, clk.BlockUntilContext(context.Background(), 1))
	clk.Advance(time.Second)
	<-ticks
	l.Stop()
	l.Stop() // twice: no-op
	require.NoError(t, clk.BlockUntilContext(context.Background(), 0), "Sleep leaves no timer behind")
}

// Every ticks at once or after its first wait, then every interval; a
// tick's error is reported and the next tick still comes.
func TestEvery(t *testing.T) {
	for _, first := range []time.Duration{0, 3 * time.Second} {
		clk := clockwork.NewFakeClock()
		ticks := make(chan time.Time, 10)
		failed := make(chan error, 10)
		var l Loop
		l.Start(context.Background(), func(ctx context.Context) {
			Every(ctx, clk, first, time.Second, func(context.Context) error {
				ticks <- clk.Now()
				return errors.New("boom")
			}, func(err error) { failed <- err })
		})
		start := clk.Now()
		if first > 0 {
			require.NoError(t, clk.BlockUntilContext(context.Background(), 1))
			require.Empty(t, ticks, "no tick before the first wait")
			clk.Advance(first)
		}
		require.Equal(t, start.Add(first), <-ticks)
		require.EqualError(t, <-failed, "boom")
		require.NoError(t, clk.BlockUntilContext(context.Background(), 1))
		clk.Advance(time.Second)
		require.Equal(t, start.Add(first+time.Second), <-ticks)
		require.EqualError(t, <-failed, "boom")
		l.Stop()
		require.Empty(t, failed, "no error reported after the loop ended")
	}
}

// Services start in list order and stop in reverse, each once; a stop
// before start, a second stop and a start after stop do nothing.
func TestServicesStopInReverse(t *testing.T) {
	var events []string
	stage := func(name string) Service {
		return Stage{
			OnStart: func(context.Context) { events = append(events, "start "+name) },
			OnStop:  func() { events = append(events, "stop "+name) },
		}
	}
	s := NewServices(stage("store writer"), stage("dispatcher"), Stage{}, stage("pre-read"))
	s.Start(context.Background())
	s.Start(context.Background())
	s.Stop()
	s.Stop()
	s.Start(context.Background())
	require.Equal(t, []string{
		"start store writer", "start dispatcher", "start pre-read",
		"stop pre-read", "stop dispatcher", "stop store writer",
	}, events)

	events = nil
	NewServices(stage("never started")).Stop()
	require.Empty(t, events)

	// Added services were started by their owner; they stop in reverse too.
	var added Services
	added.Add(stage("database"))
	added.Add(Stage{OnStop: func() { events = append(events, "stop api") }})
	added.Stop()
	require.Equal(t, []string{"stop api", "stop database"}, events)
}

package lifecycle

import (
	"context"
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

package routes

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
)

func TestFailover(t *testing.T) {
	t.Parallel()
	abcd := []string{"a", "b", "c", "d"}
	ctx := context.Background()

	tests := []struct {
		name      string
		dead      []string
		wantOrder []string
		wantProbe []string // targets probed, in order
	}{
		{"first alive wins", nil, []string{"a", "b", "c", "d"}, []string{"a"}},
		{"skips a dead target", []string{"a"}, []string{"b", "c", "d"}, []string{"a", "b"}},
		{"skips dead targets in a row", []string{"a", "b", "c"}, []string{"d"}, []string{"a", "b", "c", "d"}},
		{"unprobed candidates after the winner stay in order", []string{"a", "c"}, []string{"b", "c", "d"}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			for _, d := range tt.dead {
				b.prober.dead[d] = true
			}
			p, err := b.router.Pick(ctx, "FAILOVER", 7, abcd)
			require.NoError(t, err)
			require.Equal(t, tt.wantOrder, p.Order)
			require.Len(t, p.Probes, len(tt.wantProbe))
			var calls []string
			for i, a := range p.Probes {
				require.Equal(t, tt.wantProbe[i], a.Target)
				require.Equal(t, KindBeat, a.Kind)
				if i < len(p.Probes)-1 {
					require.ErrorIs(t, a.Err, errDead)
				} else {
					require.NoError(t, a.Err)
				}
				calls = append(calls, "beat "+a.Target)
			}
			require.Equal(t, calls, b.prober.calls())
		})
	}

	t.Run("all dead is an error listing every probe", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, d := range abcd {
			b.prober.dead[d] = true
		}
		p, err := b.router.Pick(ctx, kind.RouteFailover, 7, abcd)
		require.ErrorIs(t, err, ErrNoTargetAvailable)
		var pe *ProbeError
		require.True(t, errors.As(err, &pe))
		require.Len(t, pe.Attempts, 4)
		require.Equal(t, "failover: no live target for job 7 among 4 candidate(s): beat a: connection refused; beat b: connection refused; beat c: connection refused; beat d: connection refused", err.Error())
		require.Empty(t, p.Order)
		require.Len(t, p.Probes, 4, "probes are returned for the attempt history")
	})

	t.Run("a hanging probe is bounded by ProbeTimeout", func(t *testing.T) {
		t.Parallel()
		prober := newFakeProber()
		prober.block["a"] = true
		r := New(Options{Prober: prober, ProbeTimeout: 20 * time.Millisecond})
		p, err := r.Pick(ctx, kind.RouteFailover, 7, []string{"a", "b"})
		require.NoError(t, err)
		require.Equal(t, []string{"b"}, p.Order)
		require.ErrorIs(t, p.Probes[0].Err, context.DeadlineExceeded)
	})

	t.Run("a cancelled context stops probing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.prober.dead["a"] = true
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		p, err := b.router.Pick(cctx, kind.RouteFailover, 7, abcd)
		require.ErrorIs(t, err, context.Canceled)
		require.Empty(t, p.Order)
		require.Empty(t, b.prober.calls())
	})
}

func TestBusyover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("skips a busy target", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.prober.busy["a"] = true
		p, err := b.router.Pick(ctx, "BUSYOVER", 42, []string{"a", "b", "c"})
		require.NoError(t, err)
		require.Equal(t, []string{"b", "c"}, p.Order)
		require.Len(t, p.Probes, 2)
		require.Equal(t, KindIdleBeat, p.Probes[0].Kind)
		require.ErrorIs(t, p.Probes[0].Err, targets.ErrBusy)
		require.NoError(t, p.Probes[1].Err)
		require.Equal(t, []string{"idle_beat a 42", "idle_beat b 42"}, b.prober.calls(), "the job id reaches the probe")
	})

	t.Run("skips busy and dead targets", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.prober.busy["a"] = true
		b.prober.dead["b"] = true
		p, err := b.router.Pick(ctx, kind.RouteBusyover, 42, []string{"a", "b", "c"})
		require.NoError(t, err)
		require.Equal(t, []string{"c"}, p.Order)
	})

	t.Run("all busy", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.prober.busy["a"] = true
		b.prober.busy["b"] = true
		p, err := b.router.Pick(ctx, kind.RouteBusyover, 42, []string{"a", "b"})
		require.ErrorIs(t, err, ErrNoTargetAvailable)
		require.Contains(t, err.Error(), "busyover: no idle target for job 42")
		require.Contains(t, err.Error(), "idle_beat b: job 42 is running on b: target is busy")
		require.Len(t, p.Probes, 2)
	})
}

// fakeDriver is a targets.Driver whose targets are alive unless listed.
type fakeDriver struct {
	dead map[string]bool
	busy map[string]bool
}

func (d fakeDriver) Run(context.Context, targets.Request) (targets.Dispatch, error) {
	return targets.Dispatch{}, errors.New("not used")
}
func (d fakeDriver) Beat(_ context.Context, target string) error {
	if d.dead[target] {
		return errDead
	}
	return nil
}
func (d fakeDriver) IdleBeat(_ context.Context, target string, _ int64) error {
	if d.busy[target] {
		return targets.ErrBusy
	}
	return nil
}
func (d fakeDriver) Kill(context.Context, string, int64, int64) error { return nil }
func (d fakeDriver) Log(context.Context, string, int64, int) (targets.LogChunk, error) {
	return targets.LogChunk{}, nil
}

func TestRegistryProber(t *testing.T) {
	t.Parallel()
	reg := targets.NewRegistry()
	reg.Register("fake", fakeDriver{
		dead: map[string]bool{"fake://down": true},
		busy: map[string]bool{"fake://busy": true},
	})
	r := New(Options{Prober: RegistryProber{Registry: reg}})
	ctx := context.Background()

	p, err := r.Pick(ctx, kind.RouteFailover, 1, []string{"fake://down", "nope://x", "fake://up", "fake://other"})
	require.NoError(t, err)
	require.Equal(t, []string{"fake://up", "fake://other"}, p.Order)
	require.ErrorIs(t, p.Probes[0].Err, errDead)
	require.ErrorIs(t, p.Probes[1].Err, targets.ErrUnknownScheme)

	p, err = r.Pick(ctx, kind.RouteBusyover, 1, []string{"fake://busy", "fake://up"})
	require.NoError(t, err)
	require.Equal(t, []string{"fake://up"}, p.Order)
	require.ErrorIs(t, p.Probes[0].Err, targets.ErrBusy)
}

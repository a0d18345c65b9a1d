package routes

import (
	"context"
	"fmt"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
)

// probe runs failover (Beat) or busyover (IdleBeat): it probes the candidates
// in order and stops at the first that answers without error. Order is the
// winner followed by the candidates after it (not probed); the candidates
// before it failed their probe and are left out.
func (r *Router) probe(ctx context.Context, strategy kind.Route, jobID int64, candidates []string) (Pick, error) {
	if r.prober == nil {
		return Pick{}, fmt.Errorf("route job %d (%s): %w: build the router with Options.Prober", jobID, strategy, ErrNoProber)
	}
	probe := KindBeat
	if strategy == kind.RouteBusyover {
		probe = KindIdleBeat
	}
	var p Pick
	for i, target := range candidates {
		if err := ctx.Err(); err != nil {
			return p, fmt.Errorf("route job %d (%s): stopped after %d of %d probes: %w", jobID, strategy, i, len(candidates), err)
		}
		err := r.probeOne(ctx, probe, target, jobID)
		p.Probes = append(p.Probes, Attempt{Target: target, Kind: probe, Err: err})
		if err == nil {
			p.Order = append([]string{target}, candidates[i+1:]...)
			return p, nil
		}
	}
	return p, &ProbeError{Strategy: strategy, JobID: jobID, Attempts: p.Probes}
}

func (r *Router) probeOne(ctx context.Context, probe, target string, jobID int64) error {
	if r.probeTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.probeTimeout)
		defer cancel()
	}
	if probe == KindIdleBeat {
		return r.prober.IdleBeat(ctx, target, jobID)
	}
	return r.prober.Beat(ctx, target)
}

// RegistryProber adapts a targets.Registry to Prober: each probe goes to the
// driver of the target's scheme, so failover and busyover work across target
// kinds (an HTTP executor, then a function, ...).
type RegistryProber struct {
	Registry *targets.Registry
}

var _ Prober = RegistryProber{}

// Beat asks the target's driver whether the target is reachable.
func (p RegistryProber) Beat(ctx context.Context, target string) error {
	d, err := p.Registry.For(target)
	if err != nil {
		return err
	}
	return d.Beat(ctx, target)
}

// IdleBeat asks the target's driver whether the target is idle for the job.
func (p RegistryProber) IdleBeat(ctx context.Context, target string, jobID int64) error {
	d, err := p.Registry.For(target)
	if err != nil {
		return err
	}
	return d.IdleBeat(ctx, target, jobID)
}

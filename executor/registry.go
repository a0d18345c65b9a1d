package executor

import (
	"context"

	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/internal/xxlwire"
)

// The registry service is the executor's heartbeat: it registers at once and
// then every registry interval (30 s), trying the admins in order until one
// accepts. Admins drop an executor they have not heard from for 90 s. Stop
// sends registryRemove.

func (e *Executor) registryLoop(ctx context.Context) {
	registered := false
	for {
		err := e.callAdmins(ctx, xxlwire.PathRegistry, e.regBody)
		switch {
		case err != nil && ctx.Err() == nil:
			e.cfg.logger.Errorf("executor: register %s as %s: %v", e.cfg.appName, e.cfg.address, err)
		case err == nil && !registered:
			e.cfg.logger.Infof("executor: registered %s as %s", e.cfg.appName, e.cfg.address)
		}
		registered = err == nil
		if !lifecycle.Sleep(ctx, e.cfg.clock, e.cfg.registryInterval) {
			return
		}
	}
}

func (e *Executor) unregister(ctx context.Context) {
	if err := e.callAdmins(ctx, xxlwire.PathRegistryRemove, e.regBody); err != nil {
		e.cfg.logger.Errorf("executor: remove registration of %s at %s: %v", e.cfg.appName, e.cfg.address, err)
	}
}

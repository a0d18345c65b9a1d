package scheduler

import (
	"context"

	"github.com/ringjob/ringjob/internal/lifecycle"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/store"
)

// registryMonitor drops HTTP executors that have not sent a registry beat
// for ExecutorDeadAfter (XXL-JOB: 90 s), every RegistryMonitorInterval.
// Candidates already ignore silent executors; this keeps the table small and
// the console's executor list true. Every replica runs it; the deletes are
// idempotent.
type registryMonitor struct {
	lifecycle.Loop
	cfg   Config
	st    *store.Store
	clock clockwork.Clock
	log   *logrus.Entry
}

func (m *registryMonitor) Start(ctx context.Context) { m.Loop.Start(ctx, m.run) }
func (m *registryMonitor) Stop()                     { m.Loop.Stop() }

func (m *registryMonitor) run(ctx context.Context) {
	lifecycle.Every(ctx, m.clock, m.cfg.RegistryMonitorInterval, m.cfg.RegistryMonitorInterval, m.sweep,
		func(err error) { m.log.WithError(err).Warn("drop silent executors") })
}

func (m *registryMonitor) sweep(ctx context.Context) error {
	n, err := m.st.RegistryDeleteStale(ctx, m.clock.Now().Add(-m.cfg.ExecutorDeadAfter).UnixMilli())
	if err != nil {
		return err
	}
	if n > 0 {
		m.log.WithField("executors", n).Info("dropped executors silent for too long")
	}
	return nil
}

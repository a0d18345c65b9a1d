package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// executorDriver is fakeDriver whose targets speak the executor protocol,
// whatever their URI's scheme.
type executorDriver struct{ fakeDriver }

func (*executorDriver) Capabilities() targets.Capabilities {
	return targets.Capabilities{ExecutorProtocol: true}
}

// A new group takes registered executors by default when a member's driver
// says it speaks the executor protocol (or it has no member), whatever the
// member URI's scheme is.
func TestDefaultAcceptRegistrationsAsksTheTarget(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		reg := targets.NewRegistry()
		reg.Register("fake", &fakeDriver{})
		reg.Register("xxl", &executorDriver{})
		svc := service.New(service.Options{Store: st, Drivers: reg, Clock: clockwork.NewFakeClockAt(time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC))})
		for _, c := range []struct {
			app     string
			members []string
			want    bool
		}{
			{"none", nil, true},
			{"plain", []string{"fake://a"}, false},
			{"executors", []string{"xxl://a"}, true},
			{"mixed", []string{"fake://b", "xxl://b"}, true},
		} {
			g, err := svc.CreateGroup(ctx, service.GroupCreateParams{AppName: c.app, Members: c.members})
			require.NoError(t, err)
			require.Equal(t, c.want, g.AcceptRegistrations, "group %s with members %v", c.app, c.members)
			plan, err := svc.Apply(ctx, service.ApplyParams{Groups: []service.ApplyGroup{{AppName: c.app + "-declared", Members: c.members}}, Write: true})
			require.NoError(t, err)
			require.True(t, plan.Applied)
			gs, err := st.GroupList(ctx)
			require.NoError(t, err)
			for _, dg := range gs {
				if dg.AppName == c.app+"-declared" {
					require.Equal(t, c.want, dg.AcceptRegistrations, "declared group %s with members %v", dg.AppName, c.members)
				}
			}
		}
	})
}

package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/store"
)

func (s *server) groupWith(app string, members ...string) store.Group {
	g, err := s.st.GroupCreate(context.Background(), store.GroupCreateParams{AppName: app, Members: members, GroupExecutorSettings: store.GroupExecutorSettings{AcceptRegistrations: true}, NowMs: time.Now().UnixMilli()})
	require.NoError(s.t, err)
	return g
}

func (s *server) routedJob(g store.Group, handler string, route kind.Route, shards int) store.Job {
	j, err := s.st.JobCreate(context.Background(), store.JobCreateParams{JobFields: store.JobFields{GroupID: g.ID, Name: handler + "-" + string(route), ScheduleType: "none",
		TimeZone: "UTC", Handler: handler, RouteStrategy: route, BlockStrategy: "SERIAL_EXECUTION", ShardCount: shards}, NowMs: time.Now().UnixMilli()})
	require.NoError(s.t, err)
	return j
}

// attempts returns a run's routing attempts. They are written when the send
// returns, which can be just after a quick executor's result was recorded,
// so it waits (up to 10 s) for them to appear.
func (s *server) attempts(runID int64) []scheduler.Attempt {
	var raw string
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if raw, err = s.st.RunAttempts(context.Background(), runID); err != nil || raw != "" {
			break
		}
	}
	require.NoError(s.t, err)
	var as []scheduler.Attempt
	if raw != "" {
		require.NoError(s.t, json.Unmarshal([]byte(raw), &as))
	}
	return as
}

func deadAddress(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := "http://" + ln.Addr().String()
	ln.Close()
	return addr
}

func TestFailoverAcrossTargetKinds(t *testing.T) {
	t.Parallel()
	eachServer(t, testFailoverAcrossTargetKinds)
}

func testFailoverAcrossTargetKinds(t *testing.T, dialect string) {
	s := startServer(t, dialect)

	t.Run("a stopped HTTP executor fails its beat; the local target runs", func(t *testing.T) {
		dead := deadAddress(t)
		g := s.groupWith("mixed-dead", dead, "local://env")
		r := s.waitState(s.trigger(s.routedJob(g, "h", "failover", 1), "p").ID, kind.RunSucceeded)
		require.Equal(t, "local://env", r.Target)
		as := s.attempts(r.ID)
		require.Len(t, as, 3, "%+v", as)
		require.Equal(t, dead, as[0].Target)
		require.Equal(t, "beat", as[0].Op)
		require.NotEmpty(t, as[0].Error)
		require.Equal(t, "local://env", as[1].Target)
		require.Equal(t, "beat", as[1].Op)
		require.Empty(t, as[1].Error)
		require.Equal(t, scheduler.Attempt{Target: "local://env", Op: "run", AtMs: as[2].AtMs}, as[2])
	})

	t.Run("an executor that refuses the run: failover moves on", func(t *testing.T) {
		refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/run" {
				fmt.Fprint(w, `{"code":500,"msg":"job handler [h] not found."}`)
				return
			}
			fmt.Fprint(w, `{"code":200,"msg":null}`)
		}))
		defer refusing.Close()
		g := s.groupWith("mixed-refusing", refusing.URL, "local://env")
		r := s.waitState(s.trigger(s.routedJob(g, "h", "failover", 1), "p").ID, kind.RunSucceeded)
		require.Equal(t, "local://env", r.Target)
		as := s.attempts(r.ID)
		var ops []string
		for _, a := range as {
			ops = append(ops, a.Op+" "+a.Target+" "+map[bool]string{true: "ok", false: "failed"}[a.Error == ""])
		}
		require.Equal(t, []string{"beat " + refusing.URL + " ok", "run " + refusing.URL + " failed", "run local://env ok"}, ops)
		require.Contains(t, as[1].Error, "job handler [h] not found.")
	})

	t.Run("all candidates fail: the run fails with every reason", func(t *testing.T) {
		g := s.groupWith("all-dead", deadAddress(t), deadAddress(t))
		r := s.waitState(s.trigger(s.routedJob(g, "h", "failover", 1), "p").ID, kind.RunFailed)
		require.Contains(t, r.Message, "beat")
		require.Len(t, s.attempts(r.ID), 2)
	})
}

func TestShardingFanOut(t *testing.T) {
	t.Parallel()
	eachServer(t, testShardingFanOut)
}

func testShardingFanOut(t *testing.T, dialect string) {
	s := startServer(t, dialect)

	t.Run("three executors get indexes 0..2 exactly once", func(t *testing.T) {
		g := s.group("fleet")
		var addrs []string
		for i := 0; i < 3; i++ {
			e := startExecutor(t, s, "fleet")
			addrs = append(addrs, strings.TrimRight(e.Address(), "/"))
		}
		require.Eventually(t, func() bool { l, _ := s.ex.List(context.Background(), "fleet", 90_000); return len(l) == 3 }, 10*time.Second, 10*time.Millisecond)
		sort.Strings(addrs)
		first := s.trigger(s.routedJob(g, "hello", "sharding", 1), "warm")
		var runs []store.Run
		require.Eventually(t, func() bool {
			runs, _ = s.st.RunList(context.Background(), store.RunListParams{JobID: first.JobID, States: []kind.RunState{kind.RunSucceeded}, Limit: 10})
			return len(runs) == 3 && allTargeted(runs)
		}, 20*time.Second, 20*time.Millisecond)
		seen := map[int]string{}
		for _, r := range runs {
			require.Equal(t, 3, r.ShardTotal)
			require.Equal(t, first.ScheduledMs, r.ScheduledMs, "the shards share the fire time")
			_, dup := seen[r.ShardIndex]
			require.False(t, dup, "index %d twice", r.ShardIndex)
			seen[r.ShardIndex] = r.Target
		}
		for i := 0; i < 3; i++ {
			require.Equal(t, addrs[i], seen[i], "shard %d goes to the %d-th executor (sorted, as XXL-JOB)", i, i)
		}
	})

	t.Run("a local target with shard count 8 runs 8 processes with 0..7", func(t *testing.T) {
		g := s.groupWith("local-shards", "local://env")
		first := s.trigger(s.routedJob(g, "", "sharding", 8), "x")
		var runs []store.Run
		require.Eventually(t, func() bool {
			runs, _ = s.st.RunList(context.Background(), store.RunListParams{JobID: first.JobID, States: []kind.RunState{kind.RunSucceeded}, Limit: 20})
			return len(runs) == 8 && allTargeted(runs)
		}, 20*time.Second, 20*time.Millisecond)
		got := map[int]bool{}
		for _, r := range runs {
			log, err := s.svc.RunLog(context.Background(), r.ID, 1)
			require.NoError(t, err)
			require.Contains(t, log.Content, fmt.Sprintf("RINGJOB_SHARD_INDEX=%d\n", r.ShardIndex))
			require.Contains(t, log.Content, "RINGJOB_SHARD_TOTAL=8\n")
			got[r.ShardIndex] = true
		}
		require.Len(t, got, 8)
	})
}

// allTargeted: the batched write of where each run went has landed.
func allTargeted(runs []store.Run) bool {
	for _, r := range runs {
		if r.Target == "" {
			return false
		}
	}
	return true
}

func TestPinnedTargetsAndChosenTarget(t *testing.T) {
	t.Parallel()
	eachServer(t, testPinnedTargetsAndChosenTarget)
}

func testPinnedTargetsAndChosenTarget(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	ctx := context.Background()
	g := s.group("pinned-fleet") // executors register only into a group that exists
	a := startExecutor(t, s, "pinned-fleet")
	b := startExecutor(t, s, "pinned-fleet")
	addrA, addrB := strings.TrimRight(a.Address(), "/"), strings.TrimRight(b.Address(), "/")
	require.Eventually(t, func() bool { l, _ := s.ex.List(ctx, "pinned-fleet", 90_000); return len(l) == 2 }, 10*time.Second, 10*time.Millisecond)

	// Pinned to b: every run goes to b, whatever "first" would pick.
	j, err := s.st.JobCreate(ctx, store.JobCreateParams{JobFields: store.JobFields{GroupID: g.ID, Name: "pinned", ScheduleType: "none", TimeZone: "UTC",
		Handler: "hello", RouteStrategy: "first", ShardCount: 1, PinnedTargets: []string{addrB + "/"}}, NowMs: time.Now().UnixMilli()})
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		r := s.waitState(s.trigger(j, "p").ID, kind.RunSucceeded)
		require.Equal(t, addrB, r.Target)
	}

	// A manual trigger may name a candidate, and only a candidate.
	free := s.routedJob(g, "hello", "first", 1)
	p := "chosen"
	r, _, err := s.sched.Trigger(ctx, scheduler.TriggerParams{JobID: free.ID, Params: &p, Target: addrB})
	require.NoError(t, err)
	require.Equal(t, addrB, s.waitState(r.ID, kind.RunSucceeded).Target)
	_, _, err = s.sched.Trigger(ctx, scheduler.TriggerParams{JobID: free.ID, Params: &p, Target: "http://169.254.169.254/latest/meta-data"})
	require.ErrorIs(t, err, scheduler.ErrTargetNotCandidate)
	require.Contains(t, err.Error(), addrA, "the error lists the candidates")
	_, _, err = s.sched.Trigger(ctx, scheduler.TriggerParams{JobID: j.ID, Params: &p, Target: addrA})
	require.ErrorIs(t, err, scheduler.ErrTargetNotCandidate, "a pinned job's candidates are its pins")
}

package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/xxlwire"
)

func TestNew(t *testing.T) {
	t.Parallel()
	ok := []Option{WithAdminAddresses("http://a:8080"), WithAppName("app"), WithAccessToken("t")}
	tests := []struct {
		name string
		opts []Option
		want string
	}{
		{"no admin", []Option{WithAppName("app"), WithAccessToken("t")}, "WithAdminAddresses"},
		{"bad admin", append(ok, WithAdminAddresses("ftp://x")), "WithAdminAddresses"},
		{"no app", []Option{WithAdminAddresses("http://a"), WithAccessToken("t")}, "WithAppName"},
		{"no token", []Option{WithAdminAddresses("http://a"), WithAppName("app")}, "WithAccessToken"},
		{"both token kinds", append(ok, WithoutAccessToken()), "WithoutAccessToken"},
		{"bad address", append(ok, WithAddress("10.0.0.1:9999")), "WithAddress"},
		{"bad timeout", append(ok, WithAdminTimeout(0)), "WithAdminTimeout"},
		{"bad interval", append(ok, WithRegistryInterval(-time.Second)), "WithRegistryInterval"},
		{"bad queue", append(ok, WithMaxQueue(-1)), "WithMaxQueue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts...)
			require.ErrorContains(t, err, tt.want)
		})
	}
	t.Run("comma-separated admins and no token", func(t *testing.T) {
		e, err := New(WithAdminAddresses("http://a:1/, http://b:2/xxl-job-admin/"), WithAppName("app"), WithoutAccessToken())
		require.NoError(t, err)
		require.Equal(t, []string{"http://a:1", "http://b:2/xxl-job-admin"}, e.cfg.admins)
		require.Equal(t, DefaultLogRetentionDays, e.cfg.retentionDays)
		require.ErrorIs(t, e.Start(context.Background()), ErrNoAddress)
		require.NoError(t, e.Stop(context.Background()))
		require.ErrorIs(t, e.Start(context.Background()), ErrStopped)
	})
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	t.Run("registers at start, every interval, and removes itself on stop", func(t *testing.T) {
		t.Parallel()
		b := setupStarted(t)
		want := map[string]string{"registryGroup": "EXECUTOR", "registryKey": testApp, "registryValue": b.url + "/"}
		b.admin.waitFor(t, "first registry", func() bool { reg, _, _ := b.admin.snapshot(); return len(reg) == 1 })
		reg, _, _ := b.admin.snapshot()
		require.Equal(t, want, reg[0])

		b.advanceUntil(t, 10*time.Second, "second registry", func() bool { reg, _, _ := b.admin.snapshot(); return len(reg) >= 2 })
		require.GreaterOrEqual(t, b.clock.Since(testStart), DefaultRegistryInterval)

		require.NoError(t, b.e.Stop(context.Background()))
		require.NoError(t, b.e.Stop(context.Background()), "Stop twice")
		reg, removes, _ := b.admin.snapshot()
		require.Equal(t, []map[string]string{want}, removes)
		n := len(reg)
		b.clock.Advance(time.Hour)
		reg, _, _ = b.admin.snapshot()
		require.Len(t, reg, n, "no heartbeat after Stop")
	})
	t.Run("tries the admins in order until one accepts", func(t *testing.T) {
		t.Parallel()
		dead := httptest.NewServer(nil)
		deadURL := dead.URL
		dead.Close()
		first := newFakeAdmin(t)
		first.setDown(true)
		defer first.srv.Close()
		b := setup(t, WithAdminAddresses(deadURL, first.URL()))
		// The bundle's own admin comes last.
		require.Equal(t, []string{b.admin.URL(), deadURL, first.URL()}, b.e.cfg.admins[:3])
		b.e.cfg.admins = []string{deadURL, first.URL(), b.admin.URL()}
		require.NoError(t, b.e.Start(context.Background()))
		b.admin.waitFor(t, "registry on the third admin", func() bool { reg, _, _ := b.admin.snapshot(); return len(reg) == 1 })
	})
}

func TestProtocol(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t.Run("beat", func(t *testing.T) {
		for _, body := range []any{nil, `""`, map[string]any{}} {
			r := b.post(t, "/beat", body)
			require.Equal(t, 200, r.Code)
			require.Equal(t, "null", string(r.Content))
		}
	})
	t.Run("POST only", func(t *testing.T) {
		r := b.call(t, "GET", "/beat", nil, testToken)
		require.Equal(t, 500, r.Code)
		require.Equal(t, "invalid request, HttpMethod not support.", r.Msg)
	})
	t.Run("unknown path", func(t *testing.T) {
		r := b.post(t, "/run/", map[string]any{})
		require.Equal(t, 500, r.Code)
		require.Equal(t, "invalid request, uri-mapping(/run/) not found.", r.Msg)
	})
	t.Run("bad JSON", func(t *testing.T) {
		r := b.post(t, "/run", "{")
		require.Equal(t, 500, r.Code)
		require.Contains(t, r.Msg, "not valid JSON")
	})
	t.Run("idleBeat of an unknown job", func(t *testing.T) {
		r := b.post(t, "/idleBeat", map[string]any{"jobId": 99})
		require.Equal(t, 200, r.Code)
	})
}

func TestToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range []string{"/beat", "/idleBeat", "/run", "/trigger", "/kill", "/log", "/nope"} {
		for _, token := range []string{"", "wrong", testToken + "x"} {
			t.Run(path+" token "+token, func(t *testing.T) {
				r := b.call(t, "POST", path, b.trig(1, 1, "hello"), token)
				require.Equal(t, 500, r.Code)
				require.Equal(t, "The access token is wrong.", r.Msg)
			})
		}
	}
	require.Equal(t, 200, b.post(t, "/beat", nil).Code)

	t.Run("no token configured accepts any", func(t *testing.T) {
		e, err := New(WithAdminAddresses("http://127.0.0.1:1"), WithAppName("a"), WithoutAccessToken(), WithLogDir(t.TempDir()))
		require.NoError(t, err)
		srv := httptest.NewServer(e.Handler())
		defer srv.Close()
		nb := &bundle{url: srv.URL, client: b.client}
		require.Equal(t, 200, nb.call(t, "POST", "/beat", nil, "").Code)
		require.Equal(t, 200, nb.call(t, "POST", "/beat", nil, "anything").Code)
		require.NoError(t, e.Stop(context.Background()))
	})
}

func TestRun(t *testing.T) {
	t.Parallel()
	b := setupStarted(t)
	seen := make(chan *Job, 4)
	b.e.Register("hello", func(ctx context.Context, job *Job) error {
		require.Same(t, job, FromContext(ctx))
		job.Log("hello %s", job.Params)
		seen <- job
		return nil
	})

	t.Run("2.x shape: /run", func(t *testing.T) {
		tr := b.trig(7, 101, "hello").with("executorParams", "world").with("broadcastIndex", 2).with("broadcastTotal", 5).with("executorTimeout", 9)
		b.run(t, tr)
		job := recv(t, seen, "the handler")
		require.Equal(t, int64(7), job.JobID)
		require.Equal(t, int64(101), job.LogID)
		require.Equal(t, "hello", job.HandlerName)
		require.Equal(t, "world", job.Params)
		require.Equal(t, 2, job.ShardIndex)
		require.Equal(t, 5, job.ShardTotal)
		require.Equal(t, 9*time.Second, job.Timeout)
		require.Equal(t, "SERIAL_EXECUTION", job.BlockStrategy)
		require.True(t, job.LogDateTime.Equal(testStart))

		cb := b.admin.waitCallback(t, 101)
		require.Equal(t, 200, cb.HandleCode)
		require.Nil(t, cb.HandleMsg, "a plain success has a null handleMsg, as the Java executor")
		require.Equal(t, testStart.UnixMilli(), cb.LogDateTim)
		require.Equal(t, testStart.UnixMilli(), cb.LogDateTime)
	})
	t.Run("3.5 shape: /trigger", func(t *testing.T) {
		r := b.post(t, "/trigger", b.trig(8, 102, "hello"))
		require.Equal(t, 200, r.Code, r.Msg)
		recv(t, seen, "the handler")
		require.Equal(t, 200, b.admin.waitCallback(t, 102).HandleCode)
	})
	t.Run("no shard fields means 0 of 1", func(t *testing.T) {
		tr := b.trig(9, 103, "hello")
		delete(tr, "broadcastIndex")
		delete(tr, "broadcastTotal")
		b.run(t, tr)
		job := recv(t, seen, "the handler")
		require.Equal(t, 0, job.ShardIndex)
		require.Equal(t, 1, job.ShardTotal)
	})
}

func TestFailures(t *testing.T) {
	t.Parallel()
	b := setupStarted(t)
	b.e.Register("fail", func(ctx context.Context, job *Job) error { return errors.New("disk full") })
	b.e.Register("panic", func(ctx context.Context, job *Job) error { panic("boom") })

	t.Run("an error is a failure", func(t *testing.T) {
		b.run(t, b.trig(1, 201, "fail"))
		cb := b.admin.waitCallback(t, 201)
		require.Equal(t, 500, cb.HandleCode)
		require.Equal(t, "disk full", cb.msg())
	})
	t.Run("a panic is a failure with its stack", func(t *testing.T) {
		b.run(t, b.trig(2, 202, "panic"))
		cb := b.admin.waitCallback(t, 202)
		require.Equal(t, 500, cb.HandleCode)
		require.True(t, strings.HasPrefix(cb.msg(), "panic: boom\n"), cb.msg())
		require.Contains(t, cb.msg(), "executor_test.go")
		// The executor survives and the job runs again.
		b.run(t, b.trig(2, 203, "fail"))
		require.Equal(t, 500, b.admin.waitCallback(t, 203).HandleCode)
	})
	t.Run("unknown handler", func(t *testing.T) {
		r := b.post(t, "/run", b.trig(3, 204, "nope"))
		require.Equal(t, 500, r.Code)
		require.Equal(t, "job handler [nope] not found.", r.Msg)
	})
	t.Run("glue types", func(t *testing.T) {
		r := b.post(t, "/run", b.trig(3, 205, "").with("glueType", "GLUE_SHELL"))
		require.Equal(t, 500, r.Code)
		require.Equal(t, "fail, current glue type [GLUE_SHELL] not supported.", r.Msg)
		r = b.post(t, "/run", b.trig(3, 205, "").with("glueType", "COBOL"))
		require.Equal(t, "glueType[COBOL] is not valid.", r.Msg)
	})
	t.Run("long messages are cut", func(t *testing.T) {
		b.e.Register("long", func(ctx context.Context, job *Job) error { return errors.New(strings.Repeat("é", 60000)) })
		b.run(t, b.trig(4, 206, "long"))
		msg := b.admin.waitCallback(t, 206).msg()
		require.Equal(t, strings.Repeat("é", 50000)+"...", msg)
	})
}

func TestDedupe(t *testing.T) {
	t.Parallel()
	b := setupStarted(t)
	g := newGate()
	b.e.Register("block", g.blocking)

	b.run(t, b.trig(1, 301, "block"))
	recv(t, g.started, "start")
	r := b.post(t, "/run", b.trig(1, 301, "block"))
	require.Equal(t, 500, r.Code)
	require.Equal(t, "repeat trigger job, logId:301", r.Msg)
	// Also on another job id and after the run has ended.
	r = b.post(t, "/run", b.trig(2, 301, "block"))
	require.Equal(t, "repeat trigger job, logId:301", r.Msg)
	close(g.release)
	b.admin.waitCallback(t, 301)
	r = b.post(t, "/run", b.trig(1, 301, "block"))
	require.Equal(t, "repeat trigger job, logId:301", r.Msg)
	require.Len(t, b.admin.callbacks(), 1)
}

func TestBlockStrategies(t *testing.T) {
	t.Parallel()
	t.Run("SERIAL_EXECUTION queues in order", func(t *testing.T) {
		t.Parallel()
		b := setupStarted(t)
		g := newGate()
		b.e.Register("block", g.blocking)
		b.run(t, b.trig(1, 1, "block"))
		require.Equal(t, int64(1), recv(t, g.started, "first run"))
		b.run(t, b.trig(1, 2, "block"))
		b.run(t, b.trig(1, 3, "block").with("executorBlockStrategy", "UNKNOWN"))
		r := b.post(t, "/idleBeat", map[string]any{"jobId": 1})
		require.Equal(t, 500, r.Code)
		require.Equal(t, "job thread is running or has trigger queue.", r.Msg)
		// Another job runs in parallel.
		other := newGate()
		b.e.Register("other", other.blocking)
		b.run(t, b.trig(2, 4, "other"))
		require.Equal(t, int64(4), recv(t, other.started, "other job"))
		close(other.release)

		g.release <- struct{}{}
		require.Equal(t, int64(2), recv(t, g.started, "second run"))
		g.release <- struct{}{}
		require.Equal(t, int64(3), recv(t, g.started, "third run"))
		close(g.release)
		for _, id := range []int64{1, 2, 3, 4} {
			require.Equal(t, 200, b.admin.waitCallback(t, id).HandleCode)
		}
		b.admin.waitFor(t, "idle", func() bool { return b.post(t, "/idleBeat", map[string]any{"jobId": 1}).Code == 200 })
	})
	t.Run("DISCARD_LATER rejects while running or queued", func(t *testing.T) {
		t.Parallel()
		b := setupStarted(t)
		g := newGate()
		b.e.Register("block", g.blocking)
		b.run(t, b.trig(1, 1, "block"))
		recv(t, g.started, "first run")
		r := b.post(t, "/run", b.trig(1, 2, "block").with("executorBlockStrategy", "DISCARD_LATER"))
		require.Equal(t, 500, r.Code)
		require.Equal(t, "block strategy effect：Discard Later", r.Msg)
		b.run(t, b.trig(1, 3, "block")) // serial: queued
		r = b.post(t, "/run", b.trig(1, 4, "block").with("executorBlockStrategy", "DISCARD_LATER"))
		require.Equal(t, "block strategy effect：Discard Later", r.Msg)
		close(g.release)
		b.admin.waitCallback(t, 3)
		_, ok := b.admin.callback(2)
		require.False(t, ok, "a discarded trigger has no callback: the admin has its answer")
		// Idle again: DISCARD_LATER runs.
		b.admin.waitFor(t, "idle", func() bool { return b.e.idle(1) })
		b.run(t, b.trig(1, 5, "block").with("executorBlockStrategy", "DISCARD_LATER"))
		require.Equal(t, 200, b.admin.waitCallback(t, 5).HandleCode)
	})
	t.Run("COVER_EARLY kills the running run and the queue", func(t *testing.T) {
		t.Parallel()
		b := setupStarted(t)
		g := newGate()
		b.e.Register("block", g.blocking)
		b.run(t, b.trig(1, 1, "block"))
		recv(t, g.started, "first run")
		b.run(t, b.trig(1, 2, "block"))
		b.run(t, b.trig(1, 3, "block").with("executorBlockStrategy", "COVER_EARLY"))
		require.ErrorIs(t, recv(t, g.causes, "cancel of the first run"), ErrKilled)
		require.Equal(t, int64(3), recv(t, g.started, "the covering run"))

		cb := b.admin.waitCallback(t, 1)
		require.Equal(t, 500, cb.HandleCode)
		require.Equal(t, "block strategy effect：Cover Early [job running, killed]", cb.msg())
		cb = b.admin.waitCallback(t, 2)
		require.Equal(t, 500, cb.HandleCode)
		require.Equal(t, "block strategy effect：Cover Early [job not executed, in the job queue, killed.]", cb.msg())
		close(g.release)
		require.Equal(t, 200, b.admin.waitCallback(t, 3).HandleCode)
		require.Len(t, b.admin.callbacks(), 3, "the killed run is reported once, with its own logId")
	})
	t.Run("queue limit", func(t *testing.T) {
		t.Parallel()
		b := setupStarted(t, WithMaxQueue(1))
		g := newGate()
		b.e.Register("block", g.blocking)
		b.run(t, b.trig(1, 1, "block"))
		recv(t, g.started, "first run")
		b.run(t, b.trig(1, 2, "block"))
		r := b.post(t, "/run", b.trig(1, 3, "block"))
		require.Equal(t, 500, r.Code)
		require.Contains(t, r.Msg, "queue is full")
		close(g.release)
		b.admin.waitCallback(t, 2)
	})
	t.Run("another handler for the job replaces the worker", func(t *testing.T) {
		t.Parallel()
		b := setupStarted(t)
		g := newGate()
		b.e.Register("block", g.blocking)
		b.e.Register("other", func(ctx context.Context, job *Job) error { return nil })
		b.run(t, b.trig(1, 1, "block"))
		recv(t, g.started, "first run")
		b.run(t, b.trig(1, 2, "other"))
		require.Equal(t, "change jobhandler or glue type, and terminate the old job thread. [job running, killed]", b.admin.waitCallback(t, 1).msg())
		require.Equal(t, 200, b.admin.waitCallback(t, 2).HandleCode)
		close(g.release)
	})
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	b := setupStarted(t)
	g := newGate()
	b.e.Register("stubborn", func(ctx context.Context, job *Job) error {
		if job.Params == "quick" {
			return nil
		}
		return g.stubborn(ctx, job)
	})
	b.e.Register("ok", func(ctx context.Context, job *Job) error { return nil })

	b.run(t, b.trig(1, 1, "stubborn").with("executorTimeout", 5))
	recv(t, g.started, "the run")
	b.run(t, b.trig(1, 2, "stubborn").with("executorParams", "quick")) // queued behind it
	b.clock.Advance(4 * time.Second)
	b.run(t, b.trig(3, 3, "ok"))
	b.admin.waitCallback(t, 3)
	_, reported := b.admin.callback(1)
	require.False(t, reported, "not before the deadline")

	b.clock.Advance(time.Second)
	cb := b.admin.waitCallback(t, 1)
	require.Equal(t, 502, cb.HandleCode)
	require.Equal(t, "job execute timeout ", cb.msg())
	// The queue goes on while the stubborn handler still runs.
	require.Equal(t, 200, b.admin.waitCallback(t, 2).HandleCode)

	close(g.release)
	require.ErrorIs(t, recv(t, g.causes, "the handler's cause"), ErrTimeout)
	recv(t, g.ended, "the handler returning")
	// A later run's callback comes after anything the old handler could send.
	b.run(t, b.trig(1, 4, "stubborn").with("executorParams", "quick"))
	b.admin.waitCallback(t, 4)
	n := 0
	for _, c := range b.admin.callbacks() {
		if c.LogID == 1 {
			n++
		}
	}
	require.Equal(t, 1, n, "the abandoned handler does not report again")
}

func TestKill(t *testing.T) {
	t.Parallel()
	b := setupStarted(t)
	g := newGate()
	b.e.Register("block", g.blocking)
	b.run(t, b.trig(1, 1, "block"))
	recv(t, g.started, "the run")
	b.run(t, b.trig(1, 2, "block"))

	r := b.post(t, "/kill", map[string]any{"jobId": 1})
	require.Equal(t, 200, r.Code)
	require.Equal(t, "null", string(r.Data))
	require.ErrorIs(t, recv(t, g.causes, "the handler's cause"), ErrKilled)
	cb := b.admin.waitCallback(t, 1)
	require.Equal(t, 500, cb.HandleCode)
	require.Equal(t, "scheduling center kill job. [job running, killed]", cb.msg())
	cb = b.admin.waitCallback(t, 2)
	require.Equal(t, 500, cb.HandleCode)
	require.Equal(t, "scheduling center kill job. [job not executed, in the job queue, killed.]", cb.msg())

	r = b.post(t, "/kill", map[string]any{"jobId": 1})
	require.Equal(t, 200, r.Code)
	require.Equal(t, "job thread already killed.", r.Msg)
	require.Equal(t, `"job thread already killed."`, string(r.Data))
	require.Equal(t, 200, b.post(t, "/idleBeat", map[string]any{"jobId": 1}).Code)

	t.Run("a killed handler that ignores ctx is reported at once", func(t *testing.T) {
		g2 := newGate()
		b.e.Register("stubborn", g2.stubborn)
		b.run(t, b.trig(5, 10, "stubborn"))
		recv(t, g2.started, "the run")
		require.Equal(t, 200, b.post(t, "/kill", map[string]any{"jobId": 5}).Code)
		require.Equal(t, "scheduling center kill job. [job running, killed]", b.admin.waitCallback(t, 10).msg())
		// The job id is free for a new run at once.
		b.run(t, b.trig(5, 11, "stubborn"))
		recv(t, g2.started, "the next run")
		close(g2.release)
		require.Equal(t, 200, b.admin.waitCallback(t, 11).HandleCode)
		recv(t, g2.ended, "first handler")
		recv(t, g2.ended, "second handler")
	})
}

var logLine = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \[logs\]-\[1\] `)

func TestLog(t *testing.T) {
	t.Parallel()
	b := setupStarted(t)
	step := make(chan struct{})
	b.e.Register("logs", func(ctx context.Context, job *Job) error {
		job.Log("one")
		job.Logger().Printf("two %d", 2)
		<-step
		job.Log("three")
		return nil
	})
	tr := b.trig(1, 42, "logs")
	logReq := func(from int) map[string]any {
		return map[string]any{"logDateTim": testStart.UnixMilli(), "logId": 42, "fromLineNum": from}
	}
	read := func(req map[string]any) xxlwire.LogResult {
		r := b.post(t, "/log", req)
		require.Equal(t, 200, r.Code)
		var res xxlwire.LogResult
		require.NoError(t, json.Unmarshal(r.Data, &res))
		return res
	}

	res := read(logReq(1))
	require.Equal(t, xxlwire.LogResult{FromLineNum: 1, LogContent: "readLog fail, logFile not exists", IsEnd: true}, res)

	b.run(t, tr)
	b.admin.waitFor(t, "two lines", func() bool { return read(logReq(1)).ToLineNum == 3 })
	res = read(logReq(1))
	require.False(t, res.IsEnd, "still running")
	lines := strings.Split(strings.TrimSuffix(res.LogContent, "\n"), "\n")
	require.Len(t, lines, 3)
	for _, l := range lines {
		require.Regexp(t, logLine, l)
	}
	require.True(t, strings.HasSuffix(lines[1], "] one"), lines[1])
	require.True(t, strings.HasSuffix(lines[2], "] two 2"), lines[2])
	require.True(t, strings.HasPrefix(lines[0], "2024-03-10 12:00:00 [logs]-[1] "), lines[0])

	close(step)
	b.admin.waitCallback(t, 42)
	res = read(logReq(1))
	require.True(t, res.IsEnd)
	require.Equal(t, 5, res.ToLineNum) // start, one, two, three, end
	require.Contains(t, res.LogContent, "] three\n")
	require.Contains(t, res.LogContent, "job execute end")

	res = read(logReq(4))
	require.Equal(t, 4, res.FromLineNum)
	require.Equal(t, 5, res.ToLineNum)
	require.Equal(t, 2, strings.Count(res.LogContent, "\n"))
	require.True(t, res.IsEnd)

	res = read(logReq(6))
	require.Equal(t, xxlwire.LogResult{FromLineNum: 6, ToLineNum: 5, LogContent: "", IsEnd: true}, res)

	// 3.5 spelling.
	res = read(map[string]any{"logDateTime": testStart.UnixMilli(), "logId": 42, "fromLineNum": 5})
	require.Equal(t, 5, res.ToLineNum)
	require.Contains(t, res.LogContent, "job execute end")

	path := filepath.Join(b.dir, testStart.Format("2006-01-02"), "42.log")
	require.FileExists(t, path)
	// Another day's file is another file: none, but the executor received
	// run 42, and says so (a scheduler that lost track of its send asks
	// whether it arrived); a log id it never received does not exist.
	res = read(map[string]any{"logDateTime": testStart.AddDate(0, 0, 1).UnixMilli(), "logId": 42, "fromLineNum": 1})
	require.Equal(t, "the run was received; its log file is no longer kept", res.LogContent)
	require.True(t, res.IsEnd)
	res = read(map[string]any{"logDateTime": testStart.UnixMilli(), "logId": 4242, "fromLineNum": 1})
	require.Equal(t, "readLog fail, logFile not exists", res.LogContent)
}

func TestQueuedRunLogIsNotEnded(t *testing.T) {
	t.Parallel()
	b := setupStarted(t)
	g := newGate()
	b.e.Register("block", g.blocking)
	b.run(t, b.trig(1, 1, "block"))
	recv(t, g.started, "the run")
	b.run(t, b.trig(1, 2, "block"))
	r := b.post(t, "/log", map[string]any{"logDateTim": testStart.UnixMilli(), "logId": 2, "fromLineNum": 1})
	var res xxlwire.LogResult
	require.NoError(t, json.Unmarshal(r.Data, &res))
	require.Equal(t, xxlwire.LogResult{FromLineNum: 1}, res, "queued: no file yet, not ended")
	close(g.release)
	b.admin.waitCallback(t, 2)
}

func TestCallbacks(t *testing.T) {
	t.Parallel()
	t.Run("batched", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.e.Register("ok", func(ctx context.Context, job *Job) error { return nil })
		for i := int64(1); i <= 60; i++ {
			b.run(t, b.trig(i, i, "ok"))
		}
		// Accepted before Start: the results wait for the sender.
		b.admin.waitFor(t, "60 runs ended", func() bool {
			b.e.mu.Lock()
			defer b.e.mu.Unlock()
			return len(b.e.active) == 0
		})
		require.NoError(t, b.e.Start(context.Background()))
		b.admin.waitFor(t, "60 callbacks", func() bool { return len(b.admin.callbacks()) == 60 })
		b.admin.mu.Lock()
		defer b.admin.mu.Unlock()
		require.Len(t, b.admin.callbackPosts, 2)
		require.Len(t, b.admin.callbackPosts[0], 50)
	})
	t.Run("saved when no admin accepts, resent when one does", func(t *testing.T) {
		t.Parallel()
		b := setupStarted(t)
		b.e.Register("ok", func(ctx context.Context, job *Job) error { return nil })
		b.admin.setDown(true)
		b.run(t, b.trig(1, 1, "ok"))
		dir := filepath.Join(b.dir, "callbacklogs")
		var files []string
		b.admin.waitFor(t, "a retry file", func() bool {
			files, _ = filepath.Glob(filepath.Join(dir, "xxl-job-callback-*.log"))
			return len(files) == 1
		})
		data, err := os.ReadFile(files[0])
		require.NoError(t, err)
		var items []wireCallback
		require.NoError(t, json.Unmarshal(data, &items), "the file is the callback body, a JSON array")
		require.Len(t, items, 1)
		require.Equal(t, int64(1), items[0].LogID)
		require.Equal(t, 200, items[0].HandleCode)

		// Still down at the next retry: the file stays.
		b.clock.Advance(DefaultCallbackRetryInterval)
		b.admin.setDown(false)
		b.advanceUntil(t, 5*time.Second, "the callback", func() bool { _, ok := b.admin.callback(1); return ok })
		b.admin.waitFor(t, "the file to go", func() bool { return !exists(files[0]) })
		require.Len(t, b.admin.callbacks(), 1)
	})
	t.Run("a new executor sends what an old one saved", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		body := `[{"logId":77,"logDateTim":1700000000000,"logDateTime":1700000000000,"handleCode":500,"handleMsg":"x"}]`
		dir := filepath.Join(b.dir, "callbacklogs")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "xxl-job-callback-abc.log"), []byte(body), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "xxl-job-callback-bad.log"), []byte("{"), 0o644))
		require.NoError(t, b.e.Start(context.Background()))
		cb := b.admin.waitCallback(t, 77)
		require.Equal(t, "x", cb.msg())
		require.Equal(t, int64(1700000000000), cb.LogDateTim)
		b.admin.waitFor(t, "files handled", func() bool {
			return !exists(filepath.Join(dir, "xxl-job-callback-abc.log")) &&
				exists(filepath.Join(dir, "xxl-job-callback-bad.log.invalid"))
		})
	})
	t.Run("stop saves what it cannot send", func(t *testing.T) {
		t.Parallel()
		b := setup(t, WithAdminTimeout(time.Second))
		b.e.Register("ok", func(ctx context.Context, job *Job) error { return nil })
		b.admin.setDown(true)
		b.run(t, b.trig(1, 1, "ok"))
		b.admin.waitFor(t, "the run to end", func() bool {
			b.e.mu.Lock()
			defer b.e.mu.Unlock()
			return len(b.e.active) == 0
		})
		require.NoError(t, b.e.Stop(context.Background()))
		files, _ := filepath.Glob(filepath.Join(b.dir, "callbacklogs", "xxl-job-callback-*.log"))
		require.Len(t, files, 1)
	})
}

func TestRetention(t *testing.T) {
	t.Parallel()
	b := setup(t, WithLogRetentionDays(7))
	days := map[string]bool{ // name -> kept after the first clean
		"2024-03-01": false, "2024-03-03": false, "2024-03-04": true, "2024-03-10": true,
		"callbacklogs": true, "not-a-date": true,
	}
	for d := range days {
		require.NoError(t, os.MkdirAll(filepath.Join(b.dir, d), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(b.dir, d, "1.log"), []byte("x\n"), 0o644))
	}
	require.NoError(t, b.e.Start(context.Background()))
	b.admin.waitFor(t, "the first clean", func() bool { return !exists(filepath.Join(b.dir, "2024-03-03")) })
	for d, kept := range days {
		require.Equal(t, kept, exists(filepath.Join(b.dir, d)), d)
	}
	b.advanceUntil(t, time.Hour, "the next day's clean", func() bool { return !exists(filepath.Join(b.dir, "2024-03-04")) })
	require.False(t, b.clock.Now().Before(testStart.Add(24*time.Hour)), "cleaned once a day")
	require.True(t, exists(filepath.Join(b.dir, "2024-03-10")))
	require.True(t, exists(filepath.Join(b.dir, "callbacklogs")))

	t.Run("below 3 days disables it", func(t *testing.T) {
		b := setup(t, WithLogRetentionDays(2))
		old := filepath.Join(b.dir, "2000-01-01")
		require.NoError(t, os.MkdirAll(old, 0o755))
		require.NoError(t, b.e.Start(context.Background()))
		b.admin.waitFor(t, "registry", func() bool { reg, _, _ := b.admin.snapshot(); return len(reg) == 1 })
		require.True(t, exists(old))
		require.False(t, b.e.janitor.Started(), "the cleaner is not started")
	})
}

func TestStop(t *testing.T) {
	t.Parallel()
	t.Run("grace period, then cancel and report", func(t *testing.T) {
		t.Parallel()
		b := setupStarted(t, WithShutdownGrace(5*time.Second))
		g := newGate()
		b.e.Register("block", g.blocking)
		b.run(t, b.trig(1, 1, "block"))
		recv(t, g.started, "the run")
		b.run(t, b.trig(1, 2, "block"))

		stopped := make(chan error, 1)
		go func() { stopped <- b.e.Stop(context.Background()) }()
		b.admin.waitFor(t, "registryRemove", func() bool { _, rm, _ := b.admin.snapshot(); return len(rm) == 1 })
		r := b.post(t, "/run", b.trig(3, 3, "block"))
		require.Equal(t, 500, r.Code)
		require.Equal(t, "executor is stopping, trigger rejected.", r.Msg)
		select {
		case <-g.causes:
			t.Fatal("cancelled before the grace period")
		case <-time.After(20 * time.Millisecond):
		}
		b.advanceUntil(t, time.Second, "the handler to be cancelled", func() bool {
			select {
			case err := <-g.causes:
				require.ErrorIs(t, err, ErrStopping)
				return true
			default:
				return false
			}
		})
		require.NoError(t, recv(t, stopped, "Stop"))
		// Stop returned after the callbacks were sent.
		cb, ok := b.admin.callback(1)
		require.True(t, ok)
		require.Equal(t, "executor is stopping, kill the job. [job running, killed]", cb.msg())
		cb, ok = b.admin.callback(2)
		require.True(t, ok)
		require.Equal(t, "executor is stopping, kill the job. [job not executed, in the job queue, killed.]", cb.msg())
	})
	t.Run("runs that finish within the grace period are reported normally", func(t *testing.T) {
		t.Parallel()
		b := setupStarted(t, WithShutdownGrace(time.Hour))
		g := newGate()
		b.e.Register("block", g.blocking)
		b.run(t, b.trig(1, 1, "block"))
		recv(t, g.started, "the run")
		b.run(t, b.trig(1, 2, "block"))
		stopped := make(chan error, 1)
		go func() { stopped <- b.e.Stop(context.Background()) }()
		close(g.release)
		require.NoError(t, recv(t, stopped, "Stop"))
		require.Equal(t, 200, b.admin.waitCallback(t, 1).HandleCode)
		require.Equal(t, 200, b.admin.waitCallback(t, 2).HandleCode)
	})
	t.Run("a stubborn handler makes Stop give up when ctx ends", func(t *testing.T) {
		t.Parallel()
		b := setupStarted(t)
		g := newGate()
		b.e.Register("stubborn", g.stubborn)
		b.run(t, b.trig(1, 1, "stubborn"))
		recv(t, g.started, "the run")
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := b.e.Stop(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "handlers still running")
		require.Equal(t, 500, b.admin.waitCallback(t, 1).HandleCode)
		close(g.release)
		recv(t, g.ended, "the handler")
	})
}

func TestWorkerIdleExit(t *testing.T) {
	t.Parallel()
	b := setupStarted(t)
	b.e.Register("ok", func(ctx context.Context, job *Job) error { return nil })
	b.run(t, b.trig(1, 1, "ok"))
	b.admin.waitCallback(t, 1)
	workers := func() int {
		b.e.mu.Lock()
		defer b.e.mu.Unlock()
		return len(b.e.workers)
	}
	require.Equal(t, 1, workers())
	b.advanceUntil(t, 10*time.Second, "the worker to retire", func() bool { return workers() == 0 })
	require.GreaterOrEqual(t, b.clock.Since(testStart), 90*time.Second)
	// The job runs again on a new worker.
	b.run(t, b.trig(1, 2, "ok"))
	require.Equal(t, 200, b.admin.waitCallback(t, 2).HandleCode)
}

func TestServe(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	defer admin.srv.Close()
	e, err := New(WithAdminAddresses(admin.URL()), WithAccessToken(testToken), WithAppName(testApp), WithLogDir(t.TempDir()))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	want := fmt.Sprintf("http://%s/", ln.Addr())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Serve(ctx, ln) }()
	admin.waitFor(t, "registry", func() bool { reg, _, _ := admin.snapshot(); return len(reg) == 1 })
	reg, _, _ := admin.snapshot()
	require.Equal(t, want, reg[0]["registryValue"])
	require.Equal(t, want, e.Address())

	b := &bundle{url: strings.TrimSuffix(want, "/"), client: &http.Client{Transport: &http.Transport{}}}
	require.Equal(t, 200, b.post(t, "/beat", nil).Code)
	b.client.CloseIdleConnections()

	cancel()
	require.NoError(t, recv(t, done, "Serve to return"))
	_, removes, problems := admin.snapshot()
	require.Len(t, removes, 1)
	require.Empty(t, problems)
}

func TestDefaultAddress(t *testing.T) {
	t.Parallel()
	require.Equal(t, "http://127.0.0.1:9999/", defaultAddress(&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 9999}))
	require.Equal(t, "http://[::1]:9999/", defaultAddress(&net.TCPAddr{IP: net.ParseIP("::1"), Port: 9999}))
	got := defaultAddress(&net.TCPAddr{IP: net.IPv4zero, Port: 9999})
	require.Regexp(t, `^http://\d+\.\d+\.\d+\.\d+:9999/$`, got)
}

func TestListenAndServeBadAddress(t *testing.T) {
	t.Parallel()
	e, err := New(WithAdminAddresses("http://127.0.0.1:1"), WithAppName("a"), WithAccessToken("t"), WithLogDir(t.TempDir()))
	require.NoError(t, err)
	require.ErrorContains(t, e.ListenAndServe(context.Background(), "256.0.0.1:x"), "listen on 256.0.0.1:x")
	require.NoError(t, e.Stop(context.Background()))
}

// recLogger records the executor's own messages.
type recLogger struct {
	mu   sync.Mutex
	msgs []string
}

func (l *recLogger) Infof(f string, a ...any)  { l.add("INFO " + fmt.Sprintf(f, a...)) }
func (l *recLogger) Errorf(f string, a ...any) { l.add("ERROR " + fmt.Sprintf(f, a...)) }
func (l *recLogger) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, s)
}

func (l *recLogger) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.msgs {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

func TestLoggerAndRetryInterval(t *testing.T) {
	t.Parallel()
	log := &recLogger{}
	b := setupStarted(t, WithLogger(log), WithCallbackRetryInterval(time.Minute), WithHTTPClient(&http.Client{Transport: &http.Transport{}}))
	defer b.e.client.CloseIdleConnections()
	b.admin.waitFor(t, "registered message", func() bool { return log.has("INFO executor: registered " + testApp) })
	b.e.Register("ok", func(ctx context.Context, job *Job) error { return nil })
	b.admin.setDown(true)
	b.run(t, b.trig(1, 1, "ok"))
	b.admin.waitFor(t, "saved message", func() bool { return log.has("1 callbacks saved to") })
	b.admin.setDown(false)
	b.clock.Advance(30 * time.Second) // not yet: the interval is a minute
	b.advanceUntil(t, 10*time.Second, "the resent callback", func() bool { _, ok := b.admin.callback(1); return ok })
	require.GreaterOrEqual(t, b.clock.Since(testStart), time.Minute)
}

func TestLogIDSet(t *testing.T) {
	t.Parallel()
	var s logIDSet
	for i := int64(1); i <= seenLogIDs+5; i++ {
		s.add(i)
	}
	require.False(t, s.has(5), "the oldest are forgotten")
	require.True(t, s.has(6))
	require.True(t, s.has(seenLogIDs+5))
	require.Len(t, s.ids, seenLogIDs)
}

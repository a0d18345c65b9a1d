package integration_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/alarm"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
)

// smtpSink is a minimal SMTP server (RFC 5321: EHLO/HELO, MAIL, RCPT, DATA,
// QUIT) that keeps the messages it receives.
type smtpSink struct {
	ln   net.Listener
	mu   sync.Mutex
	msgs []string
	wg   sync.WaitGroup
}

func newSMTPSink(t *testing.T) *smtpSink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &smtpSink{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *smtpSink) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	say := func(line string) { _, _ = io.WriteString(c, line+"\r\n") }
	say("220 sink ESMTP")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			say("250 sink")
		case strings.HasPrefix(cmd, "MAIL"), strings.HasPrefix(cmd, "RCPT"), strings.HasPrefix(cmd, "RSET"), strings.HasPrefix(cmd, "NOOP"):
			say("250 OK")
		case cmd == "DATA":
			say("354 go on")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(l)
			}
			s.mu.Lock()
			s.msgs = append(s.msgs, b.String())
			s.mu.Unlock()
			say("250 queued")
		case cmd == "QUIT":
			say("221 bye")
			return
		default:
			say("502 not here")
		}
	}
}

func (s *smtpSink) messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}

func TestAlarmsOnFailureAndRecovery(t *testing.T) {
	t.Parallel()
	eachServer(t, testAlarmsOnFailureAndRecovery)
}

func testAlarmsOnFailureAndRecovery(t *testing.T, dialect string) {
	mail := newSMTPSink(t)
	var hookMu sync.Mutex
	var hooks []map[string]any
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		hookMu.Lock()
		hooks = append(hooks, m)
		hookMu.Unlock()
	}))
	defer hook.Close()
	host, port, _ := net.SplitHostPort(mail.ln.Addr().String())
	cfg := alarm.Config{Channels: map[string]alarm.ChannelConfig{
		"oncall-mail": {Type: "email", Host: host, Port: atoi(port), From: "ringjob@example.com", To: []string{"oncall@example.com"}, StartTLS: "off"},
		"oncall-hook": {Type: "webhook", URL: hook.URL + "/hook?token=secret-token-value"},
	}}
	senders, err := alarm.Build(cfg)
	require.NoError(t, err)
	var st *store.Store
	d, err := alarm.NewDispatcher(alarm.Options{Senders: senders, Record: func(ctx context.Context, runID int64, r alarm.Result) error {
		return scheduler.RecordAlarmResult(st)(ctx, runID, r)
	}})
	require.NoError(t, err)
	require.NoError(t, d.Start(context.Background()))
	defer d.Stop()
	s := startServer(t, dialect, func(so *scheduler.Options, svo *service.Options) {
		so.Alarmer = scheduler.DispatcherAlarmer{Dispatcher: d}
		svo.AlarmChannels = d.Channels()
	})
	st = s.st
	ctx := context.Background()

	g := s.groupWith("alarmed", "local://exit")
	job, err := s.svc.CreateJob(ctx, service.JobCreateParams{JobSpec: service.JobSpec{GroupID: g.ID, Name: "nightly", ScheduleType: "none",
		AlarmChannels: []string{"oncall-mail", "oncall-hook"}}})
	require.NoError(t, err)
	_, err = s.svc.CreateJob(ctx, service.JobCreateParams{JobSpec: service.JobSpec{GroupID: g.ID, Name: "bad", AlarmChannels: []string{"nope"}}})
	require.Error(t, err, "a job may name only declared channels")

	failed := s.waitState(s.trigger(job, "3").ID, kind.RunFailed)
	require.Eventually(t, func() bool { r, _ := s.st.RunGet(ctx, failed.ID); return r.AlarmStatus == kind.AlarmSent }, 20*time.Second, 20*time.Millisecond)
	ok := s.waitState(s.trigger(job, "0").ID, kind.RunSucceeded)
	require.Eventually(t, func() bool { return len(mail.messages()) == 2 }, 20*time.Second, 20*time.Millisecond, "failure and recovery mails")
	msgs := mail.messages()
	require.Contains(t, msgs[0], "Subject: [Ringjob] job nightly failed")
	require.Contains(t, msgs[1], "recovered")
	require.Eventually(t, func() bool { hookMu.Lock(); defer hookMu.Unlock(); return len(hooks) == 2 }, 20*time.Second, 20*time.Millisecond)
	hookMu.Lock()
	require.Equal(t, "failure", hooks[0]["kind"])
	require.EqualValues(t, failed.ID, hooks[0]["run_id"])
	require.Equal(t, "recovery", hooks[1]["kind"])
	require.EqualValues(t, ok.ID, hooks[1]["run_id"])
	hookMu.Unlock()
	log, err := s.svc.RunLog(ctx, failed.ID, 1)
	require.NoError(t, err)
	require.Contains(t, log.Content, "failure alarm sent")
	require.NotContains(t, log.Content, "secret-token-value", "alarm records never show secrets")
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

package alarm

import (
	"context"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
)

// senderHarness builds one kind of sender against a real endpoint that
// either accepts (healthy) or answers with a temporary failure.
type senderHarness struct {
	kind string
	make func(t *testing.T, healthy bool) Sender
}

func harnesses() []senderHarness {
	clock := clockwork.NewFakeClockAt(testStart)
	httpSender := func(build func(sink *httpSink) (Sender, error)) func(*testing.T, bool) Sender {
		return func(t *testing.T, healthy bool) Sender {
			sink := newHTTPSink(t)
			if healthy {
				sink.answer(200, `{"errcode":0,"errmsg":"ok","code":0}`)
			} else {
				sink.answer(503, "service unavailable")
				sink.echo = true
			}
			s, err := build(sink)
			require.NoError(t, err)
			return s
		}
	}
	return []senderHarness{
		{"email", func(t *testing.T, healthy bool) Sender {
			var opts []sinkOption
			if !healthy {
				opts = append(opts, withReject("oncall@example.com", "451 4.3.0 try again later"))
			}
			sink := newSMTPSink(t, "", append(opts, withAuth("ringjob", smtpPassword, false))...)
			cfg := sink.emailConfig()
			cfg.Username, cfg.Password = "ringjob", smtpPassword
			s, err := NewEmail(cfg, Deps{Clock: clock})
			require.NoError(t, err)
			return s
		}},
		{"webhook", httpSender(func(sink *httpSink) (Sender, error) {
			return NewWebhook(WebhookConfig{URL: sink.url("/h?token=" + webhookToken), Secret: webhookSecret,
				Headers: map[string]string{"Authorization": bearerToken}}, sink.deps(clock))
		})},
		{"slack", httpSender(func(sink *httpSink) (Sender, error) {
			return NewSlack(SlackConfig{URL: sink.url("/services/T000/B000/" + slackToken)}, sink.deps(clock))
		})},
		{"dingtalk", httpSender(func(sink *httpSink) (Sender, error) {
			return NewDingTalk(DingTalkConfig{URL: sink.url("/robot/send?access_token=" + dingToken), Secret: dingSecret}, sink.deps(clock))
		})},
		{"wecom", httpSender(func(sink *httpSink) (Sender, error) {
			return NewWeCom(WeComConfig{URL: sink.url("/cgi-bin/webhook/send?key=" + wecomKey)}, sink.deps(clock))
		})},
		{"feishu", httpSender(func(sink *httpSink) (Sender, error) {
			return NewFeishu(FeishuConfig{URL: sink.url("/open-apis/bot/v2/hook/" + feishuHook), Secret: feishuSecret}, sink.deps(clock))
		})},
	}
}

// TestSenderConformance runs every sender through the same contract.
func TestSenderConformance(t *testing.T) {
	t.Parallel()
	for _, h := range harnesses() {
		t.Run(h.kind, func(t *testing.T) {
			t.Parallel()

			t.Run("names itself after its kind by default", func(t *testing.T) {
				s := h.make(t, true)
				require.Equal(t, h.kind, s.Name())
				require.Equal(t, h.kind, string(s.(interface{ Kind() kind.AlarmChannel }).Kind()))
			})
			t.Run("a healthy endpoint takes failure and recovery alarms", func(t *testing.T) {
				s := h.make(t, true)
				require.NoError(t, s.Send(ctxT(t), failureEvent()))
				require.NoError(t, s.Send(ctxT(t), recoveryEvent()))
			})
			t.Run("a temporary failure is a retryable error without secrets", func(t *testing.T) {
				s := h.make(t, false)
				err := s.Send(ctxT(t), failureEvent())
				require.Error(t, err)
				require.False(t, IsPermanent(err), "%v", err)
				require.Contains(t, err.Error(), h.kind+` channel "`+h.kind+`"`)
				requireNoSecret(t, err.Error())
			})
			t.Run("a cancelled ctx ends the attempt", func(t *testing.T) {
				s := h.make(t, true)
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				err := s.Send(ctx, failureEvent())
				require.ErrorIs(t, err, context.Canceled)
				requireNoSecret(t, err.Error())
			})
			t.Run("an invalid event is a permanent error", func(t *testing.T) {
				s := h.make(t, true)
				err := s.Send(ctxT(t), Event{Kind: "nope", JobID: 1})
				require.ErrorIs(t, err, ErrInvalidEvent)
				require.True(t, IsPermanent(err))
			})
			t.Run("fmt shows no secret", func(t *testing.T) {
				requireNoSecret(t, printAll(h.make(t, true)))
			})
		})
	}
}

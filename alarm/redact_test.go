package alarm

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", ""},
		{"https://hooks.slack.com/services/T000/B000/" + slackToken, "https://hooks.slack.com/…abcd"},
		{"https://oapi.dingtalk.com/robot/send?access_token=" + dingToken, "https://oapi.dingtalk.com/…cdef"},
		{"https://user:pw@example.com/x?token=0123456789abcdef", "https://example.com/…cdef"},
		{"http://example.com/", "http://example.com/…"},
		{"http://example.com", "http://example.com/…"},
		{dingSecret, "…cdef"},
		{"short-secret", "***"},
		{"日本語のとても長い秘密の合言葉です", "…言葉です"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Redact(tt.in), "Redact(%q)", tt.in)
	}
}

func TestScrubber(t *testing.T) {
	t.Parallel()
	sc := newScrubber([]string{"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=" + wecomKey}, dingSecret)
	in := "failed: key=" + wecomKey + " secret " + dingSecret + " escaped " + url.QueryEscape(wecomKey)
	out := sc.text(in)
	requireNoSecret(t, out)
	require.Equal(t, "failed: …5aaa secret …cdef escaped …5aaa", out)

	t.Run("errors keep their chain and permanence", func(t *testing.T) {
		base := Permanent(fmt.Errorf("post key=%s: %w", wecomKey, context.DeadlineExceeded))
		got := sc.err(base)
		requireNoSecret(t, got.Error())
		require.True(t, IsPermanent(got))
		require.ErrorIs(t, got, context.DeadlineExceeded)
	})
	t.Run("a url.Error is rebuilt without its URL", func(t *testing.T) {
		ue := &url.Error{Op: "Post", URL: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=" + wecomKey, Err: context.Canceled}
		got := sc.err(fmt.Errorf("wecom channel %q: %w", "ops", ue))
		require.Equal(t, `wecom channel "ops": Post "https://qyapi.weixin.qq.com/…5aaa": context canceled`, got.Error())
		var back *url.Error
		require.False(t, errors.As(got, &back), "the URL is not reachable through Unwrap")
		require.ErrorIs(t, got, context.Canceled)
	})
}

// everyConfig holds one config of each type, full of secrets.
func everyConfig() []any {
	return []any{
		EmailConfig{Host: "smtp.example.com", Username: "ringjob", Password: smtpPassword, From: "a@example.com", To: []string{"b@example.com"}},
		WebhookConfig{URL: "https://example.com/hook?token=" + webhookToken, Headers: map[string]string{"Authorization": bearerToken}, Secret: webhookSecret},
		SlackConfig{URL: "https://hooks.slack.com/services/T000/B000/" + slackToken},
		DingTalkConfig{URL: "https://oapi.dingtalk.com/robot/send?access_token=" + dingToken, Secret: dingSecret},
		WeComConfig{URL: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=" + wecomKey},
		FeishuConfig{URL: "https://open.feishu.cn/open-apis/bot/v2/hook/" + feishuHook, Secret: feishuSecret},
	}
}

// printAll formats v with every verb that could reach its fields.
func printAll(v any) string {
	var b strings.Builder
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
		fmt.Fprintf(&b, verb+"\n", v)
		fmt.Fprintf(&b, verb+"\n", &v)
		fmt.Fprintf(&b, verb+"\n", []any{v})
		fmt.Fprintf(&b, verb+"\n", struct{ Inner any }{v})
	}
	return b.String()
}

func TestConfigsDoNotPrintSecrets(t *testing.T) {
	t.Parallel()
	for _, cfg := range everyConfig() {
		t.Run(fmt.Sprintf("%T", cfg), func(t *testing.T) {
			out := printAll(cfg)
			requireNoSecret(t, out)
			require.Contains(t, out, "…", "the redacted form is shown")
		})
	}

	t.Run("Redacted keeps host and tail", func(t *testing.T) {
		c := DingTalkConfig{URL: "https://oapi.dingtalk.com/robot/send?access_token=" + dingToken, Secret: dingSecret}.Redacted()
		require.Equal(t, "https://oapi.dingtalk.com/…cdef", c.URL)
		require.Equal(t, "…cdef", c.Secret)
		require.Equal(t, "DingTalkConfig{Name: URL:https://oapi.dingtalk.com/…cdef Secret:…cdef Timeout:0s}",
			DingTalkConfig{URL: "https://oapi.dingtalk.com/robot/send?access_token=" + dingToken, Secret: dingSecret}.String())
	})

	t.Run("the YAML channel config and the whole section", func(t *testing.T) {
		cfg := Config{Channels: map[string]ChannelConfig{
			"mail":  {Type: kind.AlarmEmail, Host: "smtp.example.com", Username: "u", Password: smtpPassword, From: "a@example.com", To: []string{"b@example.com"}},
			"hook":  {Type: kind.AlarmWebhook, URL: "https://example.com/h?token=" + webhookToken, Secret: webhookSecret, Headers: map[string]string{"Authorization": bearerToken}},
			"ding":  {Type: kind.AlarmDingTalk, URL: "https://oapi.dingtalk.com/robot/send?access_token=" + dingToken, Secret: dingSecret},
			"slack": {Type: kind.AlarmSlack, URL: "https://hooks.slack.com/services/T000/B000/" + slackToken},
		}}
		out := printAll(cfg) + printAll(cfg.Channels) + printAll(cfg.Channels["hook"])
		requireNoSecret(t, out)
		require.Contains(t, cfg.Channels["ding"].String(), "ChannelConfig{type:dingtalk url:https://oapi.dingtalk.com/…cdef secret:…cdef}")
	})
}

func TestSendersDoNotPrintSecrets(t *testing.T) {
	t.Parallel()
	senders, err := Build(Config{Channels: map[string]ChannelConfig{
		"mail":   {Type: kind.AlarmEmail, Host: "smtp.example.com", Username: "u", Password: smtpPassword, From: "a@example.com", To: []string{"b@example.com"}},
		"hook":   {Type: kind.AlarmWebhook, URL: "https://example.com/h?token=" + webhookToken, Secret: webhookSecret, Headers: map[string]string{"Authorization": bearerToken}},
		"slack":  {Type: kind.AlarmSlack, URL: "https://hooks.slack.com/services/T000/B000/" + slackToken},
		"ding":   {Type: kind.AlarmDingTalk, URL: "https://oapi.dingtalk.com/robot/send?access_token=" + dingToken, Secret: dingSecret},
		"wecom":  {Type: kind.AlarmWeCom, URL: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=" + wecomKey},
		"feishu": {Type: kind.AlarmFeishu, URL: "https://open.feishu.cn/open-apis/bot/v2/hook/" + feishuHook, Secret: feishuSecret},
	}})
	require.NoError(t, err)
	require.Len(t, senders, 6)
	for _, s := range senders {
		out := printAll(s)
		requireNoSecret(t, out)
	}
	d, err := NewDispatcher(Options{Senders: senders})
	require.NoError(t, err)
	requireNoSecret(t, printAll(d))
}

// TestSecretsStayOutOfLogs runs real senders against endpoints that fail
// and echo what they were sent, through a dispatcher, and reads every log
// line and recorded error.
func TestSecretsStayOutOfLogs(t *testing.T) {
	t.Parallel()
	sink := newHTTPSink(t)
	sink.answer(500, "internal error:")
	sink.echo = true
	clock := clockwork.NewFakeClockAt(testStart)
	deps := sink.deps(clock)
	senders, err := BuildWith(Config{Channels: map[string]ChannelConfig{
		"slack":  {Type: kind.AlarmSlack, URL: sink.url("/services/T000/B000/" + slackToken)},
		"ding":   {Type: kind.AlarmDingTalk, URL: sink.url("/robot/send?access_token=" + dingToken), Secret: dingSecret},
		"wecom":  {Type: kind.AlarmWeCom, URL: sink.url("/cgi-bin/webhook/send?key=" + wecomKey)},
		"feishu": {Type: kind.AlarmFeishu, URL: sink.url("/open-apis/bot/v2/hook/" + feishuHook), Secret: feishuSecret},
		"hook":   {Type: kind.AlarmWebhook, URL: sink.url("/h?token=" + webhookToken), Secret: webhookSecret, Headers: map[string]string{"Authorization": bearerToken}},
	}}, deps)
	require.NoError(t, err)

	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	records := make(chan Result, 1)
	d, err := NewDispatcher(Options{Senders: senders, Clock: clock, Log: logrus.NewEntry(logger), MaxAttempts: 2,
		Record: func(_ context.Context, _ int64, r Result) error { records <- r; return nil }})
	require.NoError(t, err)
	require.NoError(t, d.Start(context.Background()))
	defer d.Stop()

	require.True(t, d.Enqueue(failureEvent(), d.Channels()))
	eventually(t, func() bool { return d.Stats().AttemptErrors == 5 }) // all five first attempts failed
	// Every retry is due after DefaultBackoffMax. The owner may arm its
	// timer for the last failure after the counter moved, so advance again
	// until the result arrives rather than racing it: with MaxAttempts 2 an
	// extra advance finds nothing more to do.
	var res Result
	deadline := time.After(waitLimit)
wait:
	for {
		clock.Advance(DefaultBackoffMax)
		select {
		case res = <-records:
			break wait
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("no result was recorded")
		}
	}
	require.Equal(t, StatusFailed, res.Status)
	require.Len(t, res.Attempts, 10)

	var all strings.Builder
	for _, a := range res.Attempts {
		require.Contains(t, a.Err, "HTTP 500: internal error: you sent /")
		all.WriteString(a.Err + "\n")
	}
	for _, e := range hook.AllEntries() {
		line, err := e.String()
		require.NoError(t, err)
		all.WriteString(line)
	}
	require.Contains(t, all.String(), "giving up")
	requireNoSecret(t, all.String())
}

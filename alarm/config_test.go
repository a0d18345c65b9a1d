package alarm

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/ringjob/ringjob/internal/kind"
)

// docYAML extracts the YAML example from doc.go, so the documented shape is
// the tested one.
func docYAML(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	var b strings.Builder
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		body, isDoc := strings.CutPrefix(line, "//\t")
		switch {
		case isDoc && strings.HasPrefix(body, "alarms:"):
			in = true
		case in && !isDoc:
			return b.String()
		}
		if in {
			b.WriteString(body + "\n")
		}
	}
	t.Fatal("no YAML example in doc.go")
	return ""
}

func TestBuildFromDocumentedYAML(t *testing.T) {
	t.Parallel()
	var file struct {
		Alarms Config `yaml:"alarms"`
	}
	dec := yaml.NewDecoder(strings.NewReader(docYAML(t)))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&file))
	cfg := file.Alarms
	require.NoError(t, cfg.Validate())

	senders, err := Build(cfg)
	require.NoError(t, err)
	var names, kinds []string
	for _, s := range senders {
		names = append(names, s.Name())
		kinds = append(kinds, string(s.(interface{ Kind() kind.AlarmChannel }).Kind()))
	}
	require.Equal(t, []string{"oncall-mail", "oncall-slack", "ops-dingtalk", "ops-feishu", "ops-wecom", "pager"}, names)
	require.Equal(t, []string{"email", "slack", "dingtalk", "feishu", "wecom", "webhook"}, kinds)

	mail := senders[0].(*Email)
	require.Equal(t, []string{"oncall@example.com", "team@example.com"}, mail.Recipients())
	require.Equal(t, 587, mail.cfg.Port)
	require.True(t, mail.cfg.HTML)

	opts := cfg.Options()
	require.Equal(t, 5, opts.MaxAttempts)
	require.Equal(t, time.Second, opts.BackoffBase)
	require.Equal(t, 5*time.Minute, opts.BackoffMax)
	opts.Senders = senders
	d, err := NewDispatcher(opts)
	require.NoError(t, err)
	require.Equal(t, names, d.Channels())
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	slack := ChannelConfig{Type: kind.AlarmSlack, URL: "https://hooks.slack.com/services/T000/B000/" + slackToken}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown type", Config{Channels: map[string]ChannelConfig{"x": {Type: "teams", URL: "https://x"}}},
			`alarms.channels.x: invalid alarm config: type must be one of email, webhook, slack, dingtalk, wecom, feishu, got "teams"`},
		{"a field the type does not use", Config{Channels: map[string]ChannelConfig{"oncall": {Type: kind.AlarmSlack, URL: slack.URL, Secret: dingSecret}}},
			"alarms.channels.oncall: invalid alarm config: secret is not a field of type slack (it uses url, timeout)"},
		{"missing url", Config{Channels: map[string]ChannelConfig{"ding": {Type: kind.AlarmDingTalk}}},
			"alarms.channels.ding: invalid alarm config: dingtalk.url is required"},
		{"email without recipients", Config{Channels: map[string]ChannelConfig{"mail": {Type: kind.AlarmEmail, Host: "smtp.example.com", From: "a@example.com"}}},
			"alarms.channels.mail: invalid alarm config: email.to needs at least one recipient"},
		{"bad channel name", Config{Channels: map[string]ChannelConfig{"on call": slack}},
			`alarms.channels: name "on call" must be 1-64 letters`},
		{"negative tuning", Config{MaxAttempts: -1},
			"alarms.max_attempts must not be negative, got -1"},
		{"a bad URL is shown redacted", Config{Channels: map[string]ChannelConfig{"s": {Type: kind.AlarmSlack, URL: "hooks.slack.com/services/" + slackToken}}},
			`alarms.channels.s: invalid alarm config: slack.url must be an http:// or https:// URL, got "…abcd"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			require.ErrorIs(t, err, ErrInvalidConfig)
			require.ErrorContains(t, err, tt.want)
			requireNoSecret(t, err.Error())
			_, err = Build(tt.cfg)
			require.ErrorContains(t, err, tt.want)
		})
	}

	t.Run("every problem is reported", func(t *testing.T) {
		err := Config{Channels: map[string]ChannelConfig{"a": {Type: kind.AlarmSlack}, "b": {Type: kind.AlarmWeCom}}}.Validate()
		require.Len(t, regexp.MustCompile(`alarms\.channels\.[ab]:`).FindAllString(err.Error(), -1), 2)
	})
	t.Run("no channels is valid", func(t *testing.T) {
		senders, err := Build(Config{})
		require.NoError(t, err)
		require.Empty(t, senders)
	})
}

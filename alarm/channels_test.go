package alarm

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
)

// Describe says where each channel sends without its secrets; SendTest
// refuses a channel that does not exist; a test alarm says it is one and
// names no job.
func TestDescribeAndTestEvent(t *testing.T) {
	t.Parallel()
	senders, err := Build(Config{Channels: map[string]ChannelConfig{
		"ops":  {Type: kind.AlarmSlack, URL: "https://hooks.slack.com/services/T000/B000/SECRETSECRETSECRET"},
		"mail": {Type: kind.AlarmEmail, Host: "smtp.example.com", From: "ringjob@example.com", To: []string{"a@example.com", "B@example.com", "a@EXAMPLE.com"}, Password: "pw-secret-0123456789", Username: "u"},
	}})
	require.NoError(t, err)
	d, err := NewDispatcher(Options{Senders: senders})
	require.NoError(t, err)
	require.Equal(t, []ChannelInfo{
		{Name: "mail", Kind: kind.AlarmEmail, Destination: "smtp://smtp.example.com:587 to a@example.com, B@example.com"},
		{Name: "ops", Kind: kind.AlarmSlack, Destination: "https://hooks.slack.com"},
	}, d.Describe())

	err = d.SendTest(context.Background(), "nope", TestEvent("nope", "user:alice", time.Now()))
	require.ErrorIs(t, err, ErrUnknownChannel)

	ev := TestEvent("ops", "user:alice", time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC))
	require.NoError(t, ev.Validate())
	require.Equal(t, "[Ringjob] TEST alarm (no job failed)", Subject(ev))
	text := PlainText(ev, MaxMessageRunes)
	require.Contains(t, text, "TEST alarm")
	require.Contains(t, text, `sent by user:alice to check the alarm channel "ops"`)
	require.Contains(t, text, "2026-11-23T18:00:00Z")
	require.NotContains(t, text, "#0", "a test alarm names no job or run")
	require.Contains(t, slackText(ev), ":test_tube: *[Ringjob] TEST alarm")
	require.Contains(t, markdown(ev, verb(ev)), "### [Ringjob] TEST alarm")
}

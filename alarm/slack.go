package alarm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
)

// SlackConfig configures a Slack incoming webhook
// (https://api.slack.com/messaging/webhooks): a JSON POST of {"text": ...}
// in Slack's mrkdwn. Slack answers 200 "ok"; errors come back as HTTP
// statuses with a short reason (400 invalid_payload, 403 action_prohibited,
// 404 channel_not_found, 410 channel_is_archived).
type SlackConfig struct {
	// Name is the channel name jobs refer to (default "slack").
	Name string `yaml:"name"`
	// URL is the webhook, https://hooks.slack.com/services/T.../B.../...
	// It is a secret: it is shown only redacted.
	URL string `yaml:"url"`
	// Timeout bounds one attempt (default 10s).
	Timeout time.Duration `yaml:"timeout"`
}

// Validate reports the first invalid field.
func (c SlackConfig) Validate() error {
	if err := checkHTTPURL("slack.url", c.URL); err != nil {
		return err
	}
	return checkTimeout("slack.timeout", c.Timeout)
}

// Redacted returns a copy that is safe to show, with the URL redacted.
func (c SlackConfig) Redacted() SlackConfig {
	c.URL = Redact(c.URL)
	return c
}

// String describes the config without its secrets.
func (c SlackConfig) String() string {
	type plain SlackConfig
	return fmt.Sprintf("SlackConfig%+v", plain(c.Redacted()))
}

// Format makes every fmt verb print String.
func (c SlackConfig) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c.String()) }

// Slack posts alarms to a Slack incoming webhook.
type Slack struct {
	// The state sits behind a second pointer: fmt, when it prints a value
	// whose methods it cannot call (an unexported field, a bad verb),
	// dereferences one pointer, and would show a URL or password; here it
	// shows an address.
	*slackState
}

// slackState is what a Slack holds.
type slackState struct {
	cfg SlackConfig
	p   poster
}

// NewSlack validates cfg and returns the sender.
func NewSlack(cfg SlackConfig, deps Deps) (*Slack, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Name = orDefault(cfg.Name, "slack")
	return &Slack{&slackState{cfg: cfg, p: newPoster("slack", cfg.Name, cfg.URL, cfg.Timeout, deps)}}, nil
}

// Name is the channel name.
func (s *Slack) Name() string { return s.cfg.Name }

// Kind is "slack".
func (s *Slack) Kind() kind.AlarmChannel { return kind.AlarmSlack }

// String describes the sender without its secrets.
func (s *Slack) String() string { return "alarm.Slack(" + s.cfg.String() + ")" }

// Format makes every fmt verb print String.
func (s *Slack) Format(f fmt.State, verb rune) { formatRedacted(f, verb, s.String()) }

// Send posts one message; any 2xx is a success.
func (s *Slack) Send(ctx context.Context, ev Event) error {
	if err := ev.Validate(); err != nil {
		return Permanent(err)
	}
	body, err := marshal(map[string]string{"text": slackText(ev)})
	if err != nil {
		return Permanent(fmt.Errorf("slack channel %q: encode message: %w", s.cfg.Name, err))
	}
	_, _, err = s.p.post(ctx, s.cfg.URL, body, nil)
	return err
}

// slackEscape escapes the three characters Slack's mrkdwn treats as control
// characters (https://api.slack.com/reference/surfaces/formatting#escaping).
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// slackText renders an alarm in Slack mrkdwn.
func slackText(ev Event) string {
	var b strings.Builder
	icon := ":rotating_light:"
	switch ev.Kind {
	case kind.AlarmRecovery:
		icon = ":white_check_mark:"
	case kind.AlarmTest:
		icon = ":test_tube:"
	}
	fmt.Fprintf(&b, "%s *%s*\n", icon, slackEscape.Replace(Subject(ev)))
	for _, f := range fields(ev) {
		fmt.Fprintf(&b, "*%s:* %s\n", f.label, slackEscape.Replace(f.value))
	}
	if msg := strings.TrimSpace(ev.Message); msg != "" {
		msg = strings.ReplaceAll(truncate(msg, MaxChatMessageRunes), "```", "'''")
		fmt.Fprintf(&b, "```%s```\n", slackEscape.Replace(msg))
	}
	if link := oneLine(ev.ConsoleURL); link != "" {
		// In a <url|label> link only | and > would break the syntax.
		link = strings.NewReplacer("|", "%7C", ">", "%3E", "<", "%3C").Replace(link)
		fmt.Fprintf(&b, "<%s|Open run #%d>\n", link, ev.RunID)
	}
	return strings.TrimRight(b.String(), "\n")
}

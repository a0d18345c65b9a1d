package alarm

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
)

// SignatureHeader carries the generic webhook's body signature when a secret
// is configured: "sha256=" + hex(HmacSHA256(key=secret, msg=body)), the
// scheme GitHub uses for X-Hub-Signature-256. Receivers should compare in
// constant time.
const SignatureHeader = "X-Ringjob-Signature"

// WebhookConfig configures the generic webhook: a JSON POST of the event
// (see WebhookPayload) to any URL. Any 2xx answer is a success.
type WebhookConfig struct {
	// Name is the channel name jobs refer to (default "webhook").
	Name string `yaml:"name"`
	// URL receives the POST. It may hold a token, so it is treated as a
	// secret and shown only redacted.
	URL string `yaml:"url"`
	// Headers are added to every request (for example Authorization). Their
	// values are treated as secrets.
	Headers map[string]string `yaml:"headers"`
	// Secret, when set, signs each body into the X-Ringjob-Signature header.
	Secret string `yaml:"secret"`
	// Timeout bounds one attempt (default 10s).
	Timeout time.Duration `yaml:"timeout"`
}

// reservedHeaders are set by the sender and cannot be configured.
var reservedHeaders = []string{"Content-Length", "Host", "Transfer-Encoding", "Connection", SignatureHeader}

// Validate reports the first invalid field.
func (c WebhookConfig) Validate() error {
	if err := checkHTTPURL("webhook.url", c.URL); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
		if !validHeaderName(k) {
			return fmt.Errorf("%w: webhook.headers: %q is not a valid header name", ErrInvalidConfig, k)
		}
		for _, r := range reservedHeaders {
			if strings.EqualFold(k, r) {
				return fmt.Errorf("%w: webhook.headers: %s is set by Ringjob and cannot be configured", ErrInvalidConfig, r)
			}
		}
		if strings.ContainsAny(c.Headers[k], "\r\n\x00") {
			return fmt.Errorf("%w: webhook.headers.%s must be one line", ErrInvalidConfig, k)
		}
	}
	return checkTimeout("webhook.timeout", c.Timeout)
}

// validHeaderName accepts an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r >= 0x7f || r <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return true
}

// Redacted returns a copy that is safe to show: URL, Secret and header
// values redacted.
func (c WebhookConfig) Redacted() WebhookConfig {
	c.URL, c.Secret = Redact(c.URL), Redact(c.Secret)
	if c.Headers != nil {
		h := make(map[string]string, len(c.Headers))
		for k, v := range c.Headers {
			h[k] = Redact(v)
		}
		c.Headers = h
	}
	return c
}

// String describes the config without its secrets.
func (c WebhookConfig) String() string {
	type plain WebhookConfig
	return fmt.Sprintf("WebhookConfig%+v", plain(c.Redacted()))
}

// Format makes every fmt verb print String.
func (c WebhookConfig) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c.String()) }

// WebhookPayload is the JSON body of the generic webhook. Times are RFC 3339
// and left out when unknown. Text is the alarm as plain text, so chat tools
// that read a "text" field (Mattermost, Rocket.Chat, Google Chat) can take
// the payload as it is.
type WebhookPayload struct {
	Kind        kind.AlarmEvent `json:"kind"` // failure, recovery or test
	JobID       int64           `json:"job_id"`
	JobName     string          `json:"job_name"`
	GroupName   string          `json:"group_name"`
	RunID       int64           `json:"run_id"`
	State       kind.RunState   `json:"state"`
	Code        int             `json:"code"`
	Message     string          `json:"message"` // at most MaxMessageRunes runes
	Attempt     int             `json:"attempt"`
	ScheduledAt string          `json:"scheduled_at,omitempty"`
	FinishedAt  string          `json:"finished_at,omitempty"`
	ConsoleURL  string          `json:"console_url,omitempty"`
	Subject     string          `json:"subject"`
	Text        string          `json:"text"`
}

// NewWebhookPayload is the body the generic webhook sends for ev.
func NewWebhookPayload(ev Event) WebhookPayload {
	rfc := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Format(time.RFC3339Nano)
	}
	return WebhookPayload{
		Kind: ev.Kind, JobID: ev.JobID, JobName: ev.JobName, GroupName: ev.GroupName,
		RunID: ev.RunID, State: ev.State, Code: ev.Code,
		Message: truncate(ev.Message, MaxMessageRunes), Attempt: ev.Attempt,
		ScheduledAt: rfc(ev.ScheduledAt), FinishedAt: rfc(ev.FinishedAt), ConsoleURL: ev.ConsoleURL,
		Subject: Subject(ev), Text: PlainText(ev, MaxChatMessageRunes),
	}
}

// WebhookSign is the value of X-Ringjob-Signature for body.
func WebhookSign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Webhook posts alarms as JSON to any URL.
type Webhook struct {
	// The state sits behind a second pointer: fmt, when it prints a value
	// whose methods it cannot call (an unexported field, a bad verb),
	// dereferences one pointer, and would show a URL or password; here it
	// shows an address.
	*webhookState
}

// webhookState is what a Webhook holds.
type webhookState struct {
	cfg WebhookConfig
	p   poster
}

// NewWebhook validates cfg and returns the sender.
func NewWebhook(cfg WebhookConfig, deps Deps) (*Webhook, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Name = orDefault(cfg.Name, "webhook")
	secrets := []string{cfg.Secret}
	for _, v := range cfg.Headers {
		secrets = append(secrets, v)
	}
	return &Webhook{&webhookState{cfg: cfg, p: newPoster("webhook", cfg.Name, cfg.URL, cfg.Timeout, deps, secrets...)}}, nil
}

// Name is the channel name.
func (w *Webhook) Name() string { return w.cfg.Name }

// Kind is "webhook".
func (w *Webhook) Kind() kind.AlarmChannel { return kind.AlarmWebhook }

// String describes the sender without its secrets.
func (w *Webhook) String() string { return "alarm.Webhook(" + w.cfg.String() + ")" }

// Format makes every fmt verb print String.
func (w *Webhook) Format(f fmt.State, verb rune) { formatRedacted(f, verb, w.String()) }

// Send posts the event. Besides the configured headers each request carries
// X-Ringjob-Event (the kind), an Idempotency-Key that stays the same across
// retries of one alarm, and the signature when a secret is set.
func (w *Webhook) Send(ctx context.Context, ev Event) error {
	if err := ev.Validate(); err != nil {
		return Permanent(err)
	}
	body, err := marshal(NewWebhookPayload(ev))
	if err != nil {
		return Permanent(fmt.Errorf("webhook channel %q: encode event: %w", w.cfg.Name, err))
	}
	h := http.Header{}
	for k, v := range w.cfg.Headers {
		h.Set(k, v)
	}
	h.Set("X-Ringjob-Event", string(ev.Kind))
	key := "ringjob-alarm-" + strconv.FormatInt(ev.JobID, 10) + "-" + strconv.FormatInt(ev.RunID, 10) + "-" + string(ev.Kind)
	if ev.Kind == kind.AlarmTest {
		key = "ringjob-alarm-test-" + strconv.FormatInt(ev.FinishedAt.UnixNano(), 10) // each test is its own alarm
	}
	h.Set("Idempotency-Key", key)
	if w.cfg.Secret != "" {
		h.Set(SignatureHeader, WebhookSign(w.cfg.Secret, body))
	}
	_, _, err = w.p.post(ctx, w.cfg.URL, body, h)
	return err
}

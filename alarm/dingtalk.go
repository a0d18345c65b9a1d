package alarm

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/ringjob/ringjob/internal/kind"
)

// DingTalkConfig configures a DingTalk custom group robot (自定义机器人),
// https://open.dingtalk.com/document/orgapp/custom-robot-access.
//
// The message is {"msgtype":"markdown","markdown":{"title":...,"text":...}}.
// DingTalk answers HTTP 200 with {"errcode":0,"errmsg":"ok"}; a nonzero
// errcode (310000: keyword, signature or IP check failed; 130101: sending too
// fast) is a failure. A robot secured by keyword must use "Ringjob", which
// every alarm contains.
type DingTalkConfig struct {
	// Name is the channel name jobs refer to (default "dingtalk").
	Name string `yaml:"name"`
	// URL is the robot webhook,
	// https://oapi.dingtalk.com/robot/send?access_token=... A secret.
	URL string `yaml:"url"`
	// Secret is the robot's signing secret (加签, starts with "SEC"). When
	// set, every request carries timestamp and sign query parameters. A
	// secret.
	Secret string `yaml:"secret"`
	// Timeout bounds one attempt (default 10s).
	Timeout time.Duration `yaml:"timeout"`
}

// Validate reports the first invalid field.
func (c DingTalkConfig) Validate() error {
	if err := checkHTTPURL("dingtalk.url", c.URL); err != nil {
		return err
	}
	return checkTimeout("dingtalk.timeout", c.Timeout)
}

// Redacted returns a copy that is safe to show, with URL and Secret redacted.
func (c DingTalkConfig) Redacted() DingTalkConfig {
	c.URL, c.Secret = Redact(c.URL), Redact(c.Secret)
	return c
}

// String describes the config without its secrets.
func (c DingTalkConfig) String() string {
	type plain DingTalkConfig
	return fmt.Sprintf("DingTalkConfig%+v", plain(c.Redacted()))
}

// Format makes every fmt verb print String.
func (c DingTalkConfig) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c.String()) }

// DingTalk posts alarms to a DingTalk group robot.
type DingTalk struct {
	// The state sits behind a second pointer: fmt, when it prints a value
	// whose methods it cannot call (an unexported field, a bad verb),
	// dereferences one pointer, and would show a URL or password; here it
	// shows an address.
	*dingTalkState
}

// dingTalkState is what a DingTalk holds.
type dingTalkState struct {
	cfg   DingTalkConfig
	p     poster
	clock clockwork.Clock
}

// NewDingTalk validates cfg and returns the sender.
func NewDingTalk(cfg DingTalkConfig, deps Deps) (*DingTalk, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Name = orDefault(cfg.Name, "dingtalk")
	return &DingTalk{&dingTalkState{cfg: cfg, clock: deps.clock(),
		p: newPoster("dingtalk", cfg.Name, cfg.URL, cfg.Timeout, deps, cfg.Secret)}}, nil
}

// Name is the channel name.
func (d *DingTalk) Name() string { return d.cfg.Name }

// Kind is "dingtalk".
func (d *DingTalk) Kind() kind.AlarmChannel { return kind.AlarmDingTalk }

// String describes the sender without its secrets.
func (d *DingTalk) String() string { return "alarm.DingTalk(" + d.cfg.String() + ")" }

// Format makes every fmt verb print String.
func (d *DingTalk) Format(f fmt.State, verb rune) { formatRedacted(f, verb, d.String()) }

// Send posts one markdown message and checks errcode.
func (d *DingTalk) Send(ctx context.Context, ev Event) error {
	if err := ev.Validate(); err != nil {
		return Permanent(err)
	}
	msg := map[string]any{
		"msgtype": "markdown",
		"markdown": map[string]string{
			"title": Subject(ev),
			"text":  markdown(ev, verb(ev)),
		},
	}
	body, err := marshal(msg)
	if err != nil {
		return Permanent(fmt.Errorf("dingtalk channel %q: encode message: %w", d.cfg.Name, err))
	}
	target := d.cfg.URL
	if d.cfg.Secret != "" {
		u, err := url.Parse(d.cfg.URL) // validated
		if err != nil {
			return Permanent(fmt.Errorf("dingtalk channel %q: parse url: %w", d.cfg.Name, err))
		}
		ts := strconv.FormatInt(d.clock.Now().UnixMilli(), 10)
		q := u.Query()
		q.Set("timestamp", ts)
		q.Set("sign", DingTalkSign(d.cfg.Secret, ts))
		u.RawQuery = q.Encode() // URL-encodes the base64 signature
		target = u.String()
	}
	status, resp, err := d.p.post(ctx, target, body, nil)
	if err != nil {
		return err
	}
	return errcodeCheck(d.p, status, resp)
}

// DingTalkSign is DingTalk's robot signature before URL encoding:
// Base64(HmacSHA256(key=secret, msg=timestamp+"\n"+secret)), where timestamp
// is in milliseconds and must be within an hour of DingTalk's clock
// (https://open.dingtalk.com/document/orgapp/customize-robot-security-settings).
func DingTalkSign(secret, timestampMillis string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestampMillis + "\n" + secret))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

package alarm

import (
	"context"
	"fmt"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
)

// maxWeComBytes is WeCom's limit on a markdown message's content.
const maxWeComBytes = 4096

// WeComConfig configures a WeCom (企业微信) group robot,
// https://developer.work.weixin.qq.com/document/path/91770.
//
// The message is {"msgtype":"markdown","markdown":{"content":...}}, at most
// 4096 bytes. WeCom answers HTTP 200 with {"errcode":0,"errmsg":"ok"}; a
// nonzero errcode (93000: invalid webhook key; 45009: sending too fast) is a
// failure.
type WeComConfig struct {
	// Name is the channel name jobs refer to (default "wecom").
	Name string `yaml:"name"`
	// URL is the robot webhook,
	// https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=... A secret.
	URL string `yaml:"url"`
	// Timeout bounds one attempt (default 10s).
	Timeout time.Duration `yaml:"timeout"`
}

// Validate reports the first invalid field.
func (c WeComConfig) Validate() error {
	if err := checkHTTPURL("wecom.url", c.URL); err != nil {
		return err
	}
	return checkTimeout("wecom.timeout", c.Timeout)
}

// Redacted returns a copy that is safe to show, with the URL redacted.
func (c WeComConfig) Redacted() WeComConfig {
	c.URL = Redact(c.URL)
	return c
}

// String describes the config without its secrets.
func (c WeComConfig) String() string {
	type plain WeComConfig
	return fmt.Sprintf("WeComConfig%+v", plain(c.Redacted()))
}

// Format makes every fmt verb print String.
func (c WeComConfig) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c.String()) }

// WeCom posts alarms to a WeCom group robot.
type WeCom struct {
	// The state sits behind a second pointer: fmt, when it prints a value
	// whose methods it cannot call (an unexported field, a bad verb),
	// dereferences one pointer, and would show a URL or password; here it
	// shows an address.
	*weComState
}

// weComState is what a WeCom holds.
type weComState struct {
	cfg WeComConfig
	p   poster
}

// NewWeCom validates cfg and returns the sender.
func NewWeCom(cfg WeComConfig, deps Deps) (*WeCom, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Name = orDefault(cfg.Name, "wecom")
	return &WeCom{&weComState{cfg: cfg, p: newPoster("wecom", cfg.Name, cfg.URL, cfg.Timeout, deps)}}, nil
}

// Name is the channel name.
func (w *WeCom) Name() string { return w.cfg.Name }

// Kind is "wecom".
func (w *WeCom) Kind() kind.AlarmChannel { return kind.AlarmWeCom }

// String describes the sender without its secrets.
func (w *WeCom) String() string { return "alarm.WeCom(" + w.cfg.String() + ")" }

// Format makes every fmt verb print String.
func (w *WeCom) Format(f fmt.State, verb rune) { formatRedacted(f, verb, w.String()) }

// Send posts one markdown message and checks errcode.
func (w *WeCom) Send(ctx context.Context, ev Event) error {
	if err := ev.Validate(); err != nil {
		return Permanent(err)
	}
	// WeCom colours three names: info (green), comment (grey), warning (orange-red).
	status := `<font color="warning">failed</font>`
	switch ev.Kind {
	case kind.AlarmRecovery:
		status = `<font color="info">recovered</font>`
	case kind.AlarmTest:
		status = `<font color="comment">test</font>`
	}
	msg := map[string]any{
		"msgtype":  "markdown",
		"markdown": map[string]string{"content": truncateBytes(markdown(ev, status), maxWeComBytes)},
	}
	body, err := marshal(msg)
	if err != nil {
		return Permanent(fmt.Errorf("wecom channel %q: encode message: %w", w.cfg.Name, err))
	}
	httpStatus, resp, err := w.p.post(ctx, w.cfg.URL, body, nil)
	if err != nil {
		return err
	}
	return errcodeCheck(w.p, httpStatus, resp)
}

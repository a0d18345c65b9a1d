package alarm

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/ringjob/ringjob/internal/kind"
)

// FeishuConfig configures a Feishu / Lark custom bot (自定义机器人),
// https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot.
//
// The message is {"msg_type":"text","content":{"text":...}}; with a secret
// the body also carries "timestamp" (seconds, as a string) and "sign". Feishu
// answers {"code":0,"msg":"success"} (older deployments:
// {"StatusCode":0,"StatusMessage":"success"}); a nonzero code (19021: bad
// signature or timestamp; 19024: keyword check failed) is a failure.
type FeishuConfig struct {
	// Name is the channel name jobs refer to (default "feishu").
	Name string `yaml:"name"`
	// URL is the bot webhook,
	// https://open.feishu.cn/open-apis/bot/v2/hook/... (Lark:
	// https://open.larksuite.com/open-apis/bot/v2/hook/...). A secret.
	URL string `yaml:"url"`
	// Secret is the bot's signature-verification secret (签名校验). A secret.
	Secret string `yaml:"secret"`
	// Timeout bounds one attempt (default 10s).
	Timeout time.Duration `yaml:"timeout"`
}

// Validate reports the first invalid field.
func (c FeishuConfig) Validate() error {
	if err := checkHTTPURL("feishu.url", c.URL); err != nil {
		return err
	}
	return checkTimeout("feishu.timeout", c.Timeout)
}

// Redacted returns a copy that is safe to show, with URL and Secret redacted.
func (c FeishuConfig) Redacted() FeishuConfig {
	c.URL, c.Secret = Redact(c.URL), Redact(c.Secret)
	return c
}

// String describes the config without its secrets.
func (c FeishuConfig) String() string {
	type plain FeishuConfig
	return fmt.Sprintf("FeishuConfig%+v", plain(c.Redacted()))
}

// Format makes every fmt verb print String.
func (c FeishuConfig) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c.String()) }

// Feishu posts alarms to a Feishu / Lark custom bot.
type Feishu struct {
	// The state sits behind a second pointer: fmt, when it prints a value
	// whose methods it cannot call (an unexported field, a bad verb),
	// dereferences one pointer, and would show a URL or password; here it
	// shows an address.
	*feishuState
}

// feishuState is what a Feishu holds.
type feishuState struct {
	cfg   FeishuConfig
	p     poster
	clock clockwork.Clock
}

// NewFeishu validates cfg and returns the sender.
func NewFeishu(cfg FeishuConfig, deps Deps) (*Feishu, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Name = orDefault(cfg.Name, "feishu")
	return &Feishu{&feishuState{cfg: cfg, clock: deps.clock(),
		p: newPoster("feishu", cfg.Name, cfg.URL, cfg.Timeout, deps, cfg.Secret)}}, nil
}

// Name is the channel name.
func (f *Feishu) Name() string { return f.cfg.Name }

// Kind is "feishu".
func (f *Feishu) Kind() kind.AlarmChannel { return kind.AlarmFeishu }

// String describes the sender without its secrets.
func (f *Feishu) String() string { return "alarm.Feishu(" + f.cfg.String() + ")" }

// Format makes every fmt verb print String.
func (f *Feishu) Format(s fmt.State, verb rune) { formatRedacted(s, verb, f.String()) }

// feishuMessage is the custom bot's request body.
type feishuMessage struct {
	Timestamp string            `json:"timestamp,omitempty"`
	Sign      string            `json:"sign,omitempty"`
	MsgType   string            `json:"msg_type"`
	Content   map[string]string `json:"content"`
}

// Send posts one text message and checks the answer's code.
func (f *Feishu) Send(ctx context.Context, ev Event) error {
	if err := ev.Validate(); err != nil {
		return Permanent(err)
	}
	msg := feishuMessage{MsgType: "text", Content: map[string]string{"text": PlainText(ev, MaxChatMessageRunes)}}
	if f.cfg.Secret != "" {
		msg.Timestamp = strconv.FormatInt(f.clock.Now().Unix(), 10)
		msg.Sign = FeishuSign(f.cfg.Secret, msg.Timestamp)
	}
	body, err := marshal(msg)
	if err != nil {
		return Permanent(fmt.Errorf("feishu channel %q: encode message: %w", f.cfg.Name, err))
	}
	status, resp, err := f.p.post(ctx, f.cfg.URL, body, nil)
	if err != nil {
		return err
	}
	var r struct {
		Code       *int `json:"code"`
		StatusCode *int `json:"StatusCode"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		return f.p.decodeError(status, resp, err)
	}
	switch {
	case r.Code != nil && *r.Code != 0:
		return f.p.robotError(status, *r.Code, resp)
	case r.StatusCode != nil && *r.StatusCode != 0:
		return f.p.robotError(status, *r.StatusCode, resp)
	case r.Code == nil && r.StatusCode == nil:
		return f.p.decodeError(status, resp, errors.New("neither code nor StatusCode"))
	}
	return nil
}

// FeishuSign is the Feishu / Lark custom bot signature:
// Base64(HmacSHA256(key=timestamp+"\n"+secret, msg="")), timestamp in
// seconds, within an hour of Feishu's clock. Note the unusual order: the
// string to sign is the key and the message is empty, as in Feishu's
// reference code.
func FeishuSign(secret, timestampSeconds string) string {
	mac := hmac.New(sha256.New, []byte(timestampSeconds+"\n"+secret))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

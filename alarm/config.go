package alarm

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
)

// Config is the alarms section of the server configuration: named channels
// (jobs name the channels they alarm on) and the dispatcher's tuning. See
// the package documentation for the YAML shape.
type Config struct {
	// Channels maps a channel name (letters, digits, '-', '_', '.'; at most
	// 64) to its configuration.
	Channels map[string]ChannelConfig `yaml:"channels"`
	// Dispatcher tuning; zero values take the Options defaults.
	Queue          int           `yaml:"queue"`
	Workers        int           `yaml:"workers"`
	MaxAttempts    int           `yaml:"max_attempts"`
	BackoffBase    time.Duration `yaml:"backoff_base"`
	BackoffMax     time.Duration `yaml:"backoff_max"`
	AttemptTimeout time.Duration `yaml:"attempt_timeout"`
	StopGrace      time.Duration `yaml:"stop_grace"`
}

// ChannelConfig is one channel as written in YAML: a type and the fields of
// that type's config (EmailConfig, WebhookConfig, SlackConfig,
// DingTalkConfig, WeComConfig, FeishuConfig). A field the type does not use
// is an error, so a typo does not go unnoticed.
type ChannelConfig struct {
	Type kind.AlarmChannel `yaml:"type"` // email, webhook, slack, dingtalk, wecom or feishu

	// webhook, slack, dingtalk, wecom, feishu
	URL string `yaml:"url"`
	// webhook, dingtalk, feishu
	Secret string `yaml:"secret"`
	// webhook
	Headers map[string]string `yaml:"headers"`

	// email
	Host        string   `yaml:"host"`
	Port        int      `yaml:"port"`
	Username    string   `yaml:"username"`
	Password    string   `yaml:"password"`
	From        string   `yaml:"from"`
	To          []string `yaml:"to"`
	StartTLS    string   `yaml:"starttls"`
	ImplicitTLS bool     `yaml:"implicit_tls"`
	CAFile      string   `yaml:"ca_file"`
	HelloName   string   `yaml:"hello_name"`
	HTML        bool     `yaml:"html"`

	// every type
	Timeout time.Duration `yaml:"timeout"`
}

// setFields lists which YAML fields are set.
func (c ChannelConfig) setFields() []string {
	var set []string
	add := func(name string, isSet bool) {
		if isSet {
			set = append(set, name)
		}
	}
	add("url", c.URL != "")
	add("secret", c.Secret != "")
	add("headers", len(c.Headers) > 0)
	add("host", c.Host != "")
	add("port", c.Port != 0)
	add("username", c.Username != "")
	add("password", c.Password != "")
	add("from", c.From != "")
	add("to", len(c.To) > 0)
	add("starttls", c.StartTLS != "")
	add("implicit_tls", c.ImplicitTLS)
	add("ca_file", c.CAFile != "")
	add("hello_name", c.HelloName != "")
	add("html", c.HTML)
	return set
}

// usedFields are the fields each type reads (timeout: all of them).
var usedFields = map[kind.AlarmChannel][]string{
	kind.AlarmEmail:    {"host", "port", "username", "password", "from", "to", "starttls", "implicit_tls", "ca_file", "hello_name", "html"},
	kind.AlarmWebhook:  {"url", "secret", "headers"},
	kind.AlarmSlack:    {"url"},
	kind.AlarmDingTalk: {"url", "secret"},
	kind.AlarmWeCom:    {"url"},
	kind.AlarmFeishu:   {"url", "secret"},
}

// typed converts the channel into its type's config, named name.
func (c ChannelConfig) typed(name string) (interface{ Validate() error }, error) {
	used, ok := usedFields[c.Type]
	if !ok {
		return nil, fmt.Errorf("%w: type must be one of %s, got %q", ErrInvalidConfig, kind.Join(kind.AlarmChannels), c.Type)
	}
	for _, f := range c.setFields() {
		if !slices.Contains(used, f) {
			return nil, fmt.Errorf("%w: %s is not a field of type %s (it uses %s, timeout)", ErrInvalidConfig, f, c.Type, strings.Join(used, ", "))
		}
	}
	switch c.Type {
	case kind.AlarmEmail:
		return EmailConfig{Name: name, Host: c.Host, Port: c.Port, Username: c.Username, Password: c.Password,
			From: c.From, To: c.To, StartTLS: c.StartTLS, ImplicitTLS: c.ImplicitTLS, CAFile: c.CAFile,
			HelloName: c.HelloName, HTML: c.HTML, Timeout: c.Timeout}, nil
	case kind.AlarmWebhook:
		return WebhookConfig{Name: name, URL: c.URL, Headers: c.Headers, Secret: c.Secret, Timeout: c.Timeout}, nil
	case kind.AlarmSlack:
		return SlackConfig{Name: name, URL: c.URL, Timeout: c.Timeout}, nil
	case kind.AlarmDingTalk:
		return DingTalkConfig{Name: name, URL: c.URL, Secret: c.Secret, Timeout: c.Timeout}, nil
	case kind.AlarmWeCom:
		return WeComConfig{Name: name, URL: c.URL, Timeout: c.Timeout}, nil
	default: // kind.AlarmFeishu
		return FeishuConfig{Name: name, URL: c.URL, Secret: c.Secret, Timeout: c.Timeout}, nil
	}
}

// Redacted returns a copy that is safe to show: URL, Secret, Password and
// header values redacted.
func (c ChannelConfig) Redacted() ChannelConfig {
	c.URL, c.Secret, c.Password = Redact(c.URL), Redact(c.Secret), Redact(c.Password)
	if c.Headers != nil {
		h := make(map[string]string, len(c.Headers))
		for k, v := range c.Headers {
			h[k] = Redact(v)
		}
		c.Headers = h
	}
	c.To = append([]string(nil), c.To...)
	return c
}

// String describes the channel without its secrets, naming only the fields
// that are set.
func (c ChannelConfig) String() string {
	r := c.Redacted()
	var b strings.Builder
	b.WriteString("ChannelConfig{type:" + string(r.Type))
	for _, f := range r.setFields() {
		var v any
		switch f {
		case "url":
			v = r.URL
		case "secret":
			v = r.Secret
		case "headers":
			v = r.Headers
		case "host":
			v = r.Host
		case "port":
			v = r.Port
		case "username":
			v = r.Username
		case "password":
			v = r.Password
		case "from":
			v = r.From
		case "to":
			v = r.To
		case "starttls":
			v = r.StartTLS
		case "implicit_tls":
			v = r.ImplicitTLS
		case "ca_file":
			v = r.CAFile
		case "hello_name":
			v = r.HelloName
		case "html":
			v = r.HTML
		}
		fmt.Fprintf(&b, " %s:%v", f, v)
	}
	if r.Timeout != 0 {
		fmt.Fprintf(&b, " timeout:%s", r.Timeout)
	}
	b.WriteString("}")
	return b.String()
}

// Format makes every fmt verb print String.
func (c ChannelConfig) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c.String()) }

// channelName is what a channel may be called.
var channelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// Validate reports every invalid channel and setting, each naming its
// field (alarms.channels.NAME...).
func (c Config) Validate() error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.Channels)) {
		if !channelName.MatchString(name) {
			errs = append(errs, fmt.Errorf("%w: alarms.channels: name %q must be 1-64 letters, digits, '-', '_' or '.', starting with a letter or digit", ErrInvalidConfig, name))
			continue
		}
		cfg, err := c.Channels[name].typed(name)
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("alarms.channels.%s: %w", name, err))
		}
	}
	neg := func(field string, v int64) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%w: alarms.%s must not be negative, got %d", ErrInvalidConfig, field, v))
		}
	}
	neg("queue", int64(c.Queue))
	neg("workers", int64(c.Workers))
	neg("max_attempts", int64(c.MaxAttempts))
	neg("backoff_base", int64(c.BackoffBase))
	neg("backoff_max", int64(c.BackoffMax))
	neg("attempt_timeout", int64(c.AttemptTimeout))
	neg("stop_grace", int64(c.StopGrace))
	return errors.Join(errs...)
}

// Redacted returns a copy whose channels are redacted.
func (c Config) Redacted() Config {
	if c.Channels != nil {
		ch := make(map[string]ChannelConfig, len(c.Channels))
		for k, v := range c.Channels {
			ch[k] = v.Redacted()
		}
		c.Channels = ch
	}
	return c
}

// String describes the config without its secrets.
func (c Config) String() string {
	var b strings.Builder
	b.WriteString("alarm.Config{channels:{")
	for i, name := range slices.Sorted(maps.Keys(c.Channels)) {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(name + ":" + c.Channels[name].String())
	}
	fmt.Fprintf(&b, "} queue:%d workers:%d max_attempts:%d backoff_base:%s backoff_max:%s attempt_timeout:%s stop_grace:%s}",
		c.Queue, c.Workers, c.MaxAttempts, c.BackoffBase, c.BackoffMax, c.AttemptTimeout, c.StopGrace)
	return b.String()
}

// Format makes every fmt verb print String.
func (c Config) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c.String()) }

// Options returns dispatcher options carrying the config's tuning; the
// caller adds Senders (from Build), Clock, Log and Record.
func (c Config) Options() Options {
	return Options{Queue: c.Queue, Workers: c.Workers, MaxAttempts: c.MaxAttempts,
		BackoffBase: c.BackoffBase, BackoffMax: c.BackoffMax, AttemptTimeout: c.AttemptTimeout, StopGrace: c.StopGrace}
}

// Build validates cfg and makes one sender per channel, named after it and
// sorted by name, with the real clock and the default HTTP client.
func Build(cfg Config) ([]Sender, error) {
	return BuildWith(cfg, Deps{})
}

// BuildWith is Build with explicit dependencies (a fake clock in tests, an
// HTTP client with a proxy).
func BuildWith(cfg Config, deps Deps) ([]Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var senders []Sender
	for _, name := range slices.Sorted(maps.Keys(cfg.Channels)) {
		typed, _ := cfg.Channels[name].typed(name) // validated
		var s Sender
		var err error
		switch t := typed.(type) {
		case EmailConfig:
			s, err = NewEmail(t, deps)
		case WebhookConfig:
			s, err = NewWebhook(t, deps)
		case SlackConfig:
			s, err = NewSlack(t, deps)
		case DingTalkConfig:
			s, err = NewDingTalk(t, deps)
		case WeComConfig:
			s, err = NewWeCom(t, deps)
		case FeishuConfig:
			s, err = NewFeishu(t, deps)
		}
		if err != nil {
			return nil, fmt.Errorf("alarms.channels.%s: %w", name, err)
		}
		senders = append(senders, s)
	}
	return senders, nil
}

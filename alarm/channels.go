package alarm

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/ringjob/ringjob/internal/kind"
)

// ChannelInfo describes a channel for people (the console's list of alarm
// channels): what it is and where it sends, never a secret.
type ChannelInfo struct {
	Name string
	Kind kind.AlarmChannel
	// Destination is where alarms go: the scheme and host of a webhook URL
	// (its path and query hold tokens), or an e-mail channel's SMTP server
	// and recipients.
	Destination string
}

// describer is what a built-in sender tells about itself.
type describer interface {
	Kind() kind.AlarmChannel
	Destination() string
}

// Describe lists the channels, sorted by name. A sender that is not one of
// the built-in kinds shows no kind and no destination.
func (d *Dispatcher) Describe() []ChannelInfo {
	names := d.Channels()
	out := make([]ChannelInfo, 0, len(names))
	for _, n := range names {
		info := ChannelInfo{Name: n}
		if ds, ok := d.senders[n].(describer); ok {
			info.Kind, info.Destination = ds.Kind(), ds.Destination()
		}
		out = append(out, info)
	}
	return out
}

// SendTest sends ev over the channel name now, in one attempt bounded by
// AttemptTimeout, outside the queue: a person waits for the answer. Its
// outcome is not recorded anywhere; the error is the sender's (free of
// secrets), or ErrUnknownChannel.
func (d *Dispatcher) SendTest(ctx context.Context, name string, ev Event) error {
	s, ok := d.senders[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownChannel, name)
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.AttemptTimeout)
	defer cancel()
	return s.Send(ctx, ev)
}

// urlOrigin is the scheme and host of a URL: where it sends, without the
// path and query that carry webhook tokens (or user info).
func urlOrigin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// Destination is the webhook URL's scheme and host.
func (w *Webhook) Destination() string { return urlOrigin(w.cfg.URL) }

// Destination is the incoming webhook's scheme and host.
func (s *Slack) Destination() string { return urlOrigin(s.cfg.URL) }

// Destination is the robot URL's scheme and host.
func (d *DingTalk) Destination() string { return urlOrigin(d.cfg.URL) }

// Destination is the robot URL's scheme and host.
func (w *WeCom) Destination() string { return urlOrigin(w.cfg.URL) }

// Destination is the bot URL's scheme and host.
func (f *Feishu) Destination() string { return urlOrigin(f.cfg.URL) }

// Destination is the SMTP server and the recipients.
func (e *Email) Destination() string {
	return "smtp://" + e.addr + " to " + strings.Join(e.to, ", ")
}

package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ringjob/ringjob/alarm"
	"github.com/ringjob/ringjob/store"
)

// AlarmChannels are the server's alarm channels as the console sees them.
// *alarm.Dispatcher satisfies it.
type AlarmChannels interface {
	// Describe lists the channels by name, without secrets.
	Describe() []alarm.ChannelInfo
	// SendTest delivers ev over one channel now, in one attempt.
	SendTest(ctx context.Context, name string, ev alarm.Event) error
}

var _ AlarmChannels = (*alarm.Dispatcher)(nil)

// ListAlarmChannels lists the alarm channels jobs may name, sorted by name.
func (s *Service) ListAlarmChannels() []alarm.ChannelInfo {
	if s.alarms != nil {
		return s.alarms.Describe()
	}
	names := make([]string, 0, len(s.channels))
	for n := range s.channels {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]alarm.ChannelInfo, 0, len(names))
	for _, n := range names {
		out = append(out, alarm.ChannelInfo{Name: n})
	}
	return out
}

// AlarmTestResult is how a test alarm went.
type AlarmTestResult struct {
	Channel alarm.ChannelInfo
	// Sent is true when the channel accepted the alarm; else Error says why
	// (the channel's own answer: an HTTP status and body excerpt, an SMTP
	// reply), free of secrets.
	Sent  bool
	Error string
	AtMs  int64
	Took  time.Duration
}

// TestAlarmChannel sends a clearly labelled test alarm through the channel
// name, waits for its one attempt and records it in the audit log (with the
// outcome). A channel that does not exist is a *NotFoundError. A failed
// delivery is not an error of the call: the result says how it went.
func (s *Service) TestAlarmChannel(ctx context.Context, name string) (AlarmTestResult, error) {
	var info alarm.ChannelInfo
	found := false
	for _, c := range s.ListAlarmChannels() {
		if c.Name == name {
			info, found = c, true
		}
	}
	if !found || s.alarms == nil {
		hint := "this server declares no alarm channel (see alarms.channels in the server config)"
		if names := s.alarmChannelNames(); len(names) > 0 {
			hint = "this server declares " + strings.Join(names, ", ")
		}
		return AlarmTestResult{}, &NotFoundError{Resource: "alarm channel", Name: fmt.Sprintf("%q", name), Hint: hint}
	}
	sentBy := "the server"
	if p := ActorFrom(ctx).Principal; p != nil {
		sentBy = p.String()
	}
	start := s.clock.Now()
	res := AlarmTestResult{Channel: info, AtMs: start.UnixMilli()}
	err := s.alarms.SendTest(ctx, name, alarm.TestEvent(name, sentBy+" from Ringjob", start))
	res.Took = s.clock.Since(start)
	switch {
	case err == nil:
		res.Sent = true
	case errors.Is(err, alarm.ErrUnknownChannel):
		return AlarmTestResult{}, &NotFoundError{Resource: "alarm channel", Name: fmt.Sprintf("%q", name)}
	default:
		res.Error = err.Error()
	}
	changes := map[string]any{"kind": string(info.Kind), "sent": res.Sent}
	if res.Error != "" {
		changes["error"] = res.Error
	}
	// Nothing else is written: the audit line is the whole transaction.
	if err := s.st.Tx(ctx, func(tx *store.Store) error {
		return s.audit(ctx, tx, auditEntry{Action: ActAlarmTest, ObjectType: "alarm_channel", ObjectName: name, Changes: changes})
	}); err != nil {
		return AlarmTestResult{}, fmt.Errorf("test alarm channel %q: record it: %w", name, err)
	}
	return res, nil
}

func (s *Service) alarmChannelNames() []string {
	var names []string
	for _, c := range s.ListAlarmChannels() {
		names = append(names, c.Name)
	}
	return names
}

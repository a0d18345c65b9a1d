package alarm

import (
	"context"
	"fmt"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
)

// Event is what an alarm says: which run of which job ended how.
type Event struct {
	Kind      kind.AlarmEvent // kind.AlarmFailure, kind.AlarmRecovery or kind.AlarmTest
	JobID     int64
	JobName   string
	GroupName string
	RunID     int64
	State     kind.RunState // the run's final state: failed, timed_out, lost, succeeded, ...
	Code      int           // the run's result code (XXL-JOB handle code: 200 ok, 500 failed, 502 timeout)
	// Message is the run's outcome message. Senders shorten it (see
	// MaxMessageRunes and MaxChatMessageRunes), so callers may pass it whole.
	Message     string
	Attempt     int // which attempt of the run this was (1 = the first)
	ScheduledAt time.Time
	FinishedAt  time.Time
	ConsoleURL  string // link to the run in the console; may be empty
}

// Validate reports what is wrong with an event a sender cannot render.
func (ev Event) Validate() error {
	switch ev.Kind {
	case kind.AlarmFailure, kind.AlarmRecovery:
	case kind.AlarmTest:
		return nil // no job behind it
	default:
		return fmt.Errorf("%w: kind must be %q, %q or %q, got %q", ErrInvalidEvent, kind.AlarmFailure, kind.AlarmRecovery, kind.AlarmTest, ev.Kind)
	}
	if ev.JobID == 0 && ev.JobName == "" {
		return fmt.Errorf("%w: job_id or job_name is required", ErrInvalidEvent)
	}
	return nil
}

// TestEvent is the alarm a person sends by hand to check that a channel
// delivers: it says plainly that it is a test, who sent it and that no job
// failed.
func TestEvent(channel, sentBy string, at time.Time) Event {
	return Event{Kind: kind.AlarmTest, JobName: "test alarm", FinishedAt: at,
		Message: fmt.Sprintf("This is a test alarm sent by %s to check the alarm channel %q. No job failed; there is nothing to do.", sentBy, channel)}
}

// Sender delivers an alarm over one channel. Implementations are safe for
// concurrent use and hold no goroutines of their own.
type Sender interface {
	// Name is the channel name jobs refer to. It defaults to the sender's
	// kind ("email", "webhook", "slack", "dingtalk", "wecom", "feishu");
	// Build sets it to the name the channel is declared under.
	Name() string
	// Send makes one delivery attempt, bounded by ctx and the sender's
	// timeout. Its error says what failed (HTTP status and a body excerpt,
	// an SMTP reply, the robot's errcode) and never contains a secret.
	// Errors that a retry cannot fix are marked (IsPermanent).
	Send(ctx context.Context, ev Event) error
}

// Compile-time checks that every sender implements Sender.
var (
	_ Sender = (*Email)(nil)
	_ Sender = (*Webhook)(nil)
	_ Sender = (*Slack)(nil)
	_ Sender = (*DingTalk)(nil)
	_ Sender = (*WeCom)(nil)
	_ Sender = (*Feishu)(nil)
)

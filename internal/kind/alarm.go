package kind

// AlarmChannel is the kind of an alarm channel (how an alarm is delivered).
type AlarmChannel string

// Alarm channel kinds.
const (
	AlarmEmail    AlarmChannel = "email"
	AlarmWebhook  AlarmChannel = "webhook"
	AlarmSlack    AlarmChannel = "slack"
	AlarmDingTalk AlarmChannel = "dingtalk"
	AlarmWeCom    AlarmChannel = "wecom"
	AlarmFeishu   AlarmChannel = "feishu"
)

// AlarmChannels lists the channel kinds.
var AlarmChannels = []AlarmChannel{AlarmEmail, AlarmWebhook, AlarmSlack, AlarmDingTalk, AlarmWeCom, AlarmFeishu}

// Valid reports whether c is a known channel kind.
func (c AlarmChannel) Valid() bool {
	for _, v := range AlarmChannels {
		if c == v {
			return true
		}
	}
	return false
}

// AlarmEvent is what an alarm announces.
type AlarmEvent string

// Alarm events.
const (
	AlarmFailure  AlarmEvent = "failure"  // a run failed after its last retry
	AlarmRecovery AlarmEvent = "recovery" // the first success after a failure alarm
	AlarmTest     AlarmEvent = "test"     // sent by hand to check a channel; no run behind it
)

// JobAlarmState is a job's alarm state: whether a failure was alarmed and
// not yet followed by a success.
type JobAlarmState string

// Job alarm states.
const (
	JobAlarmOK      JobAlarmState = "ok"
	JobAlarmFailing JobAlarmState = "failing"
)

// AlarmStatus is how a run's alarm went (XXL-JOB's alarm_status column).
type AlarmStatus int

// Alarm statuses of a run.
const (
	AlarmNone      AlarmStatus = 0 // not decided yet
	AlarmNotNeeded AlarmStatus = 1 // no alarm: retried, succeeded, or no channel
	AlarmSent      AlarmStatus = 2 // every channel accepted it
	AlarmFailed    AlarmStatus = 3 // a channel failed for good
)

// String names the status as XXL-JOB's console does.
func (s AlarmStatus) String() string {
	switch s {
	case AlarmNone:
		return "none"
	case AlarmNotNeeded:
		return "not_needed"
	case AlarmSent:
		return "sent"
	case AlarmFailed:
		return "failed"
	}
	return "unknown"
}

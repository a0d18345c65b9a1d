package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/ringjob/ringjob/alarm"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
)

// DispatcherAlarmer raises the scheduler's alarms through an alarm.Dispatcher
// (which retries failing channels with backoff on its own goroutines, so
// scheduling never waits for a webhook or a mail server).
type DispatcherAlarmer struct {
	Dispatcher *alarm.Dispatcher
	// ConsoleURL, when set, links alarms to the run: ConsoleURL + "/runs/{id}".
	ConsoleURL string
}

var _ Alarmer = DispatcherAlarmer{}

// Alarm queues the alarm.
func (a DispatcherAlarmer) Alarm(_ context.Context, al Alarm) bool {
	ev := alarm.Event{
		Kind: al.Kind, JobID: al.Job.ID, JobName: al.Job.Name, RunID: al.Run.ID, State: al.Run.State, Code: al.Run.ResultCode,
		Message: al.Run.Message, Attempt: al.Run.Attempt + 1, ScheduledAt: time.UnixMilli(al.Run.ScheduledMs),
	}
	if al.Run.FinishedMs > 0 {
		ev.FinishedAt = time.UnixMilli(al.Run.FinishedMs)
	}
	if a.ConsoleURL != "" {
		ev.ConsoleURL = fmt.Sprintf("%s/runs/%d", a.ConsoleURL, al.Run.ID)
	}
	return a.Dispatcher.Enqueue(ev, al.Channels)
}

// RecordAlarmResult returns the alarm.Options.Record function that keeps an
// alarm's outcome on its run and closes the alarm follow-up (alarmSender):
// the alarm status (XXL-JOB's states, failure alarms only) and a line in the
// run's log with every attempt. The log line comes first: a replica dying
// between the two sends the alarm again, and its log then shows both.
func RecordAlarmResult(st *store.Store) func(ctx context.Context, runID int64, r alarm.Result) error {
	return func(ctx context.Context, runID int64, r alarm.Result) error {
		status := kind.AlarmFailed
		switch r.Status {
		case alarm.StatusSent:
			status = kind.AlarmSent
		case alarm.StatusNotNeeded:
			status = kind.AlarmNotNeeded
		}
		if r.Kind != kind.AlarmFailure {
			status = kind.AlarmNone
		}
		if err := st.RunLogAppend(ctx, runID, fmt.Sprintf("[ringjob] %s alarm %s", r.Kind, r.Summary())); err != nil {
			return err
		}
		_, err := st.RunAlarmDone(ctx, runID, status)
		return err
	}
}

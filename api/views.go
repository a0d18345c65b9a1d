package api

import (
	"encoding/json"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
)

// JSON views. Times are RFC 3339 in UTC, null when unset.

func rfc3339(ms int64) *string {
	if ms == 0 {
		return nil
	}
	s := time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
	return &s
}

type groupView struct {
	ID      int64    `json:"id"`
	AppName string   `json:"app_name"`
	Title   string   `json:"title"`
	Members []string `json:"members"`
	// ExecutorTokenSet tells whether the group has its own executor token;
	// the token itself is never shown back.
	ExecutorTokenSet bool   `json:"executor_token_set"`
	Protocol         string `json:"protocol"`
	// AcceptRegistrations tells whether HTTP executors may register into the group.
	AcceptRegistrations bool    `json:"accept_registrations"`
	CreatedAt           *string `json:"created_at"`
	UpdatedAt           *string `json:"updated_at"`
}

func viewGroup(g store.Group) groupView {
	m := g.Members
	if m == nil {
		m = []string{}
	}
	return groupView{ID: g.ID, AppName: g.AppName, Title: g.Title, Members: m, ExecutorTokenSet: g.AccessToken != "", Protocol: g.Protocol,
		AcceptRegistrations: g.AcceptRegistrations,
		CreatedAt:           rfc3339(g.CreatedMs), UpdatedAt: rfc3339(g.UpdatedMs)}
}

type jobView struct {
	ID               int64              `json:"id"`
	GroupID          int64              `json:"group_id"`
	Name             string             `json:"name"`
	Description      string             `json:"description"`
	ScheduleType     string             `json:"schedule_type"`
	ScheduleConf     string             `json:"schedule_conf"`
	TimeZone         string             `json:"time_zone"`
	MisfirePolicy    kind.Misfire       `json:"misfire_policy"`
	Handler          string             `json:"handler"`
	Params           string             `json:"params"`
	RouteStrategy    kind.Route         `json:"route_strategy"`
	BlockStrategy    kind.Block         `json:"block_strategy"`
	TimeoutSec       int                `json:"timeout_sec"`
	RetryCount       int                `json:"retry_count"`
	ShardCount       int                `json:"shard_count"`
	PinnedTargets    []string           `json:"pinned_targets"`
	RetryBackoff     kind.Backoff       `json:"retry_backoff"`
	RetryDelaySec    int                `json:"retry_delay_sec"`
	RetryMaxDelaySec int                `json:"retry_max_delay_sec"`
	ChildJobIDs      []int64            `json:"child_job_ids"`
	MaxInFlight      int                `json:"max_in_flight"`
	AlarmChannels    []string           `json:"alarm_channels"`
	AlarmState       kind.JobAlarmState `json:"alarm_state"`
	Enabled          bool               `json:"enabled"`
	NextFireAt       *string            `json:"next_fire_at"`
	LastFireAt       *string            `json:"last_fire_at"`
	// LastOutcome is the final state of the job's newest finished run, ""
	// when none has finished; the jobs list filters on it.
	LastOutcome    kind.RunState `json:"last_outcome"`
	LastFinishedAt *string       `json:"last_finished_at"`
	// LastRunID is that run (0: none). LastRunPurged: retention has
	// deleted it since (the outcome and end time above stay true), so
	// there is nothing to link to.
	LastRunID     int64   `json:"last_run_id"`
	LastRunPurged bool    `json:"last_run_purged"`
	CreatedAt     *string `json:"created_at"`
	UpdatedAt     *string `json:"updated_at"`
}

// viewJob is a job's view; purged says whether its last run is gone
// (service.PurgedLastRuns).
func viewJob(j store.Job, purged bool) jobView {
	return jobView{
		ID: j.ID, GroupID: j.GroupID, Name: j.Name, Description: j.Description,
		ScheduleType: j.ScheduleType, ScheduleConf: j.ScheduleConf, TimeZone: j.TimeZone, MisfirePolicy: j.MisfirePolicy,
		Handler: j.Handler, Params: j.Params, RouteStrategy: j.RouteStrategy, BlockStrategy: j.BlockStrategy,
		TimeoutSec: j.TimeoutSec, RetryCount: j.RetryCount, ShardCount: j.ShardCount, PinnedTargets: nonNilStrings(j.PinnedTargets), Enabled: j.Enabled,
		RetryBackoff: j.RetryBackoff, RetryDelaySec: j.RetryDelaySec, RetryMaxDelaySec: j.RetryMaxDelaySec, ChildJobIDs: nonNilIDs(j.ChildJobIDs),
		MaxInFlight: j.MaxInFlight, AlarmChannels: nonNilStrings(j.AlarmChannels), AlarmState: j.AlarmState,
		NextFireAt: rfc3339(j.NextFireMs), LastFireAt: rfc3339(j.LastFireMs), CreatedAt: rfc3339(j.CreatedMs), UpdatedAt: rfc3339(j.UpdatedMs),
		LastOutcome: j.LastOutcome, LastFinishedAt: rfc3339(j.LastFinishedMs), LastRunID: j.LastRunID, LastRunPurged: purged,
	}
}

type runView struct {
	ID             int64         `json:"id"`
	JobID          int64         `json:"job_id"`
	GroupID        int64         `json:"group_id"`
	State          kind.RunState `json:"state"`
	TriggerType    kind.Trigger  `json:"trigger_type"`
	ScheduledAt    *string       `json:"scheduled_at"`
	DispatchedAt   *string       `json:"dispatched_at"`
	FinishedAt     *string       `json:"finished_at"`
	CreatedAt      *string       `json:"created_at"`
	ShardIndex     int           `json:"shard_index"`
	ShardTotal     int           `json:"shard_total"`
	Attempt        int           `json:"attempt"`
	Target         string        `json:"target"`
	Handler        string        `json:"handler"`
	Params         string        `json:"params"`
	Node           string        `json:"node"`
	Late           bool          `json:"late"`
	ResultCode     int           `json:"result_code"`
	Message        string        `json:"message"`
	IdempotencyKey string        `json:"idempotency_key,omitempty"`
	RetryOf        int64         `json:"retry_of,omitempty"`
	AlarmStatus    string        `json:"alarm_status"`
	// Attempts lists the routing probes and dispatches when one failed
	// (failover), as [{target, op, error, at_ms}]; empty otherwise.
	Attempts json.RawMessage `json:"attempts"`
}

func viewRun(r store.Run) runView {
	v := runView{
		ID: r.ID, JobID: r.JobID, GroupID: r.GroupID, State: r.State, TriggerType: r.TriggerType,
		ScheduledAt: rfc3339(r.ScheduledMs), DispatchedAt: rfc3339(r.DispatchedMs), FinishedAt: rfc3339(r.FinishedMs), CreatedAt: rfc3339(r.CreatedMs),
		ShardIndex: r.ShardIndex, ShardTotal: r.ShardTotal, Attempt: r.Attempt, Target: r.Target, Handler: r.Handler, Params: r.Params,
		Node: r.Owner, Late: r.Late, ResultCode: r.ResultCode, Message: r.Message, IdempotencyKey: r.IdempotencyKey,
	}
	v.RetryOf = r.RetryOf
	v.AlarmStatus = [...]string{"none", "not_needed", "sent", "failed"}[min(max(r.AlarmStatus, 0), 3)]
	v.Attempts = json.RawMessage("[]")
	if r.Attempts != "" && json.Valid([]byte(r.Attempts)) {
		v.Attempts = json.RawMessage(r.Attempts)
	}
	return v
}

type pageView[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"` // "" on the last page
}

func viewPage[S, T any](p service.Page[S], view func(S) T) pageView[T] {
	out := pageView[T]{Items: make([]T, 0, len(p.Items)), NextCursor: p.NextCursor}
	for _, it := range p.Items {
		out.Items = append(out.Items, view(it))
	}
	return out
}

type nextFiresView struct {
	TimeZone string   `json:"time_zone"`
	Items    []string `json:"items"` // UTC
	Local    []string `json:"local"` // the same instants in the schedule's zone
}

func viewNextFires(n service.NextFires) nextFiresView {
	out := nextFiresView{TimeZone: n.TimeZone, Items: make([]string, 0, len(n.Times)), Local: make([]string, 0, len(n.Times))}
	for _, t := range n.Times {
		out.Items = append(out.Items, t.UTC().Format(time.RFC3339))
		out.Local = append(out.Local, t.Format(time.RFC3339))
	}
	return out
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilIDs(s []int64) []int64 {
	if s == nil {
		return []int64{}
	}
	return s
}

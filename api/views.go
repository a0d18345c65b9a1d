package api

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/ringjob/ringjob/apitypes"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
)

// Views: the store's records as the API shows them (apitypes declares
// the bodies). Times are RFC 3339 in UTC, null when unset.

func rfc3339(ms int64) *string {
	if ms == 0 {
		return nil
	}
	s := time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
	return &s
}

func viewGroup(g store.Group) apitypes.Group {
	m := g.Members
	if m == nil {
		m = []string{}
	}
	return apitypes.Group{ID: g.ID, AppName: g.AppName, Title: g.Title, Members: m, ExecutorTokenSet: g.AccessToken != "", Protocol: g.Protocol,
		AcceptRegistrations: g.AcceptRegistrations, FailureDestination: g.FailureDestination,
		CreatedAt: rfc3339(g.CreatedMs), UpdatedAt: rfc3339(g.UpdatedMs)}
}

// viewJob is a job's view; purged says whether its last run is gone
// (service.PurgedLastRuns).
func viewJob(j store.Job, purged bool) apitypes.Job {
	return apitypes.Job{
		ID: j.ID, GroupID: j.GroupID, Name: j.Name, Description: j.Description,
		ScheduleType: j.ScheduleType, ScheduleConf: j.ScheduleConf, TimeZone: j.TimeZone, MisfirePolicy: string(j.MisfirePolicy),
		Handler: j.Handler, Params: j.Params, RouteStrategy: string(j.RouteStrategy), BlockStrategy: string(j.BlockStrategy),
		TimeoutSec: j.TimeoutSec, RetryCount: j.RetryCount, ShardCount: j.ShardCount, PinnedTargets: nonNilStrings(j.PinnedTargets), Enabled: j.Enabled,
		RetryBackoff: string(j.RetryBackoff), RetryDelaySec: j.RetryDelaySec, RetryMaxDelaySec: j.RetryMaxDelaySec, ChildJobIDs: nonNilIDs(j.ChildJobIDs), ChildJobs: childIDs(j.ChildJobIDs),
		MaxInFlight: j.MaxInFlight, AlarmChannels: nonNilStrings(j.AlarmChannels), AlarmState: string(j.AlarmState), JobOptions: service.JobOptionsView(j.JobOptions),
		NextFireAt: rfc3339(j.NextFireMs), LastFireAt: rfc3339(j.LastFireMs), CreatedAt: rfc3339(j.CreatedMs), UpdatedAt: rfc3339(j.UpdatedMs),
		LastOutcome: string(j.LastOutcome), LastFinishedAt: rfc3339(j.LastFinishedMs), LastRunID: j.LastRunID, LastRunPurged: purged,
	}
}

// optionsSpec copies schedule options into a job spec.
func optionsSpec(spec *service.JobSpec, o apitypes.JobOptions) {
	spec.ActiveFrom, spec.ActiveUntil, spec.FlexibleWindowMin = o.ActiveFrom, o.ActiveUntil, o.FlexibleWindowMin
	spec.MaxEventAgeSec, spec.AfterCompletion, spec.FailureDestination = o.MaxEventAgeSec, o.AfterCompletion, o.FailureDestination
}

// viewRun is a run's view without its job's name; handlers use runViews,
// which names the jobs of all the runs they show in one read.
func viewRun(r store.Run) apitypes.Run {
	v := apitypes.Run{
		ID: r.ID, JobID: r.JobID, GroupID: r.GroupID, State: string(r.State), TriggerType: string(r.TriggerType),
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

func viewPage[S, T any](p service.Page[S], view func(S) T) apitypes.Page[T] {
	out := apitypes.Page[T]{Items: make([]T, 0, len(p.Items)), NextCursor: p.NextCursor}
	for _, it := range p.Items {
		out.Items = append(out.Items, view(it))
	}
	return out
}

func viewNextFires(n service.NextFires) apitypes.NextFires {
	out := apitypes.NextFires{TimeZone: n.TimeZone, Items: make([]string, 0, len(n.Times)), Local: make([]string, 0, len(n.Times)), Note: n.Note}
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

// childIDs is the child_jobs of a view before the children are named:
// each id in decimal (what a reader who may not see the child gets).
func childIDs(ids []int64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.FormatInt(id, 10)
	}
	return out
}

func nonNilIDs(s []int64) []int64 {
	if s == nil {
		return []int64{}
	}
	return s
}

// runViews views runs with their jobs' names and, for failed runs, what
// follows them, each read once for all of them.
func (s *server) runViews(ctx context.Context, runs ...store.Run) ([]apitypes.Run, error) {
	names, err := s.svc.RunJobNames(ctx, runs...)
	if err != nil {
		return nil, err
	}
	retries, err := s.svc.RunRetries(ctx, runs...)
	if err != nil {
		return nil, err
	}
	out := make([]apitypes.Run, len(runs))
	for i, r := range runs {
		out[i] = viewRun(r)
		n := names[r.JobID]
		out[i].JobName, out[i].AppName = n.Name, n.AppName
		if rt, ok := retries[r.ID]; ok {
			out[i].Retry, out[i].RetryRunID = string(rt.Status), rt.RunID
		}
	}
	return out, nil
}

// runView views one run with its job's name.
func (s *server) runView(ctx context.Context, r store.Run) (apitypes.Run, error) {
	vs, err := s.runViews(ctx, r)
	if err != nil {
		return apitypes.Run{}, err
	}
	return vs[0], nil
}

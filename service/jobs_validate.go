package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/destinations"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/schedule"
	"github.com/ringjob/ringjob/store"
)

// Job limits and defaults.
const (
	MaxJobName         = 255       // characters
	MaxJobDescription  = 64 * 1024 // bytes
	MaxHandler         = 255       // characters
	MaxParamsBytes     = 64 * 1024 // bytes, job params and trigger overrides
	MaxScheduleConf    = 255       // characters
	MaxTimeZone        = 64        // characters
	MaxTimeoutSec      = 86400
	MaxRetryCount      = 10
	MaxShardCount      = 1000
	DefaultTimeZone    = "UTC"
	DefaultRoute       = kind.RouteFirst
	DefaultBlock       = kind.BlockSerial
	DefaultMisfire     = kind.MisfireDoNothing
	DefaultShardCount  = 1
	MaxIdempotencyKey  = 128
	DefaultPreviewN    = 5
	MaxPreviewN        = 100
	maxNameFilterChars = 255
)

// noneDisablesStart is XXL-JOB's rule, in its words.
const noneDisablesStart = "schedule type none disables start: a job with schedule_type none runs only when triggered; give it a cron, fixed_rate or at schedule to start it"

// JobSpec are the editable fields of a job. Empty strings and zero numbers
// take the defaults named on each field.
type JobSpec struct {
	GroupID       int64  // required; the group must exist
	Name          string // 1..255 characters
	Description   string // at most 64 KiB
	ScheduleType  string // none (default), cron, fixed_rate, at
	ScheduleConf  string // cron "sec min hour dom month dow", seconds for fixed_rate, RFC 3339 or local time for at
	TimeZone      string // IANA name; default UTC
	MisfirePolicy string // do_nothing (default) or fire_once_now
	Handler       string // handler name on HTTP executors and functions; at most 255 characters
	Params        string // passed to every run; at most 64 KiB
	RouteStrategy string // first (default; the only one so far)
	BlockStrategy string // SERIAL_EXECUTION (default), DISCARD_LATER, COVER_EARLY
	TimeoutSec    int    // 0..86400; 0 = no timeout
	RetryCount    int    // 0..10
	ShardCount    int    // 1..1000; 0 takes the default 1
	// PinnedTargets restrict the job's candidates (target URIs, at most 32,
	// each valid for its driver); empty = every candidate of the group.
	PinnedTargets []string
	// Retries: RetryBackoff "fixed" (default: RetryDelaySec between tries;
	// 0 = at once, as XXL-JOB) or "exponential" (doubling from
	// RetryDelaySec, capped at RetryMaxDelaySec).
	RetryBackoff     string
	RetryDelaySec    int // 0..86400
	RetryMaxDelaySec int // 0..86400; 0 = no cap
	// ChildJobIDs are triggered when a run of this job succeeds; they must
	// exist, and a chain may not come back to this job.
	ChildJobIDs []int64
	// MaxInFlight caps the job's runs being dispatched or running at once
	// (0 = no cap); more wait in the ring.
	MaxInFlight int
	// AlarmChannels name the server's alarm channels to page on failure
	// (after the last retry) and on recovery.
	AlarmChannels []string
	// The schedule options of cloud schedulers:
	//   - ActiveFrom, ActiveUntil: RFC 3339 instants ("" = open); no fire
	//     before the one nor after the other;
	//   - FlexibleWindowMin: 0 (off) or 1..1440; each fire moves a per-job
	//     offset within that many minutes after its schedule time;
	//   - MaxEventAgeSec: 0 (no limit) or 60..86400; a fire older than this
	//     is neither retried nor caught up;
	//   - AfterCompletion: "" / none (the job stays, stopped) or delete;
	//   - FailureDestination: an SQS queue, SNS topic or EventBridge bus ARN,
	//     or a webhook URL ("" = the group's).
	ActiveFrom, ActiveUntil string
	FlexibleWindowMin       int
	MaxEventAgeSec          int
	AfterCompletion         string
	FailureDestination      string
}

// Bounds of max_event_age_sec (EventBridge's MaximumEventAgeInSeconds).
const (
	MinEventAgeSec = 60
	MaxEventAgeSec = 86400
)

// MaxPinnedTargets caps a job's pinned targets.
const MaxPinnedTargets = 32

// checkJob applies defaults, validates every field (each error names it) and
// returns the store fields and the compiled schedule. cur is the job being
// updated (nil for a create): the child links it has already are not
// authorized again.
func (s *Service) checkJob(ctx context.Context, j JobSpec, cur *store.Job) (store.JobFields, schedule.Schedule, error) {
	f, sched, err := s.checkJobFields(j, nil)
	if err != nil {
		return f, nil, err
	}
	g, err := s.st.GroupGet(ctx, f.GroupID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return f, nil, invalid("group_id", "group %d does not exist; create it first (POST /api/v1/groups) or pick one from GET /api/v1/groups", f.GroupID)
		}
		return f, nil, fmt.Errorf("check group %d: %w", f.GroupID, err)
	}
	linked := map[int64]bool{}
	if cur != nil {
		for _, c := range cur.ChildJobIDs {
			linked[c] = true
		}
	}
	caller := ActorFrom(ctx).Principal
	for i, c := range j.ChildJobIDs {
		field := fmt.Sprintf("child_job_ids[%d]", i)
		child, err := s.st.JobGet(ctx, c)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return f, nil, fmt.Errorf("check child job %d: %w", c, err)
		}
		// A job in a group the caller cannot read answers as one that does
		// not exist: the answer must not tell other groups' jobs apart.
		if err != nil || (caller != nil && !linked[c] && !caller.Can(access.PermJobsRead, child.GroupID)) {
			return f, nil, invalid(field, "job %d does not exist (or is in a group you cannot read)", c)
		}
		// A child runs, with its own params on its own group's targets, when
		// its parent succeeds: linking it is triggering it.
		if caller != nil && !linked[c] {
			if err := caller.Check(access.PermJobsOperate, child.GroupID); err != nil {
				return f, nil, err
			}
		}
	}
	if err := s.checkPinnedInGroup(ctx, s.st, g, f.PinnedTargets); err != nil {
		return f, nil, err
	}
	return f, sched, nil
}

// checkPinnedInGroup refuses pinned targets that are not candidates of the
// job's group: a static member, or an address an executor registered under
// the group's app name (live or not), read through st (the caller's
// transaction, if any).
func (s *Service) checkPinnedInGroup(ctx context.Context, st *store.Store, g store.Group, pinned []string) error {
	if len(pinned) == 0 {
		return nil
	}
	members := make(map[string]bool, len(g.Members))
	for _, m := range g.Members {
		members[normalizeAddress(m)] = true
	}
	var registered map[string]bool
	for i, t := range pinned {
		if members[normalizeAddress(t)] {
			continue
		}
		if registered == nil {
			regs, err := st.RegistryList(ctx, store.RegistryListParams{AppName: g.AppName})
			if err != nil {
				return fmt.Errorf("check pinned targets: %w", err)
			}
			registered = make(map[string]bool, len(regs))
			for _, r := range regs {
				registered[normalizeAddress(r.Address)] = true
			}
		}
		if !registered[normalizeAddress(t)] {
			return invalid(fmt.Sprintf("pinned_targets[%d]", i), "%q is not a target of group %q: pin one of its members or an executor registered under its app name", t, g.AppName)
		}
	}
	return nil
}

// checkJobFields is checkJob without the database: defaults and every check
// that needs only the spec (the group and child jobs are the caller's to
// check). A GroupID of -1 stands for a group that does not exist yet.
// zones, when not nil, loads each time zone once across calls.
func (s *Service) checkJobFields(j JobSpec, zones *schedule.Zones) (store.JobFields, schedule.Schedule, error) {
	f := store.JobFields{
		GroupID:       j.GroupID,
		Name:          j.Name,
		Description:   j.Description,
		ScheduleType:  strings.ToLower(strings.TrimSpace(j.ScheduleType)),
		ScheduleConf:  strings.TrimSpace(j.ScheduleConf),
		TimeZone:      strings.TrimSpace(j.TimeZone),
		MisfirePolicy: kind.Misfire(strings.ToLower(strings.TrimSpace(j.MisfirePolicy))),
		Handler:       j.Handler,
		Params:        j.Params,
		TimeoutSec:    j.TimeoutSec,
		RetryCount:    j.RetryCount,
		ShardCount:    j.ShardCount,
	}
	if f.ScheduleType == "" {
		f.ScheduleType = string(schedule.KindNone)
	}
	if f.TimeZone == "" {
		f.TimeZone = DefaultTimeZone
	}
	if f.MisfirePolicy == "" {
		f.MisfirePolicy = DefaultMisfire
	}
	if f.ShardCount == 0 {
		f.ShardCount = DefaultShardCount
	}

	if err := checkText("name", f.Name, 1, MaxJobName, false); err != nil {
		return f, nil, err
	}
	if strings.TrimSpace(f.Name) == "" {
		return f, nil, invalid("name", "must not be only spaces: give the job a name")
	}
	if f.GroupID == 0 {
		return f, nil, invalid("group_id", "is required: the id of the group (target pool) the job runs on; list groups with GET /api/v1/groups")
	}
	if f.GroupID != -1 {
		if err := checkID("group_id", f.GroupID); err != nil {
			return f, nil, err
		}
	}
	sched, err := parseScheduleIn(zones, f.ScheduleType, f.ScheduleConf, f.TimeZone)
	if err != nil {
		return f, nil, err
	}
	if f.JobOptions, err = checkJobOptions(j); err != nil {
		return f, nil, err
	}
	sched = schedule.Bound(sched, f.Window(f.Name))
	if !f.MisfirePolicy.Valid() {
		return f, nil, invalid("misfire_policy", "%q is unknown; use do_nothing (skip missed fires) or fire_once_now (run once at once)", j.MisfirePolicy)
	}
	f.RouteStrategy = DefaultRoute
	if strings.TrimSpace(j.RouteStrategy) != "" {
		if f.RouteStrategy, err = kind.ParseRoute(j.RouteStrategy); err != nil {
			return f, nil, invalid("route_strategy", "%q is unknown; use one of %s (XXL-JOB's names such as FAILOVER are accepted too)", j.RouteStrategy, kind.Join(kind.Routes()))
		}
	}
	if f.BlockStrategy, err = kind.ParseBlock(j.BlockStrategy); err != nil {
		return f, nil, invalid("block_strategy", "%q is unknown; use SERIAL_EXECUTION, DISCARD_LATER or COVER_EARLY", j.BlockStrategy)
	}
	if f.TimeoutSec < 0 || f.TimeoutSec > MaxTimeoutSec {
		return f, nil, invalid("timeout_sec", "must be 0..%d seconds (0 = no timeout), got %d", MaxTimeoutSec, f.TimeoutSec)
	}
	if f.RetryCount < 0 || f.RetryCount > MaxRetryCount {
		return f, nil, invalid("retry_count", "must be 0..%d, got %d", MaxRetryCount, f.RetryCount)
	}
	if len(j.PinnedTargets) > MaxPinnedTargets {
		return f, nil, invalid("pinned_targets", "at most %d targets, got %d", MaxPinnedTargets, len(j.PinnedTargets))
	}
	for i, t := range j.PinnedTargets {
		if err := s.drivers.Validate(t); err != nil {
			return f, nil, invalid(fmt.Sprintf("pinned_targets[%d]", i), "%v", err)
		}
	}
	f.PinnedTargets = j.PinnedTargets
	switch b := kind.Backoff(j.RetryBackoff); {
	case b == "" || b.Valid():
		f.RetryBackoff = b
	default:
		return f, nil, invalid("retry_backoff", "%q is unknown; use fixed or exponential", j.RetryBackoff)
	}
	if j.RetryDelaySec < 0 || j.RetryDelaySec > MaxTimeoutSec {
		return f, nil, invalid("retry_delay_sec", "must be 0..%d, got %d", MaxTimeoutSec, j.RetryDelaySec)
	}
	if j.RetryMaxDelaySec < 0 || j.RetryMaxDelaySec > MaxTimeoutSec {
		return f, nil, invalid("retry_max_delay_sec", "must be 0..%d, got %d", MaxTimeoutSec, j.RetryMaxDelaySec)
	}
	f.RetryDelaySec, f.RetryMaxDelaySec = j.RetryDelaySec, j.RetryMaxDelaySec
	if j.MaxInFlight < 0 || j.MaxInFlight > MaxShardCount {
		return f, nil, invalid("max_in_flight", "must be 0..%d (0 = no limit), got %d", MaxShardCount, j.MaxInFlight)
	}
	f.MaxInFlight = j.MaxInFlight
	if len(j.ChildJobIDs) > 32 {
		return f, nil, invalid("child_job_ids", "at most 32 child jobs, got %d", len(j.ChildJobIDs))
	}
	f.ChildJobIDs = j.ChildJobIDs
	for i, c := range j.AlarmChannels {
		if !s.channels[c] {
			return f, nil, invalid(fmt.Sprintf("alarm_channels[%d]", i), "%q is not an alarm channel of this server; declare it under alarms.channels in the server config", c)
		}
	}
	f.AlarmChannels = j.AlarmChannels
	if f.ShardCount < 1 || f.ShardCount > MaxShardCount {
		return f, nil, invalid("shard_count", "must be 1..%d, got %d", MaxShardCount, f.ShardCount)
	}
	if err := checkText("handler", f.Handler, 0, MaxHandler, false); err != nil {
		return f, nil, err
	}
	if err := checkBytes("params", f.Params, MaxParamsBytes); err != nil {
		return f, nil, err
	}
	if err := checkBytes("description", f.Description, MaxJobDescription); err != nil {
		return f, nil, err
	}
	return f, sched, nil
}

// checkJobOptions validates the schedule options of a job spec.
func checkJobOptions(j JobSpec) (store.JobOptions, error) {
	var o store.JobOptions
	instant := func(field, v string) (int64, error) {
		if strings.TrimSpace(v) == "" {
			return 0, nil
		}
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(v))
		if err != nil {
			return 0, invalid(field, "%q is not an RFC 3339 time with an offset, e.g. \"2027-01-01T00:00:00Z\"", v)
		}
		return t.UnixMilli(), nil
	}
	var err error
	if o.ActiveFromMs, err = instant("active_from", j.ActiveFrom); err != nil {
		return o, err
	}
	if o.ActiveUntilMs, err = instant("active_until", j.ActiveUntil); err != nil {
		return o, err
	}
	if o.ActiveFromMs != 0 && o.ActiveUntilMs != 0 && o.ActiveUntilMs <= o.ActiveFromMs {
		return o, invalid("active_until", "%s is not after active_from %s; set a later end, or clear one of them", j.ActiveUntil, j.ActiveFrom)
	}
	if err := schedule.CheckFlexMinutes(j.FlexibleWindowMin); err != nil {
		return o, invalid("flexible_window_min", "must be 0 (off) or %d..%d minutes, got %d", schedule.MinFlexMinutes, schedule.MaxFlexMinutes, j.FlexibleWindowMin)
	}
	o.FlexWindowMin = j.FlexibleWindowMin
	if j.MaxEventAgeSec != 0 && (j.MaxEventAgeSec < MinEventAgeSec || j.MaxEventAgeSec > MaxEventAgeSec) {
		return o, invalid("max_event_age_sec", "must be 0 (no limit) or %d..%d seconds, got %d", MinEventAgeSec, MaxEventAgeSec, j.MaxEventAgeSec)
	}
	o.MaxEventAgeSec = j.MaxEventAgeSec
	a, ok := kind.ParseAfterCompletion(j.AfterCompletion)
	if !ok {
		return o, invalid("after_completion", "%q is unknown; use none (the job stays, stopped, after its last fire) or delete", j.AfterCompletion)
	}
	o.AfterCompletion = a
	if o.FailureDestination, err = checkFailureDestination(j.FailureDestination); err != nil {
		return o, err
	}
	return o, nil
}

// checkFailureDestination validates a job's or group's failure destination.
func checkFailureDestination(d string) (string, error) {
	d = strings.TrimSpace(d)
	if d == "" {
		return "", nil
	}
	if _, err := destinations.Parse(d); err != nil {
		return "", invalid("failure_destination", "%v", err)
	}
	return d, nil
}

// parseSchedule compiles a schedule; errors name the field at fault.
func parseSchedule(schedType, conf, tz string) (schedule.Schedule, error) {
	return parseScheduleIn(nil, schedType, conf, tz)
}

// parseScheduleIn is parseSchedule with zones loaded once (nil: each time).
func parseScheduleIn(zones *schedule.Zones, schedType, conf, tz string) (schedule.Schedule, error) {
	if err := checkText("schedule_conf", conf, 0, MaxScheduleConf, false); err != nil {
		return nil, err
	}
	if err := checkText("time_zone", tz, 0, MaxTimeZone, false); err != nil {
		return nil, err
	}
	var sched schedule.Schedule
	var err error
	if zones != nil {
		sched, err = zones.Parse(schedule.Kind(schedType), conf, tz)
	} else {
		sched, err = schedule.Parse(schedule.Kind(schedType), conf, tz)
	}
	if err != nil {
		var pe *schedule.ParseError
		if errors.As(err, &pe) {
			return nil, &ValidationError{Field: pe.Field, Message: pe.Msg}
		}
		return nil, invalid("schedule_conf", "%v", err)
	}
	return sched, nil
}

// firstFire is the next fire time of a job being started, or a
// *ValidationError when the job cannot start.
func firstFire(schedType string, sched schedule.Schedule, now time.Time) (int64, error) {
	if schedType == string(schedule.KindNone) {
		return 0, invalid("schedule_type", noneDisablesStart)
	}
	next, ok := sched.Next(now)
	if !ok {
		return 0, invalid("schedule_conf", "the schedule has no fire time after now (%s); give a time in the future, then start the job",
			now.UTC().Format(time.RFC3339))
	}
	return next.UnixMilli(), nil
}

// checkChildCycle refuses child jobs that lead back to the job itself
// (XXL-JOB only refuses the job as its own child; A -> B -> A loops there).
func (s *Service) checkChildCycle(ctx context.Context, self int64, children []int64) error {
	seen := map[int64]bool{}
	var walk func(id int64, path []int64) error
	walk = func(id int64, path []int64) error {
		if id == self {
			chain := make([]string, 0, len(path)+2)
			chain = append(chain, fmt.Sprint(self))
			for _, p := range path {
				chain = append(chain, fmt.Sprint(p))
			}
			return invalid("child_job_ids", "child jobs would form a cycle: %s -> %d; remove a link", strings.Join(chain, " -> "), self)
		}
		if seen[id] {
			return nil
		}
		seen[id] = true
		j, err := s.st.JobGet(ctx, id)
		if err != nil {
			return nil
		}
		for _, c := range j.ChildJobIDs {
			if err := walk(c, append(path, id)); err != nil {
				return err
			}
		}
		return nil
	}
	for _, c := range children {
		if err := walk(c, nil); err != nil {
			return err
		}
	}
	return nil
}

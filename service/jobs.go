package service

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/schedule"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/store"
)

// JobCreateParams create a job. Enabled starts it at once (its first fire is
// computed from the schedule).
type JobCreateParams struct {
	JobSpec
	Enabled bool
}

// JobUpdateParams replace a job's editable fields (fields left empty take
// their defaults, as on create). Enabled nil keeps the job started or
// stopped; true or false starts or stops it.
type JobUpdateParams struct {
	ID int64
	JobSpec
	Enabled *bool
	// IfVersion makes the update conditional (If-Match): it is refused with
	// a *PreconditionError unless the job is still at this version (0: any).
	IfVersion int64
}

// JobListParams filter and page a job listing (by id).
type JobListParams struct {
	GroupID int64 // 0 = all groups
	// OnlyGroups, when not nil, lists only jobs of these groups (what the caller may see).
	OnlyGroups []int64
	Name       string // substring of the name; "" = all
	// Search is a substring of the name, the handler or a pinned target.
	Search       string
	ScheduleType string // none, cron, fixed_rate or at; "" = all
	Enabled      *bool  // nil = both
	// LastOutcome is the final state of each job's newest finished run
	// (succeeded, failed, timed_out, killed, lost, misfired), or
	// LastOutcomeNever for jobs that have finished none; "" = all.
	LastOutcome string
	// Sort is "id" (default, oldest first) or "name".
	Sort   string
	Cursor string
	Limit  int // 0 = DefaultPageLimit; at most MaxPageLimit
}

// TriggerParams ask for one run of a job now.
type TriggerParams struct {
	JobID int64
	// Params override the job's params for this run; nil uses the job's.
	Params *string
	// IdempotencyKey (1..128 printable ASCII characters, optional): a key the
	// job has seen before returns the earlier run instead of a new one.
	IdempotencyKey string
	// Target, optional, sends this run to one of the job's candidates
	// instead of routing (never to an arbitrary URL).
	Target string
	// ShardTotal, optional (1..MaxShardCount), fans the trigger out to this
	// many shards instead of the job's own count (a sharding job: one per
	// executor, else shard_count; other jobs: 1).
	ShardTotal *int
	// ShardIndex, optional, triggers only this shard (0-based) of the
	// fan-out instead of all of them.
	ShardIndex *int
}

// PreviewParams describe a schedule to preview, saved or not.
type PreviewParams struct {
	ScheduleType string
	ScheduleConf string
	TimeZone     string // "" = UTC
	N            int    // 1..100; 0 = 5
	// Name and the window options (JobSpec's) move and bound the fires as
	// they would a job's: the flexible window's offset depends on the name.
	Name                    string
	ActiveFrom, ActiveUntil string
	FlexibleWindowMin       int
}

// NextFires are the upcoming fire times of a schedule.
type NextFires struct {
	TimeZone string      // the schedule's zone (IANA name)
	Times    []time.Time // in that zone; empty when the schedule never fires again
	// Note says why there are fewer fires than asked, or where they come
	// from: the active window, the flexible window ("" = nothing to say).
	Note string
}

// CreateJob validates and creates a job, started when p.Enabled.
func (s *Service) CreateJob(ctx context.Context, p JobCreateParams) (store.Job, error) {
	f, sched, err := s.checkJob(ctx, p.JobSpec, nil)
	if err != nil {
		return store.Job{}, err
	}
	now := s.clock.Now()
	var next int64
	if p.Enabled {
		if next, err = firstFire(f.ScheduleType, sched, now); err != nil {
			return store.Job{}, err
		}
	}
	var j store.Job
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		var err error
		if j, err = tx.JobCreate(ctx, store.JobCreateParams{JobFields: f, Enabled: p.Enabled, NextFireMs: next, NowMs: now.UnixMilli()}); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActJobCreate, ObjectType: "job", ObjectID: j.ID, GroupID: j.GroupID, Changes: diffFields(nil, fieldsOf(j))})
	})
	if err != nil {
		return store.Job{}, jobNameConflictOr(err, f, fmt.Sprintf("create job %q", f.Name))
	}
	return j, nil
}

// GetJob reads a job.
func (s *Service) GetJob(ctx context.Context, id int64) (store.Job, error) {
	j, err := s.st.JobGet(ctx, id)
	if err != nil {
		return store.Job{}, notFoundOr(err, "job", id, fmt.Sprintf("read job %d", id))
	}
	return j, nil
}

// ChildJobNames names the child jobs of js (app_name/name by child id) in
// one read, for views that show a job's children by name as jobs as code
// does. A child in a group outside onlyGroups (when not nil: the groups the
// caller may read) or gone is absent from the map.
func (s *Service) ChildJobNames(ctx context.Context, js []store.Job, onlyGroups []int64) (map[int64]string, error) {
	var ids []int64
	for _, j := range js {
		ids = append(ids, j.ChildJobIDs...)
	}
	out := map[int64]string{}
	if len(ids) == 0 {
		return out, nil
	}
	names, err := s.st.JobNamesGet(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("name the child jobs of %d jobs: %w", len(js), err)
	}
	for id, n := range names {
		if n.AppName != "" && (onlyGroups == nil || slices.Contains(onlyGroups, n.GroupID)) {
			out[id] = n.AppName + "/" + n.Name
		}
	}
	return out, nil
}

// PurgedLastRuns gives the jobs of js whose last finished run
// (store.Job.LastRunID) retention has deleted since. Retention does not keep
// a job's last run (docs/retention.md: it would hold day partitions and
// old rows forever for jobs that stopped firing); the job row keeps its
// outcome and end time, and readers say the run itself is purged instead
// of linking to it.
func (s *Service) PurgedLastRuns(ctx context.Context, js []store.Job) (map[int64]bool, error) {
	var ids []int64
	for _, j := range js {
		if j.LastRunID > 0 {
			ids = append(ids, j.LastRunID)
		}
	}
	out := map[int64]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	present, err := s.st.RunsPresent(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("look up the last runs of %d jobs: %w", len(js), err)
	}
	for _, j := range js {
		if j.LastRunID > 0 && !present[j.LastRunID] {
			out[j.ID] = true
		}
	}
	return out, nil
}

// LastOutcomeNever is the last-outcome filter for jobs that have not
// finished a run.
const LastOutcomeNever = "never"

// storeJobList is the store listing for the filters of p (the cursor and
// limit are the caller's).
func storeJobList(p JobListParams) store.JobListParams {
	lp := store.JobListParams{GroupID: p.GroupID, OnlyGroups: p.OnlyGroups, Name: p.Name, Search: p.Search, ScheduleType: p.ScheduleType,
		Enabled: p.Enabled}
	if p.LastOutcome == LastOutcomeNever {
		lp.NeverRan = true
	} else {
		lp.LastOutcome = kind.RunState(p.LastOutcome)
	}
	return lp
}

// defaultJobScanWindow is how many jobs one page of a filtered job list looks at.
const defaultJobScanWindow = 20_000

// ListJobs lists jobs by id. With a name or enabled filter a page looks at
// no more than Options.JobScanWindow jobs, so it may hold fewer items than the
// limit and still have a next cursor; the listing ends when next_cursor is
// empty.
func (s *Service) ListJobs(ctx context.Context, p JobListParams) (Page[store.Job], error) {
	limit, err := pageLimit(p.Limit)
	if err != nil {
		return Page[store.Job]{}, err
	}
	if p.Sort == "name" {
		return s.listJobsByName(ctx, p, limit)
	}
	if p.Sort != "" && p.Sort != "id" {
		return Page[store.Job]{}, invalid("sort", "must be id or name, got %q", p.Sort)
	}
	after, err := decodeCursor("j", p.Cursor)
	if err != nil {
		return Page[store.Job]{}, err
	}
	if err := checkListFilters(p); err != nil {
		return Page[store.Job]{}, err
	}
	lp := storeJobList(p)
	lp.AfterID, lp.Limit = after, limit+1
	full := false
	if p.Name != "" || p.Search != "" || p.ScheduleType != "" || p.Enabled != nil {
		// No index serves these filters: look at one window of jobs per
		// page, so a search costs the same with a million jobs. The page may
		// then hold fewer items than the limit, with a next cursor.
		upTo, more, ok, err := s.st.JobScanWindow(ctx, p.GroupID, after, s.window)
		if err != nil {
			return Page[store.Job]{}, err
		}
		if !ok {
			return Page[store.Job]{Items: []store.Job{}}, nil
		}
		lp.UpToID, full = upTo, more
	}
	js, err := s.st.JobList(ctx, lp)
	if err != nil {
		return Page[store.Job]{}, fmt.Errorf("list jobs: %w", err)
	}
	page := paginate(js, limit, "j", func(j store.Job) int64 { return j.ID })
	if page.NextCursor == "" && full {
		page.NextCursor = encodeCursor("j", lp.UpToID)
	}
	return page, nil
}

// checkListFilters checks the filters of a job listing.
func checkListFilters(p JobListParams) error {
	if p.GroupID < 0 {
		return invalid("group_id", "must be a positive id, got %d", p.GroupID)
	}
	if err := checkText("name", p.Name, 0, maxNameFilterChars, false); err != nil {
		return err
	}
	if err := checkText("q", p.Search, 0, maxNameFilterChars, false); err != nil {
		return err
	}
	switch p.ScheduleType {
	case "", "none", "cron", "fixed_rate", "at":
	default:
		return invalid("schedule_type", "must be none, cron, fixed_rate or at, got %q", p.ScheduleType)
	}
	if st := kind.RunState(p.LastOutcome); p.LastOutcome != "" && p.LastOutcome != LastOutcomeNever && !st.Final() {
		return invalid("last_outcome", "must be succeeded, failed, timed_out, killed, lost, misfired or never, got %q", p.LastOutcome)
	}
	return nil
}

// listJobsByName lists jobs by name, then id. The index on (name, id)
// serves it; with filters it reads the index until a page is full.
func (s *Service) listJobsByName(ctx context.Context, p JobListParams, limit int) (Page[store.Job], error) {
	lp := storeJobList(p)
	lp.ByName, lp.Limit = true, limit+1
	if p.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(p.Cursor)
		kind, rest, _ := strings.Cut(string(raw), ":")
		num, name, ok := strings.Cut(rest, ":")
		id, perr := strconv.ParseInt(num, 10, 64)
		if err != nil || kind != "jn" || !ok || perr != nil || id <= 0 {
			return Page[store.Job]{}, invalid("cursor", "is not a cursor of this listing; pass next_cursor from the previous page unchanged, or omit it for the first page")
		}
		lp.AfterID, lp.AfterName = id, name
	}
	if err := checkListFilters(p); err != nil {
		return Page[store.Job]{}, err
	}
	js, err := s.st.JobList(ctx, lp)
	if err != nil {
		return Page[store.Job]{}, fmt.Errorf("list jobs by name: %w", err)
	}
	if js == nil {
		js = []store.Job{}
	}
	if len(js) <= limit {
		return Page[store.Job]{Items: js}, nil
	}
	last := js[limit-1]
	return Page[store.Job]{Items: js[:limit], NextCursor: base64.RawURLEncoding.EncodeToString([]byte("jn:" + strconv.FormatInt(last.ID, 10) + ":" + last.Name))}, nil
}

// UpdateJob replaces a job's editable fields. A started job whose schedule
// changes gets a new next fire time; one whose schedule is unchanged keeps it.
func (s *Service) UpdateJob(ctx context.Context, p JobUpdateParams) (store.Job, error) {
	cur, err := s.GetJob(ctx, p.ID)
	if err != nil {
		return store.Job{}, err
	}
	if p.IfVersion != 0 && cur.Version != p.IfVersion {
		return store.Job{}, &PreconditionError{Resource: "job", ID: p.ID, Version: cur.Version}
	}
	f, sched, err := s.checkJob(ctx, p.JobSpec, &cur)
	if err != nil {
		return store.Job{}, err
	}
	if err := s.checkChildCycle(ctx, p.ID, f.ChildJobIDs); err != nil {
		return store.Job{}, err
	}
	enabled := cur.Enabled
	if p.Enabled != nil {
		enabled = *p.Enabled
	}
	schedChanged := schedChanged(cur, f)
	now := s.clock.Now()
	var j store.Job
	var write func(tx *store.Store) (store.Job, error)
	switch {
	case enabled && (schedChanged || !cur.Enabled):
		next, ferr := firstFire(f.ScheduleType, sched, now)
		if ferr != nil {
			var ve *ValidationError
			if cur.Enabled && p.Enabled == nil && errors.As(ferr, &ve) {
				ve.Message += "; or stop the job first"
			}
			return store.Job{}, ferr
		}
		write = func(tx *store.Store) (store.Job, error) {
			return tx.JobUpdate(ctx, store.JobUpdateParams{ID: p.ID, IfVersion: p.IfVersion, JobFields: f, Enabled: true, NextFireMs: next, NowMs: now.UnixMilli()})
		}
	case !enabled && cur.Enabled:
		write = func(tx *store.Store) (store.Job, error) {
			return tx.JobUpdate(ctx, store.JobUpdateParams{ID: p.ID, IfVersion: p.IfVersion, JobFields: f, Enabled: false, NowMs: now.UnixMilli()})
		}
	default:
		// Same scheduling state: leave next_fire_ms to the scheduler.
		write = func(tx *store.Store) (store.Job, error) {
			return tx.JobUpdateFields(ctx, store.JobUpdateFieldsParams{ID: p.ID, IfVersion: p.IfVersion, JobFields: f, NowMs: now.UnixMilli()})
		}
	}
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		var err error
		if j, err = write(tx); err != nil {
			return err
		}
		if j.GroupID != cur.GroupID { // permission caches map the job to its old group
			if err := tx.AuthVersionBump(ctx); err != nil {
				return err
			}
		}
		return s.audit(ctx, tx, auditEntry{Action: ActJobUpdate, ObjectType: "job", ObjectID: j.ID, GroupID: j.GroupID, Changes: diffFields(fieldsOf(cur), fieldsOf(j))})
	})
	if err == nil && j.GroupID != cur.GroupID {
		s.authChanged()
	}
	if err != nil {
		return store.Job{}, jobNameConflictOr(notFoundOr(err, "job", p.ID, fmt.Sprintf("update job %d", p.ID)), f, "")
	}
	return j, nil
}

// DeleteJob deletes a job and its run history.
func (s *Service) DeleteJob(ctx context.Context, id int64) error {
	return s.DeleteJobIf(ctx, id, 0)
}

// DeleteJobIf deletes a job if it is at version ifVersion (0: any), else
// answers a *PreconditionError and deletes nothing. A job that another job
// names as a child is not deleted: the answer is a *ConflictError naming
// the parents, since deleting it would leave them a dangling child.
func (s *Service) DeleteJobIf(ctx context.Context, id, ifVersion int64) error {
	err := s.st.Tx(ctx, func(tx *store.Store) error {
		cur, err := tx.JobGet(ctx, id)
		if err != nil {
			return err
		}
		if err := refuseReferencedDelete(ctx, tx, cur); err != nil {
			return err
		}
		if err := tx.JobDeleteIf(ctx, id, ifVersion); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActJobDelete, ObjectType: "job", ObjectID: id, GroupID: cur.GroupID, Changes: map[string]any{"name": cur.Name}})
	})
	if err != nil {
		return notFoundOr(err, "job", id, fmt.Sprintf("delete job %d", id))
	}
	return nil
}

// StartJob enables a job; its next fire is the schedule's first fire after
// now. A job with schedule_type none cannot start, nor one whose schedule
// never fires again. Starting a started job changes nothing.
func (s *Service) StartJob(ctx context.Context, id int64) (store.Job, error) {
	j, err := s.GetJob(ctx, id)
	if err != nil {
		return store.Job{}, err
	}
	if j.Enabled && j.NextFireMs != 0 {
		return j, nil
	}
	sched, err := parseSchedule(j.ScheduleType, j.ScheduleConf, j.TimeZone)
	if err != nil {
		return store.Job{}, err
	}
	sched = schedule.Bound(sched, j.Window(j.Name))
	now := s.clock.Now()
	next, err := firstFire(j.ScheduleType, sched, now)
	if err != nil {
		return store.Job{}, err
	}
	if err := s.st.Tx(ctx, func(tx *store.Store) error {
		if err := tx.JobSetEnabled(ctx, store.JobSetEnabledParams{ID: id, Enabled: true, NextFireMs: next, NowMs: now.UnixMilli()}); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActJobStart, ObjectType: "job", ObjectID: id, GroupID: j.GroupID,
			Changes: map[string]any{"enabled": map[string]any{"before": j.Enabled, "after": true}}})
	}); err != nil {
		return store.Job{}, notFoundOr(err, "job", id, fmt.Sprintf("start job %d", id))
	}
	return s.GetJob(ctx, id)
}

// StopJob disables a job; runs already scheduled or running are not touched
// (kill them one by one). Stopping a stopped job changes nothing.
func (s *Service) StopJob(ctx context.Context, id int64) (store.Job, error) {
	j, err := s.GetJob(ctx, id)
	if err != nil {
		return store.Job{}, err
	}
	if !j.Enabled {
		return j, nil
	}
	if err := s.st.Tx(ctx, func(tx *store.Store) error {
		if err := tx.JobSetEnabled(ctx, store.JobSetEnabledParams{ID: id, Enabled: false, NowMs: s.nowMs()}); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActJobStop, ObjectType: "job", ObjectID: id, GroupID: j.GroupID,
			Changes: map[string]any{"enabled": map[string]any{"before": true, "after": false}}})
	}); err != nil {
		return store.Job{}, notFoundOr(err, "job", id, fmt.Sprintf("stop job %d", id))
	}
	return s.GetJob(ctx, id)
}

// TriggerJob runs a job once now, whether it is started or not. created is
// false when the idempotency key was seen before and run is the earlier run.
func (s *Service) TriggerJob(ctx context.Context, p TriggerParams) (run store.Run, created bool, err error) {
	if p.Params != nil {
		if err := checkBytes("params", *p.Params, MaxParamsBytes); err != nil {
			return store.Run{}, false, err
		}
	}
	if err := checkIdempotencyKey(p.IdempotencyKey); err != nil {
		return store.Run{}, false, err
	}
	if p.ShardTotal != nil && (*p.ShardTotal < 1 || *p.ShardTotal > MaxShardCount) {
		return store.Run{}, false, invalid("shard_total", "must be 1..%d, got %d", MaxShardCount, *p.ShardTotal)
	}
	if p.ShardIndex != nil && *p.ShardIndex < 0 {
		return store.Run{}, false, invalid("shard_index", "must be 0 or more (shards are numbered from 0), got %d", *p.ShardIndex)
	}
	if p.ShardIndex != nil && p.ShardTotal != nil && *p.ShardIndex >= *p.ShardTotal {
		return store.Run{}, false, invalid("shard_index", "must be below shard_total (%d), got %d", *p.ShardTotal, *p.ShardIndex)
	}
	job, err := s.GetJob(ctx, p.JobID)
	if err != nil {
		return store.Run{}, false, err
	}
	if s.trig == nil {
		return store.Run{}, false, ErrNoScheduler
	}
	if p.IdempotencyKey != "" {
		fp := triggerFingerprint(p)
		got, err := s.st.TriggerFingerprintClaim(ctx, p.JobID, p.IdempotencyKey, fp, s.nowMs())
		if err != nil {
			return store.Run{}, false, fmt.Errorf("trigger job %d: %w", p.JobID, err)
		}
		if got != fp {
			return store.Run{}, false, &KeyReusedError{Key: p.IdempotencyKey}
		}
	}
	changes := map[string]any{}
	if p.Params != nil {
		changes["params"] = *p.Params
	}
	if p.Target != "" {
		changes["target"] = p.Target
	}
	tp := scheduler.TriggerParams{JobID: p.JobID, Params: p.Params, IdempotencyKey: p.IdempotencyKey, Target: p.Target, OnlyShard: p.ShardIndex}
	if p.ShardTotal != nil {
		changes["shard_total"] = *p.ShardTotal
		tp.ShardTotal = *p.ShardTotal
	}
	if p.ShardIndex != nil {
		changes["shard_index"] = *p.ShardIndex
	}
	record := func(ctx context.Context, tx *store.Store, run store.Run) error {
		changes["run_id"] = run.ID
		return s.audit(ctx, tx, auditEntry{Action: ActJobTrigger, ObjectType: "job", ObjectID: job.ID, GroupID: job.GroupID, Changes: changes})
	}
	tp.Record = record
	run, created, err = s.trig.Trigger(ctx, tp)
	if errors.Is(err, scheduler.ErrTargetNotCandidate) {
		return store.Run{}, false, invalid("target", "%v", err)
	}
	var shardErr *scheduler.ShardRangeError
	if errors.As(err, &shardErr) {
		return store.Run{}, false, invalid("shard_index", "%v", err)
	}
	if err != nil {
		return store.Run{}, false, notFoundOr(err, "job", p.JobID, fmt.Sprintf("trigger job %d", p.JobID))
	}
	return run, created, nil
}

func checkIdempotencyKey(k string) error {
	if k == "" {
		return nil
	}
	if len(k) > MaxIdempotencyKey {
		return invalid("Idempotency-Key", "is %d characters, more than %d; use a UUID or a similar short unique string", len(k), MaxIdempotencyKey)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x21 || c > 0x7e {
			return invalid("Idempotency-Key", "must be printable ASCII without spaces (a UUID, for example)")
		}
	}
	return nil
}

// JobNextFires previews the next n fire times of a saved job's schedule
// after now (whether the job is started or not).
func (s *Service) JobNextFires(ctx context.Context, id int64, n int) (NextFires, error) {
	j, err := s.GetJob(ctx, id)
	if err != nil {
		return NextFires{}, err
	}
	o := JobOptionsView(j.JobOptions)
	return s.PreviewSchedule(ctx, PreviewParams{ScheduleType: j.ScheduleType, ScheduleConf: j.ScheduleConf, TimeZone: j.TimeZone, N: n,
		Name: j.Name, ActiveFrom: o.ActiveFrom, ActiveUntil: o.ActiveUntil, FlexibleWindowMin: o.FlexibleWindowMin})
}

// PreviewSchedule previews the next n fire times of a schedule after now,
// without saving anything. Errors name the field at fault.
func (s *Service) PreviewSchedule(_ context.Context, p PreviewParams) (NextFires, error) {
	n := p.N
	if n == 0 {
		n = DefaultPreviewN
	}
	if n < 1 || n > MaxPreviewN {
		return NextFires{}, invalid("n", "must be 1..%d, got %d", MaxPreviewN, p.N)
	}
	kind := p.ScheduleType
	if kind == "" {
		return NextFires{}, invalid("schedule_type", "is required: one of none, cron, fixed_rate, at")
	}
	tz := p.TimeZone
	if tz == "" {
		tz = DefaultTimeZone
	}
	sched, err := parseSchedule(kind, p.ScheduleConf, tz)
	if err != nil {
		return NextFires{}, err
	}
	opts, err := checkJobOptions(JobSpec{ActiveFrom: p.ActiveFrom, ActiveUntil: p.ActiveUntil, FlexibleWindowMin: p.FlexibleWindowMin})
	if err != nil {
		return NextFires{}, err
	}
	sched = schedule.Bound(sched, opts.Window(p.Name))
	loc, err := schedule.LoadZone(tz)
	if err != nil { // parsed above, so this does not happen
		return NextFires{}, invalid("time_zone", "%v", err)
	}
	times := schedule.Preview(sched, s.clock.Now(), n)
	for i := range times {
		times[i] = times[i].In(loc)
	}
	if times == nil {
		times = []time.Time{}
	}
	return NextFires{TimeZone: tz, Times: times, Note: previewNote(opts, p.Name, s.clock.Now(), len(times) < n)}, nil
}

// previewNote says what the options do to a preview.
func previewNote(o store.JobOptions, name string, now time.Time, short bool) string {
	var notes []string
	if o.ActiveUntilMs > 0 && short {
		end := time.UnixMilli(o.ActiveUntilMs).UTC().Format(time.RFC3339)
		if now.UnixMilli() > o.ActiveUntilMs {
			notes = append(notes, "no fire: the active window ended at "+end)
		} else {
			notes = append(notes, "no fire after the active window ends at "+end)
		}
	}
	if o.ActiveFromMs > now.UnixMilli() {
		notes = append(notes, "no fire before the active window opens at "+time.UnixMilli(o.ActiveFromMs).UTC().Format(time.RFC3339))
	}
	if o.FlexWindowMin > 0 {
		notes = append(notes, fmt.Sprintf("each fire is %s after its schedule time (this job's place in its %d-minute flexible window)",
			schedule.FlexOffset(name, o.FlexWindowMin), o.FlexWindowMin))
	}
	return strings.Join(notes, "; ")
}

// jobNameConflictOr turns a taken job name into a ConflictError on "name".
func jobNameConflictOr(err error, f store.JobFields, doing string) error {
	if errors.Is(err, store.ErrConflict) {
		return &ConflictError{Field: "name", Message: fmt.Sprintf("the group already has a job named %q; job names are unique within a group (choose another name, or edit that job)", f.Name)}
	}
	if doing == "" {
		return err
	}
	return fmt.Errorf("%s: %w", doing, err)
}

// GetJobByName reads a job by its identity: its group's app name and its name.
func (s *Service) GetJobByName(ctx context.Context, appName, name string) (store.Job, error) {
	j, err := s.st.JobGetByName(ctx, appName, name)
	if errors.Is(err, store.ErrNotFound) {
		return store.Job{}, &NotFoundError{Resource: "job", Name: fmt.Sprintf("%s/%s", appName, name)}
	}
	if err != nil {
		return store.Job{}, err
	}
	return j, nil
}

// triggerFingerprint identifies what a trigger request asked for, so an
// idempotency key reused for another request is refused.
func triggerFingerprint(p TriggerParams) string {
	h := sha256.New()
	if p.Params == nil {
		h.Write([]byte{0})
	} else {
		h.Write([]byte{1})
		h.Write([]byte(*p.Params))
	}
	h.Write([]byte{0})
	h.Write([]byte(p.Target))
	// Shard options only when given: fingerprints of triggers without them
	// stay what they were before shard options existed.
	for _, v := range []*int{p.ShardTotal, p.ShardIndex} {
		if v != nil {
			fmt.Fprintf(h, "\x00%d", *v)
		} else if p.ShardTotal != nil || p.ShardIndex != nil {
			h.Write([]byte{0, '-'})
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// refuseReferencedDelete answers a *ConflictError naming the jobs that have
// j among their children, or else the workflows with a node that runs it
// (at most five of them, and how many more).
func refuseReferencedDelete(ctx context.Context, tx *store.Store, j store.Job) error {
	parents, err := tx.JobParentsOf(ctx, j.ID)
	if err != nil {
		return err
	}
	var names []string
	for _, p := range parents {
		if p.ID == j.ID {
			continue
		}
		if len(names) == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(parents)-5))
			break
		}
		names = append(names, fmt.Sprintf("%s/%s (job %d)", p.AppName, p.Name, p.ID))
	}
	if len(names) > 0 {
		return &ConflictError{Field: "child_job_ids", Message: fmt.Sprintf(
			"job %d (%s) is a child job of %s; remove it from their child_job_ids first, then delete it",
			j.ID, j.Name, strings.Join(names, ", "))}
	}
	// A workflow's node that runs the job would fail at every run.
	flows, err := tx.WorkflowsUsingJob(ctx, j.ID)
	if err != nil {
		return err
	}
	for i, w := range flows {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(flows)-5))
			break
		}
		names = append(names, fmt.Sprintf("%s/%s (workflow %d)", w.AppName, w.Name, w.ID))
	}
	if len(names) > 0 {
		return &ConflictError{Message: fmt.Sprintf(
			"job %d (%s) is run by a node of %s; take it out of those workflows first, then delete it",
			j.ID, j.Name, strings.Join(names, ", "))}
	}
	return nil
}

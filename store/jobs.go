package store

import (
	"time"

	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ringjob/ringjob/schedule"

	"github.com/ringjob/ringjob/internal/kind"
)

// JobFields are the user-editable fields of a job.
type JobFields struct {
	GroupID       int64
	Name          string
	Description   string
	ScheduleType  string
	ScheduleConf  string
	TimeZone      string
	MisfirePolicy kind.Misfire
	Handler       string
	Params        string
	RouteStrategy kind.Route
	BlockStrategy kind.Block
	TimeoutSec    int
	RetryCount    int
	ShardCount    int
	// PinnedTargets restricts the job's candidates to these target URIs
	// (empty = all candidates of its group).
	PinnedTargets    []string
	RetryBackoff     kind.Backoff
	RetryDelaySec    int
	RetryMaxDelaySec int
	ChildJobIDs      []int64
	MaxInFlight      int
	AlarmChannels    []string
	JobOptions
}

// JobOptions are the schedule options cloud schedulers have (migration
// 0087 says what each column means): when a job may fire, how far each fire
// may move, how old a fire may get, what follows its last fire, and where a
// failed one is delivered.
type JobOptions struct {
	ActiveFromMs       int64 // 0 = open
	ActiveUntilMs      int64 // 0 = open
	FlexWindowMin      int   // 0 = fire at the schedule time
	MaxEventAgeSec     int   // 0 = no limit
	AfterCompletion    kind.AfterCompletion
	FailureDestination string // "" = the group's
}

// Window is the job's active window and flexible-window offset, for
// schedule.Bound.
func (o JobOptions) Window(jobName string) schedule.Window {
	var w schedule.Window
	if o.ActiveFromMs > 0 {
		w.Start = time.UnixMilli(o.ActiveFromMs)
	}
	if o.ActiveUntilMs > 0 {
		w.End = time.UnixMilli(o.ActiveUntilMs)
	}
	w.Offset = schedule.FlexOffset(jobName, o.FlexWindowMin)
	return w
}

// jobFieldCols are the columns of JobFields, in the order of their args:
// every statement that writes a job's fields writes them from these two.
const jobFieldCols = `group_id, name, description, schedule_type, schedule_conf, time_zone, misfire_policy,
 handler, params, route_strategy, block_strategy, timeout_sec, retry_count, shard_count, pinned_targets,
 retry_backoff, retry_delay_sec, retry_max_delay_sec, child_job_ids, max_in_flight, alarm_channels,
 active_from_ms, active_until_ms, flex_window_min, max_event_age_sec, after_completion, failure_destination`

// jobFieldCount is how many columns jobFieldCols names.
var jobFieldCount = strings.Count(jobFieldCols, ",") + 1

// jobFieldAssign is jobFieldCols as "col = ?" assignments for an UPDATE.
var jobFieldAssign = func() string {
	cols := strings.Split(jobFieldCols, ",")
	for i, c := range cols {
		cols[i] = strings.TrimSpace(c) + " = ?"
	}
	return strings.Join(cols, ", ")
}()

// args are the values of jobFieldCols.
func (f JobFields) args() []any {
	return []any{f.GroupID, f.Name, f.Description, f.ScheduleType, f.ScheduleConf, f.TimeZone, f.MisfirePolicy,
		f.Handler, f.Params, f.RouteStrategy, f.BlockStrategy, f.TimeoutSec, f.RetryCount, f.ShardCount, pinsJSON(f.PinnedTargets),
		backoffOr(f.RetryBackoff), f.RetryDelaySec, f.RetryMaxDelaySec, joinIDs(f.ChildJobIDs), f.MaxInFlight, strings.Join(f.AlarmChannels, ","),
		f.ActiveFromMs, f.ActiveUntilMs, f.FlexWindowMin, f.MaxEventAgeSec, string(f.AfterCompletion), f.FailureDestination}
}

// JobCreateParams create a job. Enabled jobs need NextFireMs (computed by
// the caller from the schedule).
type JobCreateParams struct {
	JobFields
	Enabled    bool
	NextFireMs int64
	NowMs      int64
}

const jobCols = "id, group_id, name, description, schedule_type, schedule_conf, time_zone, misfire_policy, handler, params, route_strategy, block_strategy, timeout_sec, retry_count, shard_count, enabled, lock_partition, next_fire_ms, last_fire_ms, created_ms, updated_ms, COALESCE(pinned_targets, ''), retry_backoff, retry_delay_sec, retry_max_delay_sec, child_job_ids, max_in_flight, alarm_channels, alarm_state, version, last_outcome, last_run_id, last_finished_ms, active_from_ms, active_until_ms, flex_window_min, max_event_age_sec, after_completion, failure_destination"

func scanJob(sc interface{ Scan(...any) error }) (Job, error) {
	var j Job
	var enabled int
	var pins, children, channels string
	err := sc.Scan(&j.ID, &j.GroupID, &j.Name, &j.Description, &j.ScheduleType, &j.ScheduleConf, &j.TimeZone, &j.MisfirePolicy,
		&j.Handler, &j.Params, &j.RouteStrategy, &j.BlockStrategy, &j.TimeoutSec, &j.RetryCount, &j.ShardCount,
		&enabled, &j.LockPartition, &j.NextFireMs, &j.LastFireMs, &j.CreatedMs, &j.UpdatedMs, &pins,
		&j.RetryBackoff, &j.RetryDelaySec, &j.RetryMaxDelaySec, &children, &j.MaxInFlight, &channels, &j.AlarmState, &j.Version,
		&j.LastOutcome, &j.LastRunID, &j.LastFinishedMs,
		&j.ActiveFromMs, &j.ActiveUntilMs, &j.FlexWindowMin, &j.MaxEventAgeSec, &j.AfterCompletion, &j.FailureDestination)
	j.Enabled = enabled != 0
	j.ChildJobIDs = splitIDs(children)
	j.AlarmChannels = splitNames(channels)
	if err == nil && pins != "" {
		if jerr := json.Unmarshal([]byte(pins), &j.PinnedTargets); jerr != nil {
			return j, fmt.Errorf("decode pinned targets of job %d: %w", j.ID, jerr)
		}
	}
	return j, err
}

// JobCreate inserts a job and assigns its lock partition (id mod the number of
// lock partitions).
func (s *Store) JobCreate(ctx context.Context, p JobCreateParams) (job Job, err error) {
	err = s.Tx(ctx, func(tx *Store) error {
		job, err = tx.jobCreate(ctx, p)
		return err
	})
	return job, err
}

func (s *Store) jobCreate(ctx context.Context, p JobCreateParams) (Job, error) {
	tx := s.db
	f := p.JobFields
	next := p.NextFireMs
	if !p.Enabled {
		next = 0
	}
	res, err := tx.ExecContext(ctx, "INSERT INTO jobs ("+jobFieldCols+", enabled, next_fire_ms, created_ms, updated_ms) VALUES ("+placeholders(jobFieldCount+4)+")",
		append(f.args(), boolInt(p.Enabled), next, p.NowMs, p.NowMs)...)
	if err != nil {
		return Job{}, s.jobWriteError(err, f, fmt.Sprintf("insert job %q", p.Name))
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Job{}, fmt.Errorf("insert job %q: read id: %w", p.Name, err)
	}
	var parts int64
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM lock_partitions").Scan(&parts); err != nil {
		return Job{}, fmt.Errorf("create job %q: count lock partitions: %w", p.Name, err)
	}
	if parts < 1 {
		parts = 1
	}
	if _, err := tx.ExecContext(ctx, "UPDATE jobs SET lock_partition = ? WHERE id = ?", id%parts, id); err != nil {
		return Job{}, fmt.Errorf("create job %q: set partition: %w", p.Name, err)
	}
	return s.JobGet(ctx, id)
}

// JobUpdateParams replace a job's fields and scheduling state.
type JobUpdateParams struct {
	ID int64
	// IfVersion makes the write conditional: it changes nothing and fails
	// with ErrVersionMismatch unless the job is at this version (0: any).
	IfVersion int64
	JobFields
	Enabled    bool
	NextFireMs int64
	NowMs      int64
}

// JobUpdate replaces a job's editable fields.
func (s *Store) JobUpdate(ctx context.Context, p JobUpdateParams) (Job, error) {
	f := p.JobFields
	next := p.NextFireMs
	if !p.Enabled {
		next = 0
	}
	res, err := s.db.ExecContext(ctx, "UPDATE jobs SET "+jobFieldAssign+", enabled = ?, next_fire_ms = ?, updated_ms = ?, version = version + 1 WHERE id = ?"+ifVersionCond,
		append(f.args(), boolInt(p.Enabled), next, p.NowMs, p.ID, p.IfVersion, p.IfVersion)...)
	if err != nil {
		return Job{}, s.jobWriteError(err, f, fmt.Sprintf("update job %d", p.ID))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if err := s.versionMismatchOr(ctx, "jobs", "job", p.ID, p.IfVersion); err != nil {
			return Job{}, err
		}
	}
	return s.JobGet(ctx, p.ID)
}

// JobSetEnabledParams start or stop a job.
type JobSetEnabledParams struct {
	ID         int64
	Enabled    bool
	NextFireMs int64 // ignored when stopping
	NowMs      int64
}

// JobSetEnabled starts (with its next fire time) or stops a job.
func (s *Store) JobSetEnabled(ctx context.Context, p JobSetEnabledParams) error {
	next := p.NextFireMs
	if !p.Enabled {
		next = 0
	}
	res, err := s.db.ExecContext(ctx, "UPDATE jobs SET enabled = ?, next_fire_ms = ?, updated_ms = ?, version = version + 1 WHERE id = ?",
		boolInt(p.Enabled), next, p.NowMs, p.ID)
	if err != nil {
		return fmt.Errorf("set job %d enabled=%v: %w", p.ID, p.Enabled, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, err := s.JobGet(ctx, p.ID); err != nil {
			return err
		}
	}
	return nil
}

// JobGet reads a job by id.
func (s *Store) JobGet(ctx context.Context, id int64) (Job, error) {
	j, err := scanJob(s.db.QueryRowContext(ctx, "SELECT "+jobCols+" FROM jobs WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Job{}, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Job{}, fmt.Errorf("read job %d: %w", id, err)
	}
	return j, nil
}

// JobGetMany reads jobs by id; missing ids are absent from the map.
func (s *Store) JobGetMany(ctx context.Context, ids []int64) (map[int64]Job, error) {
	out := make(map[int64]Job, len(ids))
	for _, chunk := range chunkInt64(ids, 1000) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := s.db.QueryContext(ctx, "SELECT "+jobCols+" FROM jobs WHERE id IN ("+placeholders(len(chunk))+")", args...)
		if err != nil {
			return nil, fmt.Errorf("read %d jobs: %w", len(chunk), err)
		}
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("read jobs: %w", err)
			}
			out[j.ID] = j
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read jobs: %w", err)
		}
	}
	return out, nil
}

// JobListParams filter a job listing. Results are ordered by id, after AfterID.
type JobListParams struct {
	GroupID int64 // 0 = all
	// OnlyGroups, when not nil, keeps only jobs of these groups (empty: none).
	OnlyGroups []int64
	Name       string // substring match, "" = all
	// Search matches a substring of the name, the handler or a pinned
	// target; "" = all.
	Search       string
	ScheduleType string // "" = all
	Enabled      *bool
	// LastOutcome keeps jobs whose last finished run ended so ("" = all;
	// NeverRan = jobs that have finished none); served by jobs_outcome and
	// jobs_outcome_name.
	LastOutcome kind.RunState
	NeverRan    bool
	AfterID     int64
	// ByName orders by name, then id, after (AfterName, AfterID); served
	// by index jobs_name.
	ByName    bool
	AfterName string
	Limit     int
	// UpToID, when > 0, ends the listing at that id (a window of a bounded
	// scan, see JobScanWindow).
	UpToID int64
}

// JobScanWindow returns the id that ends a window of at most scan jobs
// after afterID (in the group when groupID > 0), read from an index; ok is
// false when no job follows afterID, and full reports whether the window
// holds scan jobs (so more may follow). A filter that no index serves (a
// name substring, enabled) looks at one window per call, so a page costs the
// same with a million jobs as with a thousand.
func (s *Store) JobScanWindow(ctx context.Context, groupID, afterID int64, scan int) (upTo int64, full, ok bool, err error) {
	q := "SELECT id FROM jobs WHERE id > ? ORDER BY id LIMIT ?"
	args := []any{afterID, scan}
	if groupID > 0 {
		q = "SELECT id FROM jobs WHERE group_id = ? AND id > ? ORDER BY id LIMIT ?"
		args = []any{groupID, afterID, scan}
	}
	var n int
	var hi sql.NullInt64
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*), MAX(id) FROM ("+q+") w", args...).Scan(&n, &hi); err != nil {
		return 0, false, false, fmt.Errorf("list jobs: find the scan window: %w", err)
	}
	return hi.Int64, n >= scan, hi.Valid, nil
}

// JobList lists jobs.
func (s *Store) JobList(ctx context.Context, p JobListParams) ([]Job, error) {
	where := []string{"1=1"}
	var args []any
	order := " ORDER BY id LIMIT ?"
	if p.ByName {
		if p.AfterID > 0 {
			where = append(where, "(name > ? OR (name = ? AND id > ?))")
			args = append(args, p.AfterName, p.AfterName, p.AfterID)
		}
		order = " ORDER BY name, id LIMIT ?"
	} else {
		where = append(where, "id > ?")
		args = append(args, p.AfterID)
	}
	if p.UpToID > 0 {
		where = append(where, "id <= ?")
		args = append(args, p.UpToID)
	}
	if p.GroupID != 0 {
		where = append(where, "group_id = ?")
		args = append(args, p.GroupID)
	}
	if p.Name != "" {
		where = append(where, "name LIKE ? ESCAPE '!'")
		args = append(args, "%"+likeEscape(p.Name)+"%")
	}
	if p.Search != "" {
		like := "%" + likeEscape(p.Search) + "%"
		where = append(where, "(name LIKE ? ESCAPE '!' OR handler LIKE ? ESCAPE '!' OR pinned_targets LIKE ? ESCAPE '!')")
		args = append(args, like, like, like)
	}
	if p.ScheduleType != "" {
		where = append(where, "schedule_type = ?")
		args = append(args, p.ScheduleType)
	}
	if p.Enabled != nil {
		where = append(where, "enabled = ?")
		args = append(args, boolInt(*p.Enabled))
	}
	switch {
	case p.NeverRan:
		where = append(where, "last_outcome = ''")
	case p.LastOutcome != "":
		where = append(where, "last_outcome = ?")
		args = append(args, p.LastOutcome)
	}
	limit := p.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	args = append(args, limit)
	q, args := onlyGroups("SELECT "+jobCols+" FROM jobs WHERE "+strings.Join(where, " AND "), args[:len(args)-1], "group_id", p.OnlyGroups)
	rows, err := s.db.QueryContext(ctx, q+order, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	var out []Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// JobDelete deletes a job and its runs.
func (s *Store) JobDelete(ctx context.Context, id int64) error {
	return s.JobDeleteIf(ctx, id, 0)
}

// JobDeleteIf deletes a job and its runs if it is at version ifVersion (0:
// any), else fails with ErrVersionMismatch and deletes nothing.
func (s *Store) JobDeleteIf(ctx context.Context, id, ifVersion int64) error {
	return s.Tx(ctx, func(s *Store) error { return s.jobDelete(ctx, id, ifVersion) })
}

func (s *Store) jobDelete(ctx context.Context, id, ifVersion int64) error {
	tx := s.db
	res, err := tx.ExecContext(ctx, "DELETE FROM jobs WHERE id = ?"+ifVersionCond, id, ifVersion, ifVersion)
	if err != nil {
		return fmt.Errorf("delete job %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if err := s.versionMismatchOr(ctx, "jobs", "job", id, ifVersion); err != nil {
			return err
		}
		return fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	for _, q := range s.jobDeleteCascade() {
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			return fmt.Errorf("delete job %d: %w", id, err)
		}
	}
	return nil
}

// jobDeleteCascade lists the statements (taking the job id) that remove what
// belongs to a job. Later migrations add tables here.
func (s *Store) jobDeleteCascade() []string {
	return []string{
		"DELETE FROM run_logs WHERE run_id IN (SELECT id FROM runs WHERE job_id = ?)",
		"DELETE FROM runs WHERE job_id = ?",
		"DELETE FROM run_keys WHERE job_id = ?",
		"DELETE FROM trigger_fingerprints WHERE job_id = ?",
	}
}

func likeEscape(s string) string {
	return strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(s)
}

func chunkInt64(ids []int64, n int) [][]int64 {
	var out [][]int64
	for len(ids) > n {
		out = append(out, ids[:n])
		ids = ids[n:]
	}
	if len(ids) > 0 {
		out = append(out, ids)
	}
	return out
}

// pinsJSON encodes pinned targets (NULL when none).
func pinsJSON(pins []string) any {
	if len(pins) == 0 {
		return nil
	}
	b, err := json.Marshal(pins)
	if err != nil {
		return nil
	}
	return string(b)
}

func backoffOr(b kind.Backoff) kind.Backoff {
	if b == "" {
		return kind.BackoffFixed
	}
	return b
}

func joinIDs(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ",")
}

func splitIDs(s string) []int64 {
	var out []int64
	for _, p := range strings.Split(s, ",") {
		if id, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64); err == nil && id > 0 {
			out = append(out, id)
		}
	}
	return out
}

func splitNames(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// jobWriteError names a taken job name as ErrConflict.
func (s *Store) jobWriteError(err error, f JobFields, doing string) error {
	if s.d.isDuplicate(err) {
		return fmt.Errorf("%s: group %d already has a job named %q: %w", doing, f.GroupID, f.Name, ErrConflict)
	}
	return fmt.Errorf("%s: %w", doing, err)
}

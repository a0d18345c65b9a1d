package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ringjob/ringjob/internal/kind"
)

const runCols = "id, job_id, group_id, scheduled_ms, shard_index, shard_total, attempt, trigger_type, state, owner, target, handler, params, created_ms, dispatched_ms, finished_ms, late, result_code, message, COALESCE(idempotency_key, ''), COALESCE(attempts, ''), retry_of, alarm_status, handed_ms, kill_requested, window_offset_ms, CASE WHEN followup = 0 THEN 1 ELSE 0 END"

func scanRun(sc interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var late, kill, pending int
	err := sc.Scan(&r.ID, &r.JobID, &r.GroupID, &r.ScheduledMs, &r.ShardIndex, &r.ShardTotal, &r.Attempt, &r.TriggerType, &r.State,
		&r.Owner, &r.Target, &r.Handler, &r.Params, &r.CreatedMs, &r.DispatchedMs, &r.FinishedMs, &late, &r.ResultCode, &r.Message, &r.IdempotencyKey, &r.Attempts, &r.RetryOf, &r.AlarmStatus,
		&r.HandedMs, &kill, &r.WindowOffsetMs, &pending)
	r.Late, r.KillRequested, r.FollowupPending = late != 0, kill != 0, pending != 0
	return r, err
}

// RunCreateParams create one run outside the pre-read (manual, retry, child).
type RunCreateParams struct {
	JobID          int64
	GroupID        int64
	ScheduledMs    int64
	ShardIndex     int
	ShardTotal     int
	Attempt        int
	SchedFire      bool // true for runs derived from a schedule fire (retries of them): unique per fire
	TriggerType    kind.Trigger
	Owner          string
	Handler        string
	Params         string
	IdempotencyKey string // "" = none; a repeated key for the same job returns the existing run
	RetryOf        int64  // the run this one retries, 0 = none
	// FollowSuccess arms the run's follow-up: its job has child jobs, so
	// its success is recorded as a pending follow-up (see followupSQL).
	FollowSuccess bool
	CreatedMs     int64
}

// RunCreate inserts one run in state scheduled. With an idempotency key that
// the job has used before, it returns the earlier run and created=false.
// Keys live in run_keys, claimed in the run's own transaction, so two
// concurrent requests with one key make one run.
func (s *Store) RunCreate(ctx context.Context, p RunCreateParams) (run Run, created bool, err error) {
	if s.inTx {
		// The caller's transaction (a trigger and its audit event): the run
		// is made, or an earlier one found, in it.
		id, made, byFire, err := s.insertRun(ctx, s.db, p)
		if err != nil {
			return Run{}, false, err
		}
		return s.runCreated(ctx, p, id, made, byFire)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Run{}, false, fmt.Errorf("create run for job %d: begin: %w", p.JobID, err)
	}
	defer tx.Rollback()
	id, made, byFire, err := s.insertRun(ctx, tx, p)
	if err != nil {
		return Run{}, false, err
	}
	if made {
		if err := tx.Commit(); err != nil {
			return Run{}, false, fmt.Errorf("create run for job %d: commit: %w", p.JobID, err)
		}
	} else {
		// The earlier run is read outside the transaction (SQLite has one
		// connection).
		_ = tx.Rollback()
	}
	return s.runCreated(ctx, p, id, made, byFire)
}

// runCreated reads the run insertRun made, or found.
func (s *Store) runCreated(ctx context.Context, p RunCreateParams, id int64, made, byFire bool) (Run, bool, error) {
	if byFire {
		existing, err := s.runByFire(ctx, p)
		if err != nil {
			return Run{}, false, fmt.Errorf("create run for job %d: duplicate, and reading the existing run failed: %w", p.JobID, err)
		}
		return existing, false, nil
	}
	if made {
		s.hints.remember([]int64{id}, []int64{p.ScheduledMs})
	}
	r, err := s.RunGet(ctx, id)
	return r, made && err == nil, err
}

// execQuerier is a transaction: *sql.Tx or a txConn.
type execQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// insertRun inserts p's run in q and returns its id with made=true. Or it
// finds the run made earlier: by p's idempotency key (its id, made=false),
// or by its schedule fire (byFire=true; read it with runByFire).
func (s *Store) insertRun(ctx context.Context, q execQuerier, p RunCreateParams) (id int64, made, byFire bool, err error) {
	var key, sched any
	if p.IdempotencyKey != "" {
		key = p.IdempotencyKey
	}
	if p.SchedFire {
		sched = 1
	}
	if p.ShardTotal < 1 {
		p.ShardTotal = 1
	}
	if key != nil {
		res, err := q.ExecContext(ctx, s.d.insertIgnore()+" INTO run_keys (job_id, idempotency_key, run_id, created_ms) VALUES (?, ?, 0, ?)", p.JobID, p.IdempotencyKey, p.CreatedMs)
		if err != nil {
			return 0, false, false, fmt.Errorf("create run for job %d: claim idempotency key: %w", p.JobID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if err := q.QueryRowContext(ctx, "SELECT run_id FROM run_keys WHERE job_id = ? AND idempotency_key = ?", p.JobID, p.IdempotencyKey).Scan(&id); err != nil {
				return 0, false, false, fmt.Errorf("create run for job %d: read the run of idempotency key: %w", p.JobID, err)
			}
			return id, false, false, nil
		}
	}
	var follow any
	if p.FollowSuccess {
		follow = followupArmed
	}
	// A schedule fire made before is found by its fire key (runs_fire).
	skip := ""
	if sched != nil {
		skip = s.d.skipDuplicate()
	}
	res, err := q.ExecContext(ctx, `INSERT INTO runs (job_id, group_id, scheduled_ms, shard_index, shard_total, attempt, sched_fire, trigger_type, state, owner,
 handler, params, message, created_ms, idempotency_key, retry_of, followup) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,'',?,?,?,?)`+skip,
		p.JobID, p.GroupID, p.ScheduledMs, p.ShardIndex, p.ShardTotal, p.Attempt, sched, p.TriggerType, kind.RunScheduled, p.Owner,
		p.Handler, p.Params, p.CreatedMs, key, p.RetryOf, follow)
	if err != nil {
		if s.d.isDuplicate(err) && key == nil {
			return 0, false, true, nil
		}
		return 0, false, false, fmt.Errorf("create run for job %d: %w", p.JobID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 && key == nil {
		return 0, false, true, nil // skipped as a duplicate (skipDuplicate)
	}
	if id, err = res.LastInsertId(); err != nil {
		return 0, false, false, fmt.Errorf("create run for job %d: read id: %w", p.JobID, err)
	}
	if key != nil {
		if _, err := q.ExecContext(ctx, "UPDATE run_keys SET run_id = ? WHERE job_id = ? AND idempotency_key = ?", id, p.JobID, p.IdempotencyKey); err != nil {
			return 0, false, false, fmt.Errorf("create run for job %d: record idempotency key: %w", p.JobID, err)
		}
	}
	return id, true, false, nil
}

// runByFire reads the schedule-derived run of a fire (job, time, shard, attempt).
func (s *Store) runByFire(ctx context.Context, p RunCreateParams) (Run, error) {
	return scanRun(s.db.QueryRowContext(ctx, "SELECT "+runCols+" FROM runs WHERE job_id = ? AND scheduled_ms = ? AND shard_index = ? AND attempt = ? AND sched_fire = 1",
		p.JobID, p.ScheduledMs, p.ShardIndex, p.Attempt))
}

// RunGet reads a run by id.
func (s *Store) RunGet(ctx context.Context, id int64) (Run, error) {
	prune, pargs := s.pruneRuns([]int64{id})
	r, err := scanRun(s.db.QueryRowContext(ctx, "SELECT "+runCols+" FROM runs WHERE id = ?"+prune, append([]any{id}, pargs...)...))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Run{}, fmt.Errorf("read run %d: %w", id, err)
	}
	rememberRuns(s.hints, []Run{r})
	return r, nil
}

// RunListParams filter a run listing; results are newest first, before BeforeID.
type RunListParams struct {
	JobID   int64
	GroupID int64
	// OnlyGroups, when not nil, keeps only runs of these groups (empty: none).
	OnlyGroups  []int64
	States      []kind.RunState
	FromMs      int64 // scheduled_ms >= FromMs when > 0
	ToMs        int64 // scheduled_ms < ToMs when > 0
	TriggerType kind.Trigger
	// Targets keeps runs sent to one of these targets (empty = all). No
	// index serves it: bound the scan with FromID.
	Targets  []string
	BeforeID int64 // 0 = from the newest
	FromID   int64 // id >= FromID when > 0 (a window of a bounded scan)
	Limit    int
}

// RunList lists runs.
func (s *Store) RunList(ctx context.Context, p RunListParams) ([]Run, error) {
	where := []string{"1=1"}
	var args []any
	if p.BeforeID > 0 {
		where = append(where, "id < ?")
		args = append(args, p.BeforeID)
	}
	if p.JobID != 0 {
		where = append(where, "job_id = ?")
		args = append(args, p.JobID)
	}
	if p.GroupID != 0 {
		where = append(where, "group_id = ?")
		args = append(args, p.GroupID)
	}
	if len(p.States) > 0 {
		where = append(where, "state IN ("+placeholders(len(p.States))+")")
		for _, st := range p.States {
			args = append(args, st)
		}
	}
	if p.FromMs > 0 {
		where = append(where, "scheduled_ms >= ?")
		args = append(args, p.FromMs)
	}
	if p.ToMs > 0 {
		where = append(where, "scheduled_ms < ?")
		args = append(args, p.ToMs)
	}
	if p.TriggerType != "" {
		where = append(where, "trigger_type = ?")
		args = append(args, p.TriggerType)
	}
	if p.FromID > 0 {
		where = append(where, "id >= ?")
		args = append(args, p.FromID)
	}
	if len(p.Targets) > 0 {
		where = append(where, "target IN ("+placeholders(len(p.Targets))+")")
		for _, t := range p.Targets {
			args = append(args, t)
		}
	}
	limit := p.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	args = append(args, limit)
	q, args := onlyGroups("SELECT "+runCols+" FROM runs WHERE "+strings.Join(where, " AND "), args[:len(args)-1], "group_id", p.OnlyGroups)
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY id DESC LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// RunClaimParams claim runs for dispatch.
type RunClaimParams struct {
	IDs         []int64
	Owner       string
	NowMs       int64
	LateAfterMs int64 // a claim later than scheduled+LateAfterMs marks the run late
	// Token marks the rows this claim changes (0: a new random token). A
	// claim tried again after an error that may have applied it passes the
	// same token, so it also gets back the rows the first try claimed.
	Token int64
}

// RunClaimBatch moves runs from scheduled to dispatching with a
// compare-and-set on state and owner, and returns the ids it claimed. Only a
// claimed run may be dispatched; a run someone else took over is not
// returned. The rows are stamped with the claim's token and, unless every
// row changed (the common case: no read-back), read back by it, so a claim
// returns exactly its own rows even when another claim of the same runs ran
// in the same millisecond.
func (s *Store) RunClaimBatch(ctx context.Context, p RunClaimParams) ([]int64, error) {
	token := p.Token
	if token == 0 {
		token = newToken()
	}
	var claimed []int64
	for _, chunk := range chunkInt64(uniqueInt64(p.IDs), 1000) {
		args := []any{kind.RunDispatching, p.NowMs, token, p.NowMs, p.LateAfterMs}
		for _, id := range chunk {
			args = append(args, id)
		}
		args = append(args, kind.RunScheduled, p.Owner)
		prune, pargs := s.pruneRuns(chunk)
		// Repeatable: after a dropped connection the rows are read back by token.
		res, err := s.execRepeatable(ctx, "UPDATE runs SET state = ?, dispatched_ms = ?, claim_token = ?, handoff_room = '', late = CASE WHEN ? - scheduled_ms > ? THEN 1 ELSE 0 END WHERE id IN ("+
			placeholders(len(chunk))+") AND state = ? AND owner = ?"+prune, append(args, pargs...)...)
		if err != nil {
			return claimed, fmt.Errorf("claim %d runs: %w", len(chunk), err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return claimed, fmt.Errorf("claim %d runs: rows affected: %w", len(chunk), err)
		}
		// Every row changed: all are this statement's, whatever the token's
		// history. Fewer: the rest are another claimer's, or an earlier try's
		// with this token (its answer lost), so read back by token.
		if int(n) == len(chunk) {
			claimed = append(claimed, chunk...)
			continue
		}
		got, err := s.runIDsByToken(ctx, chunk, p.Owner, token)
		if err != nil {
			return claimed, fmt.Errorf("read claimed runs: %w", err)
		}
		claimed = append(claimed, got...)
	}
	return claimed, nil
}

// runIDsByToken reads back which of ids carry token and are owned by owner.
func (s *Store) runIDsByToken(ctx context.Context, ids []int64, owner string, token int64) ([]int64, error) {
	args := make([]any, 0, len(ids)+2)
	for _, id := range ids {
		args = append(args, id)
	}
	args = append(args, token, owner)
	prune, pargs := s.pruneRuns(ids)
	args = append(args, pargs...)
	var out []int64
	err := s.retry(ctx, true, func() error {
		out = out[:0]
		rows, err := s.db.QueryContext(ctx, "SELECT id FROM runs WHERE id IN ("+placeholders(len(ids))+") AND claim_token = ? AND owner = ?"+prune, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			out = append(out, id)
		}
		return rows.Err()
	})
	return out, err
}

// RunHandOffParams hand runs to their targets (see RunHandOff).
type RunHandOffParams struct {
	Owner       string
	IDs         []int64
	NowMs       int64
	LateAfterMs int64 // a hand-off later than scheduled+LateAfterMs marks the run late
	// Targets are where the runs go (by id; "" or missing keeps the
	// recorded target).
	Targets map[int64]string
	// Token marks the rows this hand-off changes (0: a new random token;
	// NewClaimToken makes one). A caller that never heard the answer of a
	// hand-off keeps its token and passes it in Prior when it asks again.
	Token int64
	// Prior are, by run id, the tokens of earlier hand-offs of the run whose
	// answer was lost (the connection dropped, the statement timed out). A
	// run one of them handed, still dispatching, is handed to this caller
	// now: it was never sent, so it is sent once, instead of being refused
	// for ever and left to be recorded lost.
	Prior map[int64][]int64
}

// RunHandOff claims runs and records that their owner is about to send them
// to their targets, in one compare-and-set per chunk: a run moves to
// dispatching with handed_ms set only if it is owned by p.Owner and not
// handed yet, from scheduled (the common case: it is claimed by this very
// statement, dispatched_ms and late set) or from dispatching (a run claimed
// earlier and taken over unsent: its claim stays). It returns the ids
// handed; only those may be sent.
//
// It is the last gate before a send, and the one a takeover respects: a run
// a takeover re-owned is not handed by its old owner, and a run handed once
// is never handed again, so however many copies of a fire a node holds in
// memory, one send goes out. Until this statement a run waiting in a
// replica's memory is still scheduled (or claimed-not-handed), so a
// takeover sends it rather than marking it lost.
func (s *Store) RunHandOff(ctx context.Context, p RunHandOffParams) ([]int64, error) {
	token := p.Token
	if token == 0 {
		token = newToken()
	}
	var handed []int64
	for _, chunk := range chunkInt64(uniqueInt64(p.IDs), 1000) {
		var q strings.Builder
		q.WriteString("UPDATE runs SET ")
		var args []any
		if len(p.Targets) > 0 {
			// The target is known before the send: with it recorded here, a
			// callback that reaches another replica before the send's
			// answer is written is authorized at once.
			tv := make([]any, len(chunk))
			for i, id := range chunk {
				if t := p.Targets[id]; t != "" {
					tv[i] = t
				}
			}
			args = setByValue(&q, args, "target", chunk, tv)
			if !strings.HasSuffix(q.String(), "SET ") {
				q.WriteString(", ")
			}
		}
		// The state is assigned last: MySQL evaluates assignments in order
		// with the values already assigned, SQLite with the old ones. The
		// room the insert reserved is given back in the same write, so the
		// row does not grow (migration 0083).
		q.WriteString("dispatched_ms = CASE WHEN state = ? THEN ? ELSE dispatched_ms END," +
			" late = CASE WHEN state = ? THEN CASE WHEN ? - scheduled_ms > ? THEN 1 ELSE 0 END ELSE late END," +
			" handed_ms = ?, claim_token = ?, handoff_room = '', state = ? WHERE id IN (" + placeholders(len(chunk)) +
			") AND owner = ? AND handed_ms = 0 AND state IN (?, ?)")
		args = append(args, kind.RunScheduled, p.NowMs, kind.RunScheduled, p.NowMs, p.LateAfterMs, p.NowMs, token, kind.RunDispatching)
		for _, id := range chunk {
			args = append(args, id)
		}
		args = append(args, p.Owner, kind.RunScheduled, kind.RunDispatching)
		prune, pargs := s.pruneRuns(chunk)
		q.WriteString(prune)
		res, err := s.execRepeatable(ctx, q.String(), append(args, pargs...)...)
		if err != nil {
			return handed, fmt.Errorf("hand off %d runs: %w", len(chunk), err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return handed, fmt.Errorf("hand off %d runs: rows affected: %w", len(chunk), err)
		}
		if int(n) == len(chunk) {
			handed = append(handed, chunk...)
			continue
		}
		got, err := s.runIDsByToken(ctx, chunk, p.Owner, token)
		if err != nil {
			return handed, fmt.Errorf("read handed-off runs: %w", err)
		}
		handed = append(handed, got...)
	}
	if len(p.Prior) == 0 || len(handed) == len(p.IDs) {
		return handed, nil
	}
	got, err := s.runsHandedByPrior(ctx, p.Owner, handed, p.Prior)
	if err != nil {
		return handed, err
	}
	return append(handed, got...), nil
}

// runsHandedByPrior reads back which runs of prior (not in handed) an
// earlier hand-off with one of their tokens handed, and which are still
// dispatching: handed, never sent.
func (s *Store) runsHandedByPrior(ctx context.Context, owner string, handed []int64, prior map[int64][]int64) ([]int64, error) {
	done := make(map[int64]bool, len(handed))
	for _, id := range handed {
		done[id] = true
	}
	byToken := map[int64][]int64{}
	for id, tokens := range prior {
		if done[id] {
			continue
		}
		for _, tok := range tokens {
			byToken[tok] = append(byToken[tok], id)
		}
	}
	var out []int64
	for tok, ids := range byToken {
		args := []any{tok, owner, kind.RunDispatching}
		for _, id := range ids {
			args = append(args, id)
		}
		err := s.retry(ctx, true, func() error {
			rows, err := s.db.QueryContext(ctx, "SELECT id FROM runs WHERE claim_token = ? AND owner = ? AND state = ? AND handed_ms > 0 AND id IN ("+placeholders(len(ids))+")", args...)
			if err != nil {
				return err
			}
			got, err := collectIDs(rows)
			if err != nil {
				return err
			}
			for _, id := range got {
				if !done[id] {
					done[id] = true
					out = append(out, id)
				}
			}
			return nil
		})
		if err != nil {
			return out, fmt.Errorf("read runs handed by an earlier hand-off: %w", err)
		}
	}
	return out, nil
}

// RunMisfire records runs of owner that are still scheduled as misfired
// (compare-and-set on state and owner): fires that left this replica's
// memory too late to be sent. It returns how many it recorded; a run taken
// over by another replica, or handed meanwhile, keeps its state.
func (s *Store) RunMisfire(ctx context.Context, owner string, us []RunUpdate) (int64, error) {
	const per = 500
	var total int64
	for start := 0; start < len(us); start += per {
		chunk := us[start:min(start+per, len(us))]
		ids := make([]int64, len(chunk))
		msg, fin := make([]any, len(chunk)), make([]any, len(chunk))
		for i, u := range chunk {
			ids[i], msg[i], fin[i] = u.ID, u.Message, u.FinishedMs
		}
		var q strings.Builder
		q.WriteString("UPDATE runs SET ")
		args := setByValue(&q, nil, "message", ids, msg)
		args = setByValue(&q, args, "finished_ms", ids, fin)
		q.WriteString(", followup = " + followupSQL(kind.RunMisfired) + ", handoff_room = '', state = ? WHERE id IN (" + placeholders(len(ids)) + ") AND state = ? AND owner = ?")
		args = append(args, kind.RunMisfired)
		for _, id := range ids {
			args = append(args, id)
		}
		args = append(args, kind.RunScheduled, owner)
		prune, pargs := s.pruneRuns(ids)
		q.WriteString(prune)
		args = append(args, pargs...)
		// A misfire is its job's last outcome too, set in the same
		// transaction as with every other outcome. Repeatable: a
		// compare-and-set from scheduled, and a last outcome that only
		// moves to a newer run.
		n, err := s.execFinal(ctx, true, q.String(), args, ids, prune, pargs, nil)
		if err != nil {
			return total, fmt.Errorf("record %d runs misfired: %w", len(ids), err)
		}
		total += n
	}
	return total, nil
}

// RunUpdate is the new state of one run.
type RunUpdate struct {
	ID         int64
	State      kind.RunState
	Target     string // "" keeps the current target
	Code       int
	Message    string
	FinishedMs int64 // 0 keeps the current value
	JobID      int64 // the run's job, when known (outcomes: see RunResult.JobID)
}

// RunUpdateBatchParams move many runs at once, each only if it is still in
// one of FromStates (so a late write never overrides a newer state).
type RunUpdateBatchParams struct {
	FromStates []kind.RunState
	Updates    []RunUpdate
}

// RunUpdateBatch applies state changes, up to 500 runs per statement, and
// returns how many rows changed. A column that gets the same value in every
// row of a statement is set plainly; otherwise its rows are grouped by value
// (see setByValue), so a batch of outcomes that mostly agree costs little
// more than a plain UPDATE ... WHERE id IN.
func (s *Store) RunUpdateBatch(ctx context.Context, p RunUpdateBatchParams) (int64, error) {
	const per = 500
	var total int64
	for start := 0; start < len(p.Updates); start += per {
		chunk := p.Updates[start:min(start+per, len(p.Updates))]
		n := len(chunk)
		ids := make([]int64, n)
		state, target, code, msg, fin := make([]any, n), make([]any, n), make([]any, n), make([]any, n), make([]any, n)
		for i, u := range chunk {
			ids[i] = u.ID
			state[i], code[i], msg[i] = u.State, u.Code, u.Message
			if u.Target != "" {
				target[i] = u.Target
			}
			if u.FinishedMs != 0 {
				fin[i] = u.FinishedMs
			}
		}
		var q strings.Builder
		q.WriteString("UPDATE runs SET ")
		args := make([]any, 0, 3*n)
		args = setByValue(&q, args, "state", ids, state)
		args = setByValue(&q, args, "target", ids, target)
		args = setByValue(&q, args, "result_code", ids, code)
		args = setByValue(&q, args, "message", ids, msg)
		args = setByValue(&q, args, "finished_ms", ids, fin)
		// A run that ends here gets its follow-up marker as it would
		// through RunRecordOutcomes; other rows keep theirs.
		var fq strings.Builder
		for _, u := range chunk {
			if u.State.Final() {
				fq.WriteString(" WHEN id = ? THEN " + followupSQL(u.State))
				args = append(args, u.ID)
			}
		}
		if fq.Len() > 0 {
			q.WriteString(", followup = CASE" + fq.String() + " ELSE followup END")
		}
		q.WriteString(" WHERE id IN (" + placeholders(n) + ") AND state IN (" + placeholders(len(p.FromStates)) + ")")
		for _, id := range ids {
			args = append(args, id)
		}
		for _, st := range p.FromStates {
			args = append(args, st)
		}
		prune, pargs := s.pruneRuns(ids)
		q.WriteString(prune)
		args = append(args, pargs...)
		// Repeatable: each row moves only from FromStates, so a second run
		// of a statement that was applied changes nothing.
		res, err := s.execRepeatable(ctx, q.String(), args...)
		if err != nil {
			return total, fmt.Errorf("update %d runs: %w", n, err)
		}
		n64, _ := res.RowsAffected()
		total += n64
	}
	return total, nil
}

// setByValue appends one assignment of a multi-row UPDATE keyed by id to q
// and its arguments to args. vals[i] is the new value for ids[i]; nil keeps
// the row's current value. When every row gets the same value it writes
// "col = ?"; otherwise it groups the ids by value:
//
//	col = CASE WHEN id IN (?,?,...) THEN ? WHEN id IN (...) THEN ? ELSE col END
//
// The database looks a constant IN list up by binary search, so this costs
// rows x values x log(rows) at worst, where the classic "CASE id WHEN ? THEN ?"
// per row costs rows x rows comparisons. When no row sets the column it writes
// nothing. Values must be comparable (strings and integers).
func setByValue(q *strings.Builder, args []any, col string, ids []int64, vals []any) []any {
	type group struct {
		v   any
		ids []int64
	}
	var groups []*group
	byVal := map[any]*group{}
	keep := false
	for i, v := range vals {
		if v == nil {
			keep = true
			continue
		}
		g := byVal[v]
		if g == nil {
			g = &group{v: v}
			byVal[v] = g
			groups = append(groups, g)
		}
		g.ids = append(g.ids, ids[i])
	}
	if len(groups) == 0 {
		return args
	}
	if !strings.HasSuffix(q.String(), "SET ") {
		q.WriteString(", ")
	}
	if len(groups) == 1 && !keep {
		q.WriteString(col + " = ?")
		return append(args, groups[0].v)
	}
	q.WriteString(col + " = CASE")
	for _, g := range groups {
		q.WriteString(" WHEN id IN (" + placeholders(len(g.ids)) + ") THEN ?")
		for _, id := range g.ids {
			args = append(args, id)
		}
		args = append(args, g.v)
	}
	q.WriteString(" ELSE " + col + " END")
	return args
}

// RunSetState moves one run from one state to another (compare-and-set).
func (s *Store) RunSetState(ctx context.Context, id int64, from, to kind.RunState, message string, nowMs int64) (bool, error) {
	res, err := s.execRetry(ctx, "UPDATE runs SET state = ?, message = ?, finished_ms = ?, handoff_room = '', followup = "+followupSQL(to)+" WHERE id = ? AND state = ?", to, message, nowMs, id, from)
	if err != nil {
		return false, fmt.Errorf("move run %d from %s to %s: %w", id, from, to, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RunTakeOverParams move runs of a dead node to a live one.
type RunTakeOverParams struct {
	From string
	To   string // may be From: a node adopting its own runs after a restart or rejoin
	// DueBeforeMs limits it to runs due before this time (0: all).
	DueBeforeMs int64
	// Claimed takes the runs the node claimed (dispatching) but never handed
	// to a target, instead of its scheduled runs. They stay dispatching,
	// claimed now by To, which must send them.
	Claimed bool
	Limit   int
	Message string
}

// RunTakeOver re-owns up to Limit scheduled (or claimed, never handed) runs
// of a node (compare-and-set on owner, state and hand-off, so two survivors
// never take the same run and the old owner can no longer claim or hand
// them) and returns the runs taken, read back by token.
func (s *Store) RunTakeOver(ctx context.Context, p RunTakeOverParams) ([]Run, error) {
	state, cond := kind.RunScheduled, ""
	if p.Claimed {
		state, cond = kind.RunDispatching, " AND handed_ms = 0"
	}
	if p.DueBeforeMs > 0 {
		cond += fmt.Sprintf(" AND scheduled_ms < %d", p.DueBeforeMs)
	}
	rows, err := s.db.QueryContext(ctx, "SELECT id FROM runs WHERE "+s.d.liveRuns()+"owner = ? AND state = ?"+cond+" ORDER BY scheduled_ms LIMIT ?", p.From, state, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list %s runs of node %s: %w", state, p.From, err)
	}
	ids, err := collectIDs(rows)
	if err != nil {
		return nil, fmt.Errorf("list %s runs of node %s: %w", state, p.From, err)
	}
	token := newToken()
	var out []Run
	for _, chunk := range chunkInt64(ids, 1000) {
		args := []any{p.To, token, p.Message}
		for _, id := range chunk {
			args = append(args, id)
		}
		args = append(args, p.From, state)
		if _, err := s.execRepeatable(ctx, "UPDATE runs SET owner = ?, claim_token = ?, message = ? WHERE id IN ("+placeholders(len(chunk))+") AND owner = ? AND state = ?"+cond, args...); err != nil {
			return out, fmt.Errorf("take over %d runs of node %s: %w", len(chunk), p.From, err)
		}
		sel := []any{}
		for _, id := range chunk {
			sel = append(sel, id)
		}
		sel = append(sel, token, p.To, state)
		rs, err := s.db.QueryContext(ctx, "SELECT "+runCols+" FROM runs WHERE id IN ("+placeholders(len(chunk))+") AND claim_token = ? AND owner = ? AND state = ? ORDER BY scheduled_ms", sel...)
		if err != nil {
			return out, fmt.Errorf("read taken-over runs: %w", err)
		}
		got, err := collectRuns(rs)
		if err != nil {
			return out, fmt.Errorf("read taken-over runs: %w", err)
		}
		out = append(out, got...)
	}
	return out, nil
}

// RunListHandedUnanswered lists an owner's runs that were handed to their
// target (before handedBeforeMs; 0: any time) and are still dispatching: no
// answer was recorded. They may have arrived, so they are never re-sent
// blindly; the caller records them lost through the outcome path
// (RunResult.OnlyDispatching), while runs claimed but not handed are taken
// over and sent instead.
func (s *Store) RunListHandedUnanswered(ctx context.Context, owner string, handedBeforeMs int64) ([]int64, error) {
	if handedBeforeMs <= 0 {
		handedBeforeMs = 1<<62 - 1
	}
	rows, err := s.db.QueryContext(ctx, "SELECT id FROM runs WHERE "+s.d.liveRuns()+"owner = ? AND state = ? AND handed_ms > 0 AND handed_ms < ?", owner, kind.RunDispatching, handedBeforeMs)
	if err != nil {
		return nil, fmt.Errorf("list handed, unanswered runs of node %s: %w", owner, err)
	}
	ids, err := collectIDs(rows)
	if err != nil {
		return nil, fmt.Errorf("list handed, unanswered runs of node %s: %w", owner, err)
	}
	return ids, nil
}

// RunListClaimedSince lists an owner's runs claimed before beforeMs and still
// neither handed to a target nor finished: their sender gave up or is gone
// (the claim's answer was lost, the node dropped its memory). They are safe
// to send again through RunHandOff.
func (s *Store) RunListClaimedSince(ctx context.Context, owner string, beforeMs int64, limit int) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+runCols+" FROM runs WHERE "+s.d.liveRuns()+"owner = ? AND state = ? AND handed_ms = 0 AND dispatched_ms < ? ORDER BY scheduled_ms LIMIT ?",
		owner, kind.RunDispatching, beforeMs, limit)
	if err != nil {
		return nil, fmt.Errorf("list stuck claimed runs of node %s: %w", owner, err)
	}
	return collectRuns(rows)
}

func collectIDs(rows *sql.Rows) ([]int64, error) {
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func uniqueInt64(ids []int64) []int64 {
	seen := make(map[int64]bool, len(ids))
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// RunCountByState counts a job's runs per state (0 = all jobs).
func (s *Store) RunCountByState(ctx context.Context, jobID int64) (map[kind.RunState]int, error) {
	q := "SELECT state, COUNT(*) FROM runs"
	var args []any
	if jobID != 0 {
		q += " WHERE job_id = ?"
		args = append(args, jobID)
	}
	rows, err := s.db.QueryContext(ctx, q+" GROUP BY state", args...)
	if err != nil {
		return nil, fmt.Errorf("count runs by state: %w", err)
	}
	defer rows.Close()
	out := map[kind.RunState]int{}
	for rows.Next() {
		var st kind.RunState
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[st] = n
	}
	return out, rows.Err()
}

// isFailed reports whether a state gets a follow-up (retry, alarm).
func isFailed(state kind.RunState) bool {
	for _, f := range FailedStates {
		if state == f {
			return true
		}
	}
	return false
}

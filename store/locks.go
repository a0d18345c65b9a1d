package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
)

// LockPartitionsEnsure makes the lock table hold exactly partitions 0..p-1
// and moves jobs of removed partitions into the remaining ones. All replicas
// must be configured with the same p.
func (s *Store) LockPartitionsEnsure(ctx context.Context, p int) error {
	if p < 1 {
		return fmt.Errorf("lock partitions must be at least 1, got %d", p)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ensure lock partitions: begin: %w", err)
	}
	defer tx.Rollback()
	var had int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM lock_partitions").Scan(&had); err != nil {
		return fmt.Errorf("count lock partitions: %w", err)
	}
	for i := 0; i < p; i++ {
		if _, err := tx.ExecContext(ctx, s.d.insertIgnore()+" INTO lock_partitions (id, holder, held_ms) VALUES (?, '', 0)", i); err != nil {
			return fmt.Errorf("ensure lock partition %d: %w", i, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM lock_partitions WHERE id >= ?", p); err != nil {
		return fmt.Errorf("remove lock partitions >= %d: %w", p, err)
	}
	// When the partition count changes, spread all jobs anew (id mod P). A
	// replica mid pre-read may then see a moved job twice; the fire key makes
	// the second insert fail and that cycle roll back, so nothing fires twice.
	if had != p {
		if _, err := tx.ExecContext(ctx, "UPDATE jobs SET lock_partition = id % ?", p); err != nil {
			return fmt.Errorf("spread jobs over %d lock partitions: %w", p, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ensure lock partitions: commit: %w", err)
	}
	return nil
}

// ScheduleLockParams say which lock partitions a node would like to hold.
type ScheduleLockParams struct {
	Node      string
	Preferred []int // partitions in the order to try
	Max       int   // hold at most this many
	NowMs     int64
	// IdleTimeoutSec (MariaDB): a pre-read transaction left idle this long
	// (its process paused or frozen) is ended by the database, so the
	// partitions it holds do not stay locked until the process wakes up.
	// 0 = no limit.
	IdleTimeoutSec int
}

// ScheduleTx is a transaction that holds the lock rows of some partitions.
// Everything the pre-read does happens inside it; it is committed only when
// every step succeeded and rolled back otherwise.
type ScheduleTx struct {
	s    *Store
	tx   *sql.Tx
	held []int
	// conn is the connection whose session carries the idle timeout; it is
	// reset before going back to the pool (nil: none was set).
	conn *sql.Conn
}

// Held lists the partitions this transaction holds.
func (t *ScheduleTx) Held() []int { return t.held }

// Commit commits the pre-read.
func (t *ScheduleTx) Commit() error {
	err := t.tx.Commit()
	t.release()
	if err != nil {
		return fmt.Errorf("commit schedule transaction: %w", err)
	}
	t.s.stats.ensure(context.Background(), t.s.pool)
	return nil
}

// Rollback abandons the pre-read; safe after Commit.
func (t *ScheduleTx) Rollback() {
	_ = t.tx.Rollback()
	t.release()
}

// release gives the connection back to the pool without the idle timeout,
// which would otherwise end the next long transaction that gets it (an
// apply of thousands of jobs, a retention batch). A connection that cannot
// be reset is closed instead.
func (t *ScheduleTx) release() {
	if t.conn == nil {
		return
	}
	conn := t.conn
	t.conn = nil
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.ExecContext(ctx, t.s.d.idleTxTimeout(0)); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = conn.Close()
}

// ScheduleLock begins a transaction and takes free partition lock rows
// (SELECT ... FOR UPDATE SKIP LOCKED, one row at a time in preference order).
// When no partition is free it returns a transaction that holds none; the
// caller rolls it back. The context's deadline bounds the whole transaction.
func (s *Store) ScheduleLock(ctx context.Context, p ScheduleLockParams) (*ScheduleTx, error) {
	t := &ScheduleTx{s: s}
	if q := s.d.idleTxTimeout(p.IdleTimeoutSec); q != "" && p.IdleTimeoutSec > 0 {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("begin schedule transaction: %w", err)
		}
		t.conn = conn
		_, _ = conn.ExecContext(ctx, q) // best effort: not every database has it
		if t.tx, err = conn.BeginTx(ctx, s.d.scheduleTxOptions()); err != nil {
			t.release()
			return nil, fmt.Errorf("begin schedule transaction: %w", err)
		}
	} else {
		tx, err := s.db.BeginTx(ctx, s.d.scheduleTxOptions())
		if err != nil {
			return nil, fmt.Errorf("begin schedule transaction: %w", err)
		}
		t.tx = tx
	}
	for _, part := range p.Preferred {
		if len(t.held) >= p.Max {
			break
		}
		var id int
		err := t.tx.QueryRowContext(ctx, "SELECT id FROM lock_partitions WHERE id = ?"+s.d.skipLocked(), part).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			continue // locked by another replica, or not a partition
		}
		if err != nil {
			t.Rollback()
			return nil, fmt.Errorf("lock partition %d: %w", part, err)
		}
		t.held = append(t.held, id)
	}
	if len(t.held) > 0 {
		args := []any{p.Node, p.NowMs}
		for _, h := range t.held {
			args = append(args, h)
		}
		if _, err := t.tx.ExecContext(ctx, "UPDATE lock_partitions SET holder = ?, held_ms = ? WHERE id IN ("+placeholders(len(t.held))+")", args...); err != nil {
			t.Rollback()
			return nil, fmt.Errorf("record lock holder: %w", err)
		}
	}
	return t, nil
}

// JobListDueParams select the jobs due in the pre-read window.
type JobListDueParams struct {
	UntilMs int64 // next_fire_ms <= UntilMs
	Limit   int
	// Expect is about how many jobs the caller expects (the pre-read passes
	// what its last read found): the result is first sized for a little
	// more. A Job is large (about 480 B), so sizing every read for Limit
	// made 2.4 MB of garbage a cycle when few jobs were due, and growing the
	// slice from nothing was a tenth of the pre-read's CPU at 10,000 jobs.
	Expect int
}

// JobListDue reads the enabled jobs of the held partitions whose next fire
// time is at or before UntilMs, earliest first. Served by index jobs_due.
func (t *ScheduleTx) JobListDue(ctx context.Context, p JobListDueParams) ([]Job, error) {
	if len(t.held) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(t.held)+2)
	for _, h := range t.held {
		args = append(args, h)
	}
	args = append(args, p.UntilMs, p.Limit)
	rows, err := t.tx.QueryContext(ctx, "SELECT "+jobCols+" FROM jobs WHERE lock_partition IN ("+placeholders(len(t.held))+
		") AND next_fire_ms BETWEEN 1 AND ? AND enabled = 1 ORDER BY next_fire_ms LIMIT ?", args...)
	if err != nil {
		return nil, fmt.Errorf("list due jobs: %w", err)
	}
	defer rows.Close()
	out := make([]Job, 0, min(p.Limit, p.Expect+p.Expect/4+16))
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("list due jobs: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// RunInsert is a run to create in the pre-read.
type RunInsert struct {
	JobID       int64
	GroupID     int64
	ScheduledMs int64
	ShardIndex  int
	ShardTotal  int
	Attempt     int
	TriggerType kind.Trigger
	State       kind.RunState // kind.RunScheduled, or kind.RunMisfired for a recorded misfire
	Owner       string
	Handler     string
	Params      string
	Message     string
	CreatedMs   int64
	// FollowSuccess arms the run's follow-up: its job has child jobs (see
	// RunCreateParams.FollowSuccess).
	FollowSuccess bool
	// FollowMisfire arms it for a misfire: its job has a failure
	// destination (a run inserted misfired is pending at once).
	FollowMisfire bool
	// HandoffRoom is how many bytes the row reserves for its growth at the
	// hand-off (the target it records, the longer state) and the outcome,
	// up to MaxHandoffRoom; MySQL/MariaDB only (migration 0083 says why).
	HandoffRoom int
	// WindowOffsetMs is how far the job's flexible window moved this fire
	// from its schedule time (ScheduledMs includes it).
	WindowOffsetMs int64
}

// MaxHandoffRoom is the most room a run reserves (runs.handoff_room).
const MaxHandoffRoom = 255

// handoffSpaces is what a run's handoff_room holds: HandoffRoom spaces.
var handoffSpaces = strings.Repeat(" ", MaxHandoffRoom)

type fireKey struct {
	job   int64
	sched int64
	shard int
	att   int
}

const runInsertCols = 16

// RunInsertBatch inserts schedule-derived runs with multi-row INSERTs and
// returns their ids in input order. A duplicate fire (same job, time, shard
// and attempt) fails the batch: under the partition lock it cannot happen.
func (t *ScheduleTx) RunInsertBatch(ctx context.Context, runs []RunInsert) ([]int64, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	per := t.s.d.maxParams() / runInsertCols
	if per > 1000 {
		per = 1000
	}
	ids := make([]int64, len(runs))
	roomy := t.s.d.handoffRoom()
	for start := 0; start < len(runs); start += per {
		end := min(start+per, len(runs))
		chunk := runs[start:end]
		var sb strings.Builder
		sb.WriteString("INSERT INTO runs (job_id, group_id, scheduled_ms, shard_index, shard_total, attempt, sched_fire, trigger_type, state, owner, handler, params, message, created_ms, followup, handoff_room, window_offset_ms) VALUES ")
		args := make([]any, 0, len(chunk)*runInsertCols)
		for i, r := range chunk {
			if i > 0 {
				sb.WriteString(",")
			}
			sb.WriteString("(?,?,?,?,?,?,1,?,?,?,?,?,?,?,?,?,?)")
			var follow any
			switch r.State {
			case kind.RunScheduled:
				follow = followupAtCreation(r.FollowSuccess, r.FollowMisfire)
			case kind.RunMisfired:
				if r.FollowMisfire {
					follow = followupPending
				}
			}
			room := ""
			if roomy && r.State == kind.RunScheduled {
				room = handoffSpaces[:min(max(r.HandoffRoom, 0), MaxHandoffRoom)]
			}
			args = append(args, r.JobID, r.GroupID, r.ScheduledMs, r.ShardIndex, r.ShardTotal, r.Attempt, r.TriggerType, r.State, r.Owner, r.Handler, r.Params, r.Message, r.CreatedMs, follow, room, r.WindowOffsetMs)
		}
		res, err := t.tx.ExecContext(ctx, sb.String(), args...)
		if err != nil {
			return nil, fmt.Errorf("insert %d runs: %w", len(chunk), err)
		}
		t.s.stats.countRuns(len(chunk))
		// Read the new ids back by primary-key range, from the lowest id the
		// statement may have given (dialect.firstInsertedID). The range may
		// also hold concurrent rows; they do not match the fire keys of this
		// chunk (the fire key is unique). Starting a chunk's length lower
		// than that on MySQL/MariaDB read back the chunk before it too: two
		// rows per fire instead of one.
		last, err := res.LastInsertId()
		if err != nil {
			return nil, fmt.Errorf("read ids of %d inserted runs: %w", len(chunk), err)
		}
		q, qargs := "SELECT id, job_id, scheduled_ms, shard_index, attempt FROM runs WHERE id >= ? AND sched_fire = 1", []any{t.s.d.firstInsertedID(last, len(chunk))}
		if t.s.hints != nil && t.s.hints.on.Load() {
			// Partitioned by day: read only the days this chunk fires in.
			lo, hi := chunk[0].ScheduledMs, chunk[0].ScheduledMs
			for _, r := range chunk {
				lo, hi = min(lo, r.ScheduledMs), max(hi, r.ScheduledMs)
			}
			q, qargs = q+" AND scheduled_ms BETWEEN ? AND ?", append(qargs, lo, hi)
		}
		rows, err := t.tx.QueryContext(ctx, q, qargs...)
		if err != nil {
			return nil, fmt.Errorf("read ids of %d inserted runs: %w", len(chunk), err)
		}
		byKey := make(map[fireKey]int64, len(chunk))
		for rows.Next() {
			var id int64
			var k fireKey
			if err := rows.Scan(&id, &k.job, &k.sched, &k.shard, &k.att); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read ids of inserted runs: %w", err)
			}
			byKey[k] = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read ids of inserted runs: %w", err)
		}
		for i, r := range chunk {
			id, ok := byKey[fireKey{r.JobID, r.ScheduledMs, r.ShardIndex, r.Attempt}]
			if !ok {
				return nil, fmt.Errorf("inserted run for job %d at %d not found", r.JobID, r.ScheduledMs)
			}
			ids[start+i] = id
		}
	}
	if t.s.hints != nil && t.s.hints.on.Load() {
		ms := make([]int64, len(runs))
		for i, r := range runs {
			ms[i] = r.ScheduledMs
		}
		t.s.hints.remember(ids, ms)
	}
	// A recorded misfire is a final outcome that never passes through
	// RunRecordOutcomes: its job's last outcome is set here, in the same
	// transaction (nothing to do in the common batch without misfires).
	var misfired []int64
	for i, r := range runs {
		if r.State == kind.RunMisfired {
			misfired = append(misfired, ids[i])
		}
	}
	if len(misfired) > 0 {
		prune, pargs := t.s.pruneRuns(misfired)
		q, args := t.s.lastOutcomeSQL(misfired, prune, pargs)
		if _, err := t.tx.ExecContext(ctx, q, args...); err != nil {
			return nil, fmt.Errorf("set the last outcome of %d misfired runs' jobs: %w", len(misfired), err)
		}
	}
	return ids, nil
}

// JobAdvance is the new scheduling state of a job after a pre-read.
type JobAdvance struct {
	ID         int64
	NextFireMs int64 // 0 = no more fires
	LastFireMs int64
	Disable    bool // the schedule is exhausted (one-time job done)
}

// JobAdvanceBatch writes next/last fire times, up to 1000 jobs per
// statement. Jobs on the same schedule share their values, so the columns are
// set by value (see setByValue) rather than with one CASE arm per job.
func (t *ScheduleTx) JobAdvanceBatch(ctx context.Context, adv []JobAdvance) error {
	const per = 1000
	for start := 0; start < len(adv); start += per {
		chunk := adv[start:min(start+per, len(adv))]
		n := len(chunk)
		ids := make([]int64, n)
		next, last, enabled := make([]any, n), make([]any, n), make([]any, n)
		for i, a := range chunk {
			ids[i], next[i], last[i] = a.ID, a.NextFireMs, a.LastFireMs
			if a.Disable {
				enabled[i] = 0
			}
		}
		var q strings.Builder
		q.WriteString("UPDATE jobs SET ")
		args := make([]any, 0, 2*n+4)
		args = setByValue(&q, args, "next_fire_ms", ids, next)
		args = setByValue(&q, args, "last_fire_ms", ids, last)
		args = setByValue(&q, args, "enabled", ids, enabled)
		q.WriteString(" WHERE id IN (" + placeholders(n) + ")")
		for _, id := range ids {
			args = append(args, id)
		}
		if _, err := t.tx.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("advance %d jobs: %w", n, err)
		}
	}
	return nil
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrNotSupported says the database cannot do what was asked (partitioning
// on SQLite).
var ErrNotSupported = errors.New("not supported by this database")

// RunPartition is one day partition of the runs table (retention.partitioned).
type RunPartition struct {
	Name     string
	FromMs   int64 // scheduled_ms >= FromMs (0 for the first)
	BeforeMs int64 // scheduled_ms < BeforeMs; 0 for the catch-all pmax
}

const dayMs = int64(24 * time.Hour / time.Millisecond)

func partitionName(dayStartMs int64) string {
	return "p" + time.UnixMilli(dayStartMs).UTC().Format("20060102")
}

// RunPartitions lists the partitions of runs in order; partitioned is false
// when the table is not partitioned.
func (s *Store) RunPartitions(ctx context.Context) (parts []RunPartition, partitioned bool, err error) {
	return s.rangePartitions(ctx, "runs")
}

// rangePartitions lists the range partitions of table in order, with the
// bounds of each (FromMs/BeforeMs hold run ids for run_logs).
func (s *Store) rangePartitions(ctx context.Context, table string) (parts []RunPartition, partitioned bool, err error) {
	switch s.d.name() {
	case "postgres":
		return s.pgRangePartitions(ctx, table)
	case "mysql":
	default:
		return nil, false, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT PARTITION_NAME, PARTITION_DESCRIPTION FROM information_schema.PARTITIONS
 WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND PARTITION_NAME IS NOT NULL ORDER BY PARTITION_ORDINAL_POSITION`, table)
	if err != nil {
		return nil, false, fmt.Errorf("list partitions of %s: %w", table, err)
	}
	defer rows.Close()
	var from int64
	for rows.Next() {
		var name, desc string
		if err := rows.Scan(&name, &desc); err != nil {
			return nil, false, fmt.Errorf("list partitions of %s: %w", table, err)
		}
		p := RunPartition{Name: name, FromMs: from}
		if desc != "MAXVALUE" {
			if p.BeforeMs, err = strconv.ParseInt(desc, 10, 64); err != nil {
				return nil, false, fmt.Errorf("partition %s of %s: bound %q: %w", name, table, desc, err)
			}
			from = p.BeforeMs
		}
		parts = append(parts, p)
	}
	return parts, len(parts) > 0, rows.Err()
}

// RunPartitionsEnsureParams say which day partitions must exist.
type RunPartitionsEnsureParams struct {
	NowMs     int64
	AheadDays int // days after today that get their partition ahead of time
}

// RunPartitionsEnsure range-partitions runs by day of scheduled_ms when it
// is not yet (a table rebuild: the first time takes as long as copying the
// table) and creates the partitions of today and AheadDays after it. A
// catch-all partition pmax takes runs scheduled beyond them, so no insert
// ever fails for want of a partition. It is idempotent and safe to call from
// every replica at once: replicas take turns under a named lock and each
// looks at the partitions that exist before changing anything. It returns
// the partitions it created.
func (s *Store) RunPartitionsEnsure(ctx context.Context, p RunPartitionsEnsureParams) ([]string, error) {
	if !s.d.namedLocks() {
		return nil, fmt.Errorf("partition runs: %w (retention.partitioned needs MySQL/MariaDB or PostgreSQL)", ErrNotSupported)
	}
	var created []string
	err := s.withPartitionLock(ctx, "partition runs", func(conn *sql.Conn) error {
		// What a drop cut short left (dropPartition) is on its way out.
		if s.d.name() == "postgres" {
			if err := s.pgPartitionsTidy(ctx, conn); err != nil {
				return fmt.Errorf("partition runs: %w", err)
			}
		} else if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS runs"+retiringSuffix+", run_logs"+retiringSuffix); err != nil {
			return fmt.Errorf("partition runs: drop the scratch tables of an interrupted drop: %w", err)
		}
		runs, err := s.runPartitionsEnsure(ctx, conn, p)
		created = append(created, runs...)
		if err != nil {
			return err
		}
		logs, err := s.runLogPartitionsEnsure(ctx, conn, p)
		created = append(created, logs...)
		return err
	})
	return created, err
}

// withPartitionLock runs f on one connection holding the database's
// partition lock (a named lock), so replicas change partitions one at a
// time and each sees what the one before did.
func (s *Store) withPartitionLock(ctx context.Context, what string, f func(conn *sql.Conn) error) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("%s: get connection: %w", what, err)
	}
	defer conn.Close()
	name := s.database + ".ringjob_partitions"
	if err := s.d.locks().get(ctx, conn, name, 600*time.Second); err != nil {
		return fmt.Errorf("%s: take the partition lock: %w", what, err)
	}
	defer s.d.locks().release(context.WithoutCancel(ctx), conn, name)
	return f(conn)
}

// retiringSuffix names the scratch table a partition's rows are swapped
// into before they are dropped (runs_retiring, run_logs_retiring).
const retiringSuffix = "_retiring"

// dropPartition drops partition part of table (runs or run_logs) with all
// its rows, without holding up the statements on table while the rows'
// file is deleted. An in-place ALTER TABLE … DROP PARTITION deletes the
// partition's file and evicts its pages under the table's exclusive
// metadata lock, and every statement on the table waits behind it: 170–310
// ms for a partition of a million runs on the 2-core machine, growing with
// the partition (docs/retention.md). Here the rows are first swapped into
// an empty table of the same shape (EXCHANGE PARTITION renames files: ~10
// ms under the lock), the emptied partition is dropped (~10 ms), and the
// table now holding the rows is dropped without touching table. A crash at
// any step leaves either the scratch table, dropped first next time (what
// it holds was on its way out), or an empty partition, dropped next cycle.
// The caller holds the partition lock on conn.
func (s *Store) dropPartition(ctx context.Context, conn *sql.Conn, table, part string) error {
	if s.d.name() == "postgres" {
		return pgDropPartition(ctx, conn, table, part)
	}
	scratch := table + retiringSuffix
	steps := []struct{ what, stmt string }{
		{"drop a scratch table left by an earlier drop", "DROP TABLE IF EXISTS " + scratch},
		{"create the scratch table", "CREATE TABLE " + scratch + " LIKE " + table},
		{"unpartition the scratch table", "ALTER TABLE " + scratch + " REMOVE PARTITIONING"},
		{"swap the partition's rows out", "ALTER TABLE " + table + " EXCHANGE PARTITION " + part + " WITH TABLE " + scratch},
		{"drop the emptied partition", "ALTER TABLE " + table + " DROP PARTITION " + part},
		{"drop the swapped-out rows", "DROP TABLE " + scratch},
	}
	for _, st := range steps {
		if _, err := conn.ExecContext(ctx, st.stmt); err != nil {
			return fmt.Errorf("drop partition %s of %s: %s: %w", part, table, st.what, err)
		}
	}
	return nil
}

func (s *Store) runPartitionsEnsure(ctx context.Context, conn *sql.Conn, p RunPartitionsEnsureParams) ([]string, error) {
	today := p.NowMs - p.NowMs%dayMs
	last := today + int64(p.AheadDays)*dayMs // the last day that must have its own partition
	parts, partitioned, err := s.RunPartitions(ctx)
	if err != nil {
		return nil, err
	}
	var created []string
	if !partitioned {
		// One partition per day from the oldest run (at most 1000 days back;
		// older runs share the first one).
		first := today
		var oldest sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT MIN(scheduled_ms) FROM runs").Scan(&oldest); err != nil {
			return nil, fmt.Errorf("partition runs: find the oldest run: %w", err)
		}
		if oldest.Valid && oldest.Int64 < today {
			first = max(oldest.Int64-oldest.Int64%dayMs, today-1000*dayMs)
		}
		var defs, names []string
		var bounds [][2]int64
		for d := first; d <= last; d += dayMs {
			defs = append(defs, fmt.Sprintf("PARTITION %s VALUES LESS THAN (%d)", partitionName(d), d+dayMs))
			created = append(created, partitionName(d))
			names, bounds = append(names, partitionName(d)), append(bounds, [2]int64{d, d + dayMs})
		}
		defs = append(defs, "PARTITION pmax VALUES LESS THAN MAXVALUE")
		if s.d.name() == "postgres" {
			bounds[0][0] = 0 // the first day takes the older runs too
			names, bounds = append(names, "pmax"), append(bounds, [2]int64{last + dayMs, 0})
			if err := s.pgPartitionBy(ctx, conn, "runs", "scheduled_ms", "id, scheduled_ms", names, bounds); err != nil {
				return nil, fmt.Errorf("partition runs by day: %w", err)
			}
			s.hints.partitioned(true)
			return created, nil
		}
		// The key of a partitioned table must hold the partition column:
		// the primary key becomes (id, scheduled_ms); the idempotency keys
		// live in run_keys (migrations 0081, 0082). The fire key already
		// holds scheduled_ms.
		alter := "ALTER TABLE runs DROP PRIMARY KEY, ADD PRIMARY KEY (id, scheduled_ms) PARTITION BY RANGE (scheduled_ms) (" + strings.Join(defs, ", ") + ")"
		if _, err := conn.ExecContext(ctx, alter); err != nil {
			return nil, fmt.Errorf("partition runs by day (a unique key of runs that lacks scheduled_ms prevents it): %w", err)
		}
		s.hints.partitioned(true)
		return created, nil
	}
	// Already partitioned: split the days still missing off pmax, in order.
	lastBound := int64(0)
	for _, pt := range parts {
		lastBound = max(lastBound, pt.BeforeMs)
	}
	s.hints.partitioned(true)
	if parts[len(parts)-1].BeforeMs != 0 {
		return nil, fmt.Errorf("partition runs: the last partition %s is not the catch-all pmax; fix the table by hand", parts[len(parts)-1].Name)
	}
	for d := lastBound; d <= last; d += dayMs {
		day := d - d%dayMs
		name := partitionName(day)
		if s.d.name() == "postgres" {
			if err := pgSplitCatchAll(ctx, conn, "runs", "scheduled_ms", "pmax", name, d, day+dayMs); err != nil {
				return created, fmt.Errorf("partition runs: %w", err)
			}
		} else if _, err := conn.ExecContext(ctx, fmt.Sprintf("ALTER TABLE runs REORGANIZE PARTITION pmax INTO (PARTITION %s VALUES LESS THAN (%d), PARTITION pmax VALUES LESS THAN MAXVALUE)",
			name, day+dayMs)); err != nil {
			return created, fmt.Errorf("partition runs: add partition %s: %w", name, err)
		}
		created = append(created, name)
	}
	return created, nil
}

// RunPartitionSummary is what retention needs to know of a partition.
type RunPartitionSummary struct {
	MaxID  int64 // 0 when empty
	Needed int   // runs in it among those given as needed
}

// RunPartitionSummarize reads the highest run id of a partition and how many
// of the needed runs are in it (key lookups, never a scan).
func (s *Store) RunPartitionSummarize(ctx context.Context, name string, needed []int64) (RunPartitionSummary, error) {
	var out RunPartitionSummary
	var maxID sql.NullInt64
	if err := s.db.QueryRowContext(ctx, "SELECT MAX(id) FROM "+s.partitionFrom("runs", name)).Scan(&maxID); err != nil {
		return out, fmt.Errorf("read partition %s: %w", name, err)
	}
	out.MaxID = maxID.Int64
	for _, chunk := range chunkInt64(needed, 1000) {
		var n int
		if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+s.partitionFrom("runs", name)+" WHERE id IN ("+placeholders(len(chunk))+")", int64Args(chunk)...).Scan(&n); err != nil {
			return out, fmt.Errorf("read partition %s: %w", name, err)
		}
		out.Needed += n
	}
	return out, nil
}

// partitionFrom is the FROM clause that reads partition name of table alone.
func (s *Store) partitionFrom(table, name string) string {
	if s.d.name() == "postgres" {
		return pgPartitionTable(table, name)
	}
	return table + " PARTITION (" + name + ")"
}

// RunAgesInPartition reads up to limit runs of a partition with id > afterID, in id order.
func (s *Store) RunAgesInPartition(ctx context.Context, name string, afterID int64, limit int) ([]RunAge, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+runAgeCols+" FROM "+s.partitionFrom("runs", name)+" WHERE id > ? ORDER BY id LIMIT ?", afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("read runs of partition %s: %w", name, err)
	}
	return collectRunAges(rows)
}

// RunPartitionDrop drops a day partition with all its runs, then the
// idempotency keys of runs that are gone (logs of gone runs are removed by
// the log purge). It refuses pmax.
func (s *Store) RunPartitionDrop(ctx context.Context, name string, maxID int64) error {
	if name == "pmax" || !strings.HasPrefix(name, "p") {
		return fmt.Errorf("drop partition %s: only day partitions are dropped", name)
	}
	if err := s.withPartitionLock(ctx, "drop partition "+name+" of runs", func(conn *sql.Conn) error {
		return s.dropPartition(ctx, conn, "runs", name)
	}); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM run_keys WHERE run_id <= ? AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.id = run_keys.run_id)", maxID); err != nil {
		return fmt.Errorf("drop partition %s: remove its idempotency keys: %w", name, err)
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM failure_deliveries WHERE delivered_ms > 0 AND run_id <= ? AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.id = failure_deliveries.run_id)", maxID); err != nil {
		return fmt.Errorf("drop partition %s: remove its delivered failure records: %w", name, err)
	}
	return nil
}

// The logs of runs (run_logs) are partitioned by ranges of run id, each
// about a day of runs: their key is (run_id, seq), so every read and append
// of a run's log finds its partition from the run id alone. Bounds are set
// ahead of the ids in use (AheadDays days of runs at the last day's rate),
// so new logs never land in the catch-all lmax and adding a partition only
// splits an empty lmax. A log partition is dropped once no run of its id
// range is left (RunLogPartitionsDrop).

// runLogPartitionMin is the least span of run ids a log partition covers.
const runLogPartitionMin = 10_000

func runLogPartitionName(before int64) string { return "l" + strconv.FormatInt(before, 10) }

// RunLogPartitions lists the partitions of run_logs (bounds are run ids in
// FromMs/BeforeMs); partitioned is false when it is not partitioned.
func (s *Store) RunLogPartitions(ctx context.Context) ([]RunPartition, bool, error) {
	return s.rangePartitions(ctx, "run_logs")
}

func (s *Store) runLogPartitionsEnsure(ctx context.Context, conn *sql.Conn, p RunPartitionsEnsureParams) ([]string, error) {
	_, hi, err := s.RunIDBounds(ctx)
	if err != nil {
		return nil, err
	}
	dayAgo, err := s.RunIDCreatedBefore(ctx, p.NowMs-dayMs)
	if err != nil {
		return nil, err
	}
	span := int64(runLogPartitionMin)
	if dayAgo < hi && dayAgo > 0 {
		span = max(span, hi-dayAgo)
	}
	want := hi + span*int64(max(p.AheadDays, 1)) // the bounds must reach past this id
	parts, partitioned, err := s.RunLogPartitions(ctx)
	if err != nil {
		return nil, err
	}
	var created []string
	if !partitioned {
		var defs, names []string
		var bounds [][2]int64
		from := int64(0)
		for b := hi + 1 + span; ; b += span {
			defs = append(defs, fmt.Sprintf("PARTITION %s VALUES LESS THAN (%d)", runLogPartitionName(b), b))
			created = append(created, runLogPartitionName(b))
			names, bounds = append(names, runLogPartitionName(b)), append(bounds, [2]int64{from, b})
			from = b
			if b > want {
				break
			}
		}
		defs = append(defs, "PARTITION lmax VALUES LESS THAN MAXVALUE")
		if s.d.name() == "postgres" {
			names, bounds = append(names, "lmax"), append(bounds, [2]int64{from, 0})
			if err := s.pgPartitionBy(ctx, conn, "run_logs", "run_id", "run_id, seq", names, bounds); err != nil {
				return nil, fmt.Errorf("partition run_logs by run id: %w", err)
			}
			return created, nil
		}
		if _, err := conn.ExecContext(ctx, "ALTER TABLE run_logs PARTITION BY RANGE (run_id) ("+strings.Join(defs, ", ")+")"); err != nil {
			return nil, fmt.Errorf("partition run_logs by run id: %w", err)
		}
		return created, nil
	}
	if parts[len(parts)-1].BeforeMs != 0 {
		return nil, fmt.Errorf("partition run_logs: the last partition %s is not the catch-all lmax; fix the table by hand", parts[len(parts)-1].Name)
	}
	lastBound := parts[len(parts)-1].FromMs
	for b := lastBound + span; lastBound <= want; b += span {
		if s.d.name() == "postgres" {
			if err := pgSplitCatchAll(ctx, conn, "run_logs", "run_id", "lmax", runLogPartitionName(b), lastBound, b); err != nil {
				return created, fmt.Errorf("partition run_logs: %w", err)
			}
		} else if _, err := conn.ExecContext(ctx, fmt.Sprintf("ALTER TABLE run_logs REORGANIZE PARTITION lmax INTO (PARTITION %s VALUES LESS THAN (%d), PARTITION lmax VALUES LESS THAN MAXVALUE)",
			runLogPartitionName(b), b)); err != nil {
			return created, fmt.Errorf("partition run_logs: add partition %s: %w", runLogPartitionName(b), err)
		}
		created = append(created, runLogPartitionName(b))
		lastBound = b
	}
	return created, nil
}

// RunLogPartitionDropFirst drops the first log partition whose runs are all
// gone (no run left with an id in its range, and a later run exists, so
// its ids are no longer handed out) and returns its name, or "" when the
// first log partition is still in use. One at a time, so the caller can
// space the drops out.
func (s *Store) RunLogPartitionDropFirst(ctx context.Context) (string, error) {
	parts, partitioned, err := s.RunLogPartitions(ctx)
	if err != nil || !partitioned {
		return "", err
	}
	p := parts[0]
	if p.BeforeMs == 0 {
		return "", nil // only lmax
	}
	var one int
	err = s.db.QueryRowContext(ctx, "SELECT 1 FROM runs WHERE id >= ? AND id < ? LIMIT 1", p.FromMs, p.BeforeMs).Scan(&one)
	if err == nil {
		return "", nil // runs of this range remain
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("look for runs of log partition %s: %w", p.Name, err)
	}
	err = s.db.QueryRowContext(ctx, "SELECT 1 FROM runs WHERE id >= ? LIMIT 1", p.BeforeMs).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil // no later run: ids of this range may still be handed out
	}
	if err != nil {
		return "", fmt.Errorf("look for runs after log partition %s: %w", p.Name, err)
	}
	if err := s.withPartitionLock(ctx, "drop partition "+p.Name+" of run_logs", func(conn *sql.Conn) error {
		return s.dropPartition(ctx, conn, "run_logs", p.Name)
	}); err != nil {
		return "", err
	}
	return p.Name, nil
}

package store

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Day partitions on PostgreSQL (retention.partitioned): declarative range
// partitioning of runs by scheduled_ms and of run_logs by run_id, with the
// same names and bounds as on MariaDB (partitions.go). Each partition is a
// table named TABLE_NAME (runs_p20260101, run_logs_l120000). The catch-all
// (pmax, lmax) is a range partition up to MAXVALUE, not a DEFAULT
// partition: a table with a default partition cannot detach partitions
// CONCURRENTLY, and that is how a day is dropped without holding up the
// statements on runs (DETACH PARTITION ... CONCURRENTLY, then DROP TABLE
// on the detached table, which no statement on runs waits for).
//
// PostgreSQL 15 has no identity column on a partitioned table: converting
// runs gives its id a sequence of its own (runs_id_seq), continued from
// the identity's.

// pgPartitionTable is the table of partition name of table.
func pgPartitionTable(table, name string) string { return table + "_" + name }

var pgBoundRe = regexp.MustCompile(`FROM \(([^)]*)\) TO \(([^)]*)\)`)

// pgRangePartitions lists the partitions of table in order (see
// rangePartitions). Partitions whose detach was cut short are left out
// (pgPartitionsTidy finishes them).
func (s *Store) pgRangePartitions(ctx context.Context, table string) ([]RunPartition, bool, error) {
	var relkind sql.NullString
	if err := s.db.QueryRowContext(ctx, "SELECT relkind::text FROM pg_class WHERE oid = to_regclass(?)", table).Scan(&relkind); err != nil {
		return nil, false, fmt.Errorf("list partitions of %s: %w", table, err)
	}
	if relkind.String != "p" {
		return nil, false, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = to_regclass(?) AND NOT i.inhdetachpending`, table)
	if err != nil {
		return nil, false, fmt.Errorf("list partitions of %s: %w", table, err)
	}
	defer rows.Close()
	var parts []RunPartition
	for rows.Next() {
		var rel, bound string
		if err := rows.Scan(&rel, &bound); err != nil {
			return nil, false, fmt.Errorf("list partitions of %s: %w", table, err)
		}
		m := pgBoundRe.FindStringSubmatch(bound)
		if m == nil {
			return nil, false, fmt.Errorf("partition %s of %s: bound %q is not a range", rel, table, bound)
		}
		p := RunPartition{Name: strings.TrimPrefix(rel, table+"_")}
		for i, v := range []*int64{&p.FromMs, &p.BeforeMs} {
			b := strings.Trim(m[i+1], "'")
			if b == "MINVALUE" || b == "MAXVALUE" {
				continue // 0: open
			}
			if *v, err = strconv.ParseInt(b, 10, 64); err != nil {
				return nil, false, fmt.Errorf("partition %s of %s: bound %q: %w", rel, table, bound, err)
			}
		}
		parts = append(parts, p)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("list partitions of %s: %w", table, err)
	}
	// In bound order; the catch-all (open at the top) last.
	sort.Slice(parts, func(i, j int) bool {
		if (parts[i].BeforeMs == 0) != (parts[j].BeforeMs == 0) {
			return parts[j].BeforeMs == 0
		}
		return parts[i].BeforeMs < parts[j].BeforeMs
	})
	return parts, true, nil
}

// pgPartitionsTidy finishes what a drop cut short left behind: partitions
// whose concurrent detach did not complete, and detached partition tables
// not yet dropped. The caller holds the partition lock on conn.
func (s *Store) pgPartitionsTidy(ctx context.Context, conn *sql.Conn) error {
	for _, t := range []struct{ table, pattern string }{{"runs", `^runs_p[0-9]{8}$`}, {"run_logs", `^run_logs_l[0-9]+$`}} {
		rows, err := conn.QueryContext(ctx, `SELECT c.relname, i.inhdetachpending IS NOT NULL FROM pg_class c
 LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND i.inhdetachpending
 WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND c.relname ~ ? AND (NOT c.relispartition OR i.inhdetachpending)`, t.pattern)
		if err != nil {
			return fmt.Errorf("look for partitions of %s left by an interrupted drop: %w", t.table, err)
		}
		type left struct {
			rel     string
			pending bool
		}
		var lefts []left
		for rows.Next() {
			var l left
			if err := rows.Scan(&l.rel, &l.pending); err != nil {
				rows.Close()
				return fmt.Errorf("look for partitions of %s left by an interrupted drop: %w", t.table, err)
			}
			lefts = append(lefts, l)
		}
		rows.Close()
		for _, l := range lefts {
			if l.pending {
				if _, err := conn.ExecContext(ctx, "ALTER TABLE "+t.table+" DETACH PARTITION "+l.rel+" FINALIZE"); err != nil {
					return fmt.Errorf("finish detaching %s: %w", l.rel, err)
				}
			}
			if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+l.rel); err != nil {
				return fmt.Errorf("drop %s, detached by an interrupted drop: %w", l.rel, err)
			}
		}
	}
	return nil
}

// pgDropPartition drops partition part of table: DETACH ... CONCURRENTLY
// (statements on table go on meanwhile), then DROP TABLE of what is now a
// table of its own. A crash between the two leaves the detached table (or
// a detach still pending), which pgPartitionsTidy drops next time. The
// caller holds the partition lock on conn.
func pgDropPartition(ctx context.Context, conn *sql.Conn, table, part string) error {
	rel := pgPartitionTable(table, part)
	if _, err := conn.ExecContext(ctx, "ALTER TABLE "+table+" DETACH PARTITION "+rel+" CONCURRENTLY"); err != nil {
		return fmt.Errorf("drop partition %s of %s: detach it: %w", part, table, err)
	}
	if _, err := conn.ExecContext(ctx, "DROP TABLE "+rel); err != nil {
		return fmt.Errorf("drop partition %s of %s: drop the detached table: %w", part, table, err)
	}
	return nil
}

// pgPartitionBy converts table into a table range-partitioned by column
// with the given partitions ([from, before) pairs; from 0 is MINVALUE,
// before 0 is MAXVALUE), in one transaction under an exclusive lock:
// statements on table wait while its rows are copied, as on MariaDB. Its
// indexes are made again on the partitioned table, the primary key as
// pkey; a database-assigned id (identity) becomes a sequence's.
func (s *Store) pgPartitionBy(ctx context.Context, conn *sql.Conn, table, column, pkey string, names []string, bounds [][2]int64) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("partition %s: begin: %w", table, err)
	}
	defer tx.Rollback()
	old := table + "_unpartitioned"
	exec := func(what, stmt string, args ...any) error {
		if _, err := tx.ExecContext(ctx, stmt, args...); err != nil {
			return fmt.Errorf("partition %s: %s: %w", table, what, err)
		}
		return nil
	}
	if err := exec("lock it", "LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		return err
	}
	// The indexes to make again, but the primary key's.
	var indexes []string
	rows, err := tx.QueryContext(ctx, `SELECT indexdef FROM pg_indexes i JOIN pg_index x ON x.indexrelid = to_regclass(quote_ident(i.indexname))
 WHERE i.schemaname = current_schema() AND i.tablename = ? AND NOT x.indisprimary ORDER BY i.indexname`, table)
	if err != nil {
		return fmt.Errorf("partition %s: read its indexes: %w", table, err)
	}
	for rows.Next() {
		var def string
		if err := rows.Scan(&def); err != nil {
			rows.Close()
			return fmt.Errorf("partition %s: read its indexes: %w", table, err)
		}
		indexes = append(indexes, def)
	}
	rows.Close()
	// The sequence of a database-assigned id (none for run_logs).
	var seq sql.NullString
	if err := tx.QueryRowContext(ctx, `SELECT CASE WHEN EXISTS (SELECT 1 FROM information_schema.columns
 WHERE table_schema = current_schema() AND table_name = ? AND column_name = 'id') THEN pg_get_serial_sequence(?, 'id') END`, table, table).Scan(&seq); err != nil {
		return fmt.Errorf("partition %s: find its id sequence: %w", table, err)
	}
	if err := exec("set it aside", "ALTER TABLE "+table+" RENAME TO "+old); err != nil {
		return err
	}
	if err := exec("create the partitioned table", "CREATE TABLE "+table+" (LIKE "+old+" INCLUDING DEFAULTS) PARTITION BY RANGE ("+column+")"); err != nil {
		return err
	}
	for i, name := range names {
		from, to := "MINVALUE", "MAXVALUE"
		if bounds[i][0] != 0 {
			from = strconv.FormatInt(bounds[i][0], 10)
		}
		if bounds[i][1] != 0 {
			to = strconv.FormatInt(bounds[i][1], 10)
		}
		if err := exec("create partition "+name, fmt.Sprintf("CREATE TABLE %s PARTITION OF %s FOR VALUES FROM (%s) TO (%s)",
			pgPartitionTable(table, name), table, from, to)); err != nil {
			return err
		}
	}
	if err := exec("copy its rows", "INSERT INTO "+table+" SELECT * FROM "+old); err != nil {
		return err
	}
	if seq.Valid {
		// The id goes on from where the identity was (ids are never reused).
		newSeq := table + "_id_seq"
		var last int64
		if err := tx.QueryRowContext(ctx, "SELECT GREATEST((SELECT last_value FROM "+seq.String+"), (SELECT COALESCE(MAX(id), 0) FROM "+old+"))").Scan(&last); err != nil {
			return fmt.Errorf("partition %s: read the last id: %w", table, err)
		}
		if err := exec("drop the table set aside", "DROP TABLE "+old); err != nil {
			return err
		}
		if err := exec("create the id sequence", "CREATE SEQUENCE "+newSeq+" OWNED BY "+table+".id"); err != nil {
			return err
		}
		if err := exec("continue the ids", "SELECT setval('"+newSeq+"', ?)", last); err != nil {
			return err
		}
		if err := exec("number new rows", "ALTER TABLE "+table+" ALTER COLUMN id SET DEFAULT nextval('"+newSeq+"')"); err != nil {
			return err
		}
	} else if err := exec("drop the table set aside", "DROP TABLE "+old); err != nil {
		return err
	}
	if err := exec("add the primary key", "ALTER TABLE "+table+" ADD CONSTRAINT "+table+"_pkey PRIMARY KEY ("+pkey+")"); err != nil {
		return err
	}
	for _, def := range indexes {
		// The definitions name the table set aside (now dropped).
		def = regexp.MustCompile(` ON (\S+\.)?`+regexp.QuoteMeta(old)+` `).ReplaceAllString(def, " ON "+table+" ")
		def = regexp.MustCompile(` ON (\S+\.)?`+regexp.QuoteMeta(table)+` `).ReplaceAllString(def, " ON "+table+" ")
		if err := exec("make index again", def); err != nil {
			return fmt.Errorf("%w (a unique key of %s must hold %s)", err, table, column)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("partition %s: commit: %w", table, err)
	}
	// The new partitions have no statistics until autovacuum comes round,
	// and their parent (a partitioned table) is never analyzed by it.
	if _, err := conn.ExecContext(ctx, "ANALYZE "+table); err != nil {
		return fmt.Errorf("partition %s: analyze: %w", table, err)
	}
	return nil
}

// pgSplitCatchAll adds partition name [from, before) below the catch-all
// partition max of table, moving the catch-all's rows of that range into
// it, in one short transaction: the catch-all is detached, the new
// partition made, the rows moved, the catch-all attached again above it.
// No insert ever finds a range without a partition.
func pgSplitCatchAll(ctx context.Context, conn *sql.Conn, table, column, max, name string, from, before int64) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("add partition %s of %s: begin: %w", name, table, err)
	}
	defer tx.Rollback()
	maxRel, rel := pgPartitionTable(table, max), pgPartitionTable(table, name)
	for _, st := range []struct{ what, stmt string }{
		// A statement that waits longer for its locks fails, and the next
		// maintenance cycle tries again, rather than holding up runs.
		{"bound its lock waits", "SET LOCAL lock_timeout = '5s'"},
		{"detach the catch-all", "ALTER TABLE " + table + " DETACH PARTITION " + maxRel},
		{"create it", fmt.Sprintf("CREATE TABLE %s PARTITION OF %s FOR VALUES FROM (%d) TO (%d)", rel, table, from, before)},
		{"move the catch-all's rows of its range", fmt.Sprintf("INSERT INTO %s SELECT * FROM %s WHERE %s < %d", rel, maxRel, column, before)},
		{"remove them from the catch-all", fmt.Sprintf("DELETE FROM %s WHERE %s < %d", maxRel, column, before)},
		{"attach the catch-all above it", fmt.Sprintf("ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%d) TO (MAXVALUE)", table, maxRel, before)},
	} {
		if _, err := tx.ExecContext(ctx, st.stmt); err != nil {
			return fmt.Errorf("add partition %s of %s: %s: %w", name, table, st.what, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("add partition %s of %s: commit: %w", name, table, err)
	}
	return nil
}

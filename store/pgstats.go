package store

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"time"
)

// PostgreSQL plans from statistics that only ANALYZE gathers, and a new
// installation has none: its tables were empty when it was migrated (an
// ANALYZE of an empty table records nothing), and autovacuum analyzes a
// table only on its next round (autovacuum_naptime, a minute by default)
// after it has grown. Until then PostgreSQL guesses that an owner and a
// state match few runs, and plans the hand-off and the claims (WHERE id IN
// (...) AND owner = ? AND state ...) through runs_owner_state_time, reading
// the replica's whole ring of runs for each: at 5,000 every-second jobs a
// quarter of the fires of the first minute missed their second
// (docs/benchmarks.md). So each replica, once its pre-reads have inserted
// pgStatsAfterRuns runs, analyzes runs and jobs itself if nothing has
// analyzed them yet: once per process, one statement to ask, and a few
// hundred milliseconds of sampling when it has to.

// pgStatsAfterRuns is how many runs this replica inserts before it looks:
// enough for the statistics to show a ring (a run per job and second).
const pgStatsAfterRuns = 1000

// pgStats is a replica's one look at its tables' statistics (nil on
// MySQL and SQLite).
type pgStats struct {
	inserted atomic.Int64
	done     atomic.Bool
	mu       sync.Mutex
}

// countRuns notes runs inserted by a pre-read.
func (p *pgStats) countRuns(n int) {
	if p != nil && !p.done.Load() {
		p.inserted.Add(int64(n))
	}
}

// ensure analyzes runs and jobs when enough runs were inserted here and
// neither ANALYZE nor autovacuum has analyzed them. It is called after a
// pre-read commits, outside any transaction, and reports nothing: without
// it the database is only slower until autovacuum comes round.
func (p *pgStats) ensure(ctx context.Context, db *sql.DB) {
	if p == nil || p.done.Load() || p.inserted.Load() < pgStatsAfterRuns {
		return
	}
	if !p.mu.TryLock() {
		return // another pre-read is looking
	}
	defer p.mu.Unlock()
	if p.done.Load() {
		return
	}
	p.done.Store(true) // one look per process, whatever it finds
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	// No statistics of runs.owner: nothing has analyzed runs since it
	// had rows (Migrate's ANALYZE of the empty tables records none). A
	// partitioned runs table is left alone: autovacuum analyzes its day
	// partitions, and an ANALYZE of all of them could take long.
	var missing int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = current_schema() AND c.relname = 'runs' AND c.relkind = 'r'
 AND NOT EXISTS (SELECT 1 FROM pg_stats s WHERE s.schemaname = n.nspname AND s.tablename = 'runs' AND s.attname = 'owner')`).Scan(&missing); err != nil || missing == 0 {
		return
	}
	_, _ = db.ExecContext(ctx, "ANALYZE runs, jobs")
}

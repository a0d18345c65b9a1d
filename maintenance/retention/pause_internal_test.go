package retention

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPauseCountsTheWorkAfterTheCommit: the wait after a DELETE leaves the
// purge at most db_share of the database's time, counting what the
// database does for the statement after its commit (InnoDB's purge
// threads: as much again on MySQL, nothing on SQLite).
func TestPauseCountsTheWorkAfterTheCommit(t *testing.T) {
	cfg := Config{DBShare: 0.25, Pause: 5 * time.Millisecond}
	mysql := &Worker{o: Options{Config: cfg}, aftermath: 1}
	sqlite := &Worker{o: Options{Config: cfg}, aftermath: 0}
	// 10 ms of statement plus 10 ms after it, in 80 ms: a quarter.
	require.Equal(t, 70*time.Millisecond, mysql.pauseAfter(10*time.Millisecond))
	require.Equal(t, 30*time.Millisecond, sqlite.pauseAfter(10*time.Millisecond))
	require.Equal(t, 5*time.Millisecond, sqlite.pauseAfter(time.Millisecond), "at least Pause")
	unlimited := &Worker{o: Options{Config: Config{DBShare: 1, Pause: 5 * time.Millisecond}}, aftermath: 1}
	require.Equal(t, 5*time.Millisecond, unlimited.pauseAfter(time.Second), "db_share 1: Pause only")
}

// TestDropsAreSpacedOut: after a partition drop the worker waits so that
// drops start at least drop_gap apart and take at most db_share of the
// time (a backlog of days is not dropped back to back while the
// scheduler's commits wait on the file deletions).
func TestDropsAreSpacedOut(t *testing.T) {
	w := &Worker{o: Options{Config: Config{DBShare: 0.25, Pause: 5 * time.Millisecond, DropGap: 10 * time.Second}}, aftermath: 1}
	require.Equal(t, 9700*time.Millisecond, w.pauseAfterDrop(300*time.Millisecond), "the next drop 10 s after this one started")
	require.Equal(t, 12*time.Second, w.pauseAfterDrop(4*time.Second), "4 s of drop in 16 s: a quarter")
	noGap := &Worker{o: Options{Config: Config{DBShare: 0.25, Pause: 5 * time.Millisecond}}}
	require.Equal(t, 300*time.Millisecond, noGap.pauseAfterDrop(100*time.Millisecond))
	require.Equal(t, 5*time.Millisecond, noGap.pauseAfterDrop(time.Millisecond), "at least Pause")
	unlimited := &Worker{o: Options{Config: Config{DBShare: 1, Pause: 5 * time.Millisecond}}}
	require.Equal(t, 5*time.Millisecond, unlimited.pauseAfterDrop(time.Second), "db_share 1 and no gap: Pause only")
}

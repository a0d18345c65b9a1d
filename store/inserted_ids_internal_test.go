package store

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
)

// The pre-read reads the ids of the runs it inserted back by primary-key
// range, from dialect.firstInsertedID. On every database that is exactly
// the lowest id the multi-row INSERT gave: lower, and the read-back also
// reads the rows before the chunk (on MySQL/MariaDB it read two rows per
// fire); higher, and it misses some of its own.
func TestFirstInsertedIDIsTheLowestNewID(t *testing.T) {
	t.Parallel()
	open := map[string]func(t *testing.T) *Store{
		"sqlite": func(t *testing.T) *Store {
			st, err := OpenSQLite(context.Background(), dbtest.SQLitePath(t))
			require.NoError(t, err)
			return st
		},
		"mysql": func(t *testing.T) *Store {
			st, err := OpenMySQL(context.Background(), dbtest.MySQL(t))
			require.NoError(t, err)
			return st
		},
		"postgres": func(t *testing.T) *Store {
			st, err := OpenPostgres(context.Background(), dbtest.Postgres(t))
			require.NoError(t, err)
			return st
		},
	}
	for name, open := range open {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := open(t)
			t.Cleanup(func() { st.Close() })
			_, err := st.Migrate(ctx)
			require.NoError(t, err)
			// Rows before the batch, so that a bound too low would reach them.
			insert := func(first, n int) int64 {
				var q strings.Builder
				q.WriteString("INSERT INTO runs (job_id, group_id, scheduled_ms, sched_fire, trigger_type, state, owner, params, message, created_ms) VALUES ")
				var args []any
				for i := range n {
					if i > 0 {
						q.WriteString(",")
					}
					q.WriteString("(1, 1, ?, 1, 'schedule', 'scheduled', 'n1', '', '', 0)")
					args = append(args, int64(first+i))
				}
				res, err := st.db.ExecContext(ctx, q.String(), args...)
				require.NoError(t, err)
				last, err := res.LastInsertId()
				require.NoError(t, err)
				return last
			}
			insert(0, 50)
			const n = 300
			last := insert(1000, n)
			var lowest, highest int64
			require.NoError(t, st.db.QueryRowContext(ctx, "SELECT MIN(id), MAX(id) FROM runs WHERE scheduled_ms >= 1000").Scan(&lowest, &highest))
			require.Equal(t, lowest, st.d.firstInsertedID(last, n), "the batch's ids are %d..%d, LastInsertId %d", lowest, highest, last)
			var before int
			require.NoError(t, st.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM runs WHERE id >= ? AND sched_fire = 1", st.d.firstInsertedID(last, n)).Scan(&before))
			require.Equal(t, n, before, "the read-back range holds the batch and nothing before it")
		})
	}
}

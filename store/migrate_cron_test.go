package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

// The data migration 0030 rewrites day-of-week numbers of the first cron
// dialect (0=SUN) to names, once, and leaves everything else alone.
func TestMigrateCronDayOfWeek(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		cases := []struct{ typ, old, want string }{
			{typ: "cron", old: "0 0 2 ? * 1", want: "0 0 2 ? * MON"},
			{typ: "cron", old: "0 30 9 ? * 1-5", want: "0 30 9 ? * MON-FRI"},
			{typ: "cron", old: "0 0 0 ? * 0,6 *", want: "0 0 0 ? * SUN,SAT *"},
			{typ: "cron", old: "0 0 9 ? * MON-FRI", want: "0 0 9 ? * MON-FRI"},
			{typ: "cron", old: "0 0 9 1 * ?", want: "0 0 9 1 * ?"},
			{typ: "cron", old: "not a cron 1-5", want: "not a cron 1-5"},
			{typ: "fixed_rate", old: "15", want: "15"},
		}
		ids := make([]int64, len(cases))
		for i, c := range cases {
			j := mkJob(t, st, fmt.Sprintf("legacy-%d", i), t0)
			ids[i] = j.ID
			_, err := st.DB().ExecContext(ctx, "UPDATE jobs SET schedule_type = ?, schedule_conf = ? WHERE id = ?", c.typ, c.old, j.ID)
			require.NoError(t, err)
		}
		// Pretend the database predates 0030.
		_, err := st.DB().ExecContext(ctx, "DELETE FROM schema_migrations WHERE version = 30")
		require.NoError(t, err)
		pending, err := st.MigrationsPending(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, pending)

		applied, err := st.Migrate(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"0030_cron_day_of_week_names"}, applied)
		for i, c := range cases {
			j, err := st.JobGet(ctx, ids[i])
			require.NoError(t, err)
			require.Equal(t, c.want, j.ScheduleConf, "job with %s %q", c.typ, c.old)
		}

		// Applied once: a numeric day written afterwards is the new dialect's.
		_, err = st.DB().ExecContext(ctx, "UPDATE jobs SET schedule_conf = '0 0 2 ? * 2' WHERE id = ?", ids[0])
		require.NoError(t, err)
		applied, err = st.Migrate(ctx)
		require.NoError(t, err)
		require.Empty(t, applied)
		j, err := st.JobGet(ctx, ids[0])
		require.NoError(t, err)
		require.Equal(t, "0 0 2 ? * 2", j.ScheduleConf)
	})
}

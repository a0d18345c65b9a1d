package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

// Migration 0070 makes (group, name) unique. A database with duplicate names
// is refused with the duplicates listed and the SQL that fixes them; after
// the fix it applies.
func TestMigrateJobNamesUnique(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		a := mkJob(t, st, "nightly", t0)
		_, err := st.JobCreate(ctx, store.JobCreateParams{JobFields: store.JobFields{GroupID: a.GroupID, Name: "nightly", ScheduleType: "none", TimeZone: "UTC", ShardCount: 1}, NowMs: t0})
		require.ErrorIs(t, err, store.ErrConflict)

		// Pretend the database predates 0070 and holds duplicates.
		drop := "DROP INDEX jobs_group_name ON jobs"
		if st.Kind() != "mysql" {
			drop = "DROP INDEX jobs_group_name"
		}
		_, err = st.DB().ExecContext(ctx, drop)
		require.NoError(t, err)
		_, err = st.DB().ExecContext(ctx, "DELETE FROM schema_migrations WHERE version = 70")
		require.NoError(t, err)
		b := mkJob(t, st, "nightly", t0)
		c := mkJob(t, st, "nightly", t0)
		mkJob(t, st, "other", t0)

		_, err = st.Migrate(ctx)
		require.Error(t, err)
		require.Contains(t, err.Error(), `group "g", job "nightly": ids `)
		require.Contains(t, err.Error(), "UPDATE jobs SET name = CONCAT(name, '-', id) WHERE id IN (")
		pending, err := st.MigrationsPending(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, pending)

		// The suggested fix (CONCAT works on both dialects we ship).
		for _, id := range []int64{b.ID, c.ID} {
			_, err = st.DB().ExecContext(ctx, "UPDATE jobs SET name = CONCAT(name, '-', id) WHERE id = ?", id)
			require.NoError(t, err)
		}
		applied, err := st.Migrate(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"0070_job_names_unique"}, applied)
		got, err := st.JobGetByName(ctx, "g", "nightly")
		require.NoError(t, err)
		require.Equal(t, a.ID, got.ID)
		_, err = st.JobGetByName(ctx, "g", "missing")
		require.True(t, errors.Is(err, store.ErrNotFound))
	})
}

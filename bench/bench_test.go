package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/targets"
)

func TestPercentilesNearestRank(t *testing.T) {
	t.Parallel()
	require.Equal(t, pct{}, percentiles(nil))
	v := make([]float64, 100)
	for i := range v {
		v[i] = float64(100 - i) // 100..1, unsorted
	}
	p := percentiles(v)
	require.Equal(t, pct{N: 100, P50: 50, P99: 99, Max: 100}, p)
	require.Equal(t, pct{N: 1, P50: 7, P99: 7, Max: 7}, percentiles([]float64{7}))
}

func TestNoopDriverCountsDuplicatesAndMissing(t *testing.T) {
	t.Parallel()
	d := newNoopDriver([]int64{10, 20}, 1000, 10) // seconds 1000..1009
	run := func(job, sec int64) {
		_, err := d.Run(context.Background(), targets.Request{JobID: job, ScheduledAt: time.Unix(sec, 0)})
		require.NoError(t, err)
	}
	for s := int64(1002); s < 1005; s++ {
		run(10, s)
		if s != 1003 {
			run(20, s)
		}
	}
	run(10, 1004)             // a duplicate
	run(20, 1009)             // outside the measured seconds, still checked for duplicates
	run(30, 1002)             // an unknown job: off the table
	st := d.stats(1002, 1005) // 3 seconds x 2 jobs = 6 fires expected
	require.EqualValues(t, 5, st.Dispatched)
	require.EqualValues(t, 1, st.Missing)
	require.EqualValues(t, 1, st.Duplicates)
	require.EqualValues(t, 8, st.Calls)
	require.Equal(t, 1, st.OtherFires)
	require.Len(t, st.LagMs, 5)
	require.Len(t, st.PerSecond, 3)
	require.Equal(t, 1, st.PerSecond[1].N)
}

func TestStatementShape(t *testing.T) {
	t.Parallel()
	require.Equal(t, "UPDATE r SET s = ?, f = CASE WHEN id IN (…) THEN ? WHEN id IN (…) THEN ? ELSE f END WHERE id IN (…)",
		shape("UPDATE r SET s = 'succeeded', f = CASE WHEN id IN (1,2,3) THEN 5 WHEN id IN (4, 5) THEN 6 ELSE f END WHERE id IN (1,2,3,4,5)"))
	long := shape("SELECT " + strings.Repeat("column_name, ", 20) + "x FROM t")
	require.Len(t, []rune(long), 111, "long statements are cut at 110 runes")
	require.Equal(t, "INSERT INTO t (a, b) VALUES (…),…", shape("INSERT INTO t (a, b) VALUES (1,'x'),(2,'y'),(3,'z')"))
	require.Equal(t, "UPDATE jobs SET n = CASE id WHEN… ELSE n END", shape("UPDATE jobs SET n = CASE id WHEN 1 THEN 2 WHEN 3 THEN 4 ELSE n END"))
}

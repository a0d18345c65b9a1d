package main

import (
	"testing"
	"time"
)

// A +burst row reports each burst's lag besides the row's: a slow burst
// shows as one, not as a slow run.
func TestAnalyzeGivesEachBurstItsLag(t *testing.T) {
	from := time.UnixMilli(100_000)
	to := from.Add(20 * time.Second)
	jobs := map[int64]bool{1: true, 2: true}
	arrive := func(job, schedMs, run, lagMs int64) record {
		return record{Kind: kindArrival, A: job, B: schedMs, C: run, D: (schedMs + lagMs) * int64(time.Millisecond)}
	}
	recs := []record{
		arrive(1, 100_000, 11, 10), arrive(2, 100_000, 12, 30),
		arrive(1, 110_000, 13, 70), arrive(2, 110_000, 14, 90),
		arrive(2, 110_000, 14, 95), // the same fire again: a duplicate, its first arrival counts
	}
	var r rowResult
	analyze(&r, recs, jobs, from, to, 10)
	if r.Received != 4 || r.Missing != 0 || r.Duplicates != 1 {
		t.Fatalf("received %d, missing %d, duplicates %d; want 4, 0, 1", r.Received, r.Missing, r.Duplicates)
	}
	if len(r.BurstLags) != 2 {
		t.Fatalf("%d bursts, want 2: %+v", len(r.BurstLags), r.BurstLags)
	}
	if b := r.BurstLags[0]; b.N != 2 || b.P50 != 10 || b.Max != 30 {
		t.Errorf("first burst %+v, want 2 fires, p50 10, max 30 ms", b)
	}
	if b := r.BurstLags[1]; b.N != 2 || b.P50 != 70 || b.Max != 90 {
		t.Errorf("second burst %+v, want 2 fires, p50 70, max 90 ms", b)
	}
	var every rowResult
	analyze(&every, recs, jobs, from, to, 1)
	if every.BurstLags != nil {
		t.Errorf("every-second rows have no bursts, got %+v", every.BurstLags)
	}
}

package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
)

// noopDriver is the benchmark's target (scheme noop://). Run answers
// "succeeded" at once and records, per (job, scheduled second), how many times
// it was called and when it was first called (wall clock), so the harness can
// count duplicates and missing fires and measure lag without the database.
//
// The counters are a dense table indexed by job slot and second, written with
// atomics, so the driver adds no lock to the dispatch path it measures.
// Fires outside the table (not on a whole second, or outside the run) go to
// a small map under a mutex.
type noopDriver struct {
	slot    map[int64]int // job id -> row; read-only once the run starts
	jobs    int
	baseSec int64 // first second of the table
	secs    int64 // seconds per row

	count []atomic.Uint32 // dispatches of (job, second)
	seen  []atomic.Int64  // wall time (unix µs) of the first dispatch

	calls atomic.Int64

	mu    sync.Mutex
	other map[otherKey]int // fires that do not fit the table
}

type otherKey struct {
	job   int64
	schMs int64
}

var _ targets.Driver = (*noopDriver)(nil)

func newNoopDriver(jobIDs []int64, baseSec, secs int64) *noopDriver {
	d := &noopDriver{slot: make(map[int64]int, len(jobIDs)), jobs: len(jobIDs), baseSec: baseSec, secs: secs, other: map[otherKey]int{}}
	for i, id := range jobIDs {
		d.slot[id] = i
	}
	d.count = make([]atomic.Uint32, int64(len(jobIDs))*secs)
	d.seen = make([]atomic.Int64, int64(len(jobIDs))*secs)
	return d
}

// index is the table cell of a fire, or -1 when it has none.
func (d *noopDriver) index(jobID, scheduledMs int64) int64 {
	row, ok := d.slot[jobID]
	if !ok || scheduledMs%1000 != 0 {
		return -1
	}
	s := scheduledMs/1000 - d.baseSec
	if s < 0 || s >= d.secs {
		return -1
	}
	return int64(row)*d.secs + s
}

func (d *noopDriver) Run(_ context.Context, req targets.Request) (targets.Dispatch, error) {
	now := time.Now().UnixMicro()
	d.calls.Add(1)
	if i := d.index(req.JobID, req.ScheduledAt.UnixMilli()); i >= 0 {
		if d.count[i].Add(1) == 1 {
			d.seen[i].Store(now)
		}
	} else {
		d.mu.Lock()
		d.other[otherKey{req.JobID, req.ScheduledAt.UnixMilli()}]++
		d.mu.Unlock()
	}
	return targets.Dispatch{Done: &targets.Outcome{State: kind.RunSucceeded, Code: 200, Message: "noop"}}, nil
}

func (d *noopDriver) Beat(context.Context, string) error            { return nil }
func (d *noopDriver) IdleBeat(context.Context, string, int64) error { return nil }
func (d *noopDriver) Kill(context.Context, string, int64, int64) error {
	return nil
}
func (d *noopDriver) Log(context.Context, string, int64, int) (targets.LogChunk, error) {
	return targets.LogChunk{End: true}, nil
}

// driverStats is what the driver saw.
type driverStats struct {
	Calls       int64 // every Run call
	Duplicates  int64 // (job, time) pairs dispatched more than once, whole run
	Dispatched  int64 // distinct fires with a scheduled time in [from, to)
	Missing     int64 // fires in [from, to) never dispatched
	InWindow    int64 // Run calls whose wall time fell in [from, to)
	LagMs       []float64
	PerSecond   []secondLag // by fire second, in order
	OtherFires  int         // fires outside the table (should be 0 for every-second jobs)
	OtherDouble int
}

// secondLag is the driver lag of the fires of one second.
type secondLag struct {
	Sec      int64
	N        int
	P50, Max float64
}

// stats summarises the fires with scheduled seconds in [fromSec, toSec).
func (d *noopDriver) stats(fromSec, toSec int64) driverStats {
	var st driverStats
	st.Calls = d.calls.Load()
	fromUs, toUs := fromSec*1_000_000, toSec*1_000_000
	for row := 0; row < d.jobs; row++ {
		for s := int64(0); s < d.secs; s++ {
			i := int64(row)*d.secs + s
			c := d.count[i].Load()
			if c > 1 {
				st.Duplicates += int64(c - 1)
			}
			if c > 0 {
				if w := d.seen[i].Load(); w >= fromUs && w < toUs {
					st.InWindow++ // first dispatches only; duplicates are reported apart
				}
			}
			sec := d.baseSec + s
			if sec < fromSec || sec >= toSec {
				continue
			}
			if c == 0 {
				st.Missing++
				continue
			}
			st.Dispatched++
			st.LagMs = append(st.LagMs, float64(d.seen[i].Load()-sec*1_000_000)/1000)
		}
	}
	for sec := fromSec; sec < toSec; sec++ {
		s := sec - d.baseSec
		if s < 0 || s >= d.secs {
			continue
		}
		sl := secondLag{Sec: sec}
		var lags []float64
		for row := 0; row < d.jobs; row++ {
			i := int64(row)*d.secs + s
			if d.count[i].Load() == 0 {
				continue
			}
			lags = append(lags, float64(d.seen[i].Load()-sec*1_000_000)/1000)
		}
		p := percentiles(lags)
		sl.N, sl.P50, sl.Max = p.N, p.P50, p.Max
		st.PerSecond = append(st.PerSecond, sl)
	}
	d.mu.Lock()
	for _, c := range d.other {
		st.OtherFires++
		if c > 1 {
			st.OtherDouble++
			st.Duplicates += int64(c - 1)
		}
	}
	d.mu.Unlock()
	return st
}

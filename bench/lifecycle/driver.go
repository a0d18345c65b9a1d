package main

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
)

// countingDriver is the benchmark's target (noop://): it answers success at
// once and records, for the watched (every-second) jobs, when each (job,
// second) was first dispatched and how often, so the harness counts missing
// and doubled fires and measures lag at the target, not in our tables.
type countingDriver struct {
	slot    map[int64]int // watched job id -> row
	baseSec int64
	secs    int64
	count   []atomic.Uint32
	seen    []atomic.Int64 // unix µs of the first dispatch
	others  atomic.Int64   // dispatches of jobs not watched (the daily ones)
	calls   atomic.Int64
}

var _ targets.Driver = (*countingDriver)(nil)

func newCountingDriver(watched []int64, baseSec, secs int64) *countingDriver {
	d := &countingDriver{slot: make(map[int64]int, len(watched)), baseSec: baseSec, secs: secs}
	for i, id := range watched {
		d.slot[id] = i
	}
	d.count = make([]atomic.Uint32, int64(len(watched))*secs)
	d.seen = make([]atomic.Int64, int64(len(watched))*secs)
	return d
}

func (d *countingDriver) Run(_ context.Context, req targets.Request) (targets.Dispatch, error) {
	now := time.Now().UnixMicro()
	d.calls.Add(1)
	row, ok := d.slot[req.JobID]
	ms := req.ScheduledAt.UnixMilli()
	if s := ms/1000 - d.baseSec; ok && ms%1000 == 0 && s >= 0 && s < d.secs {
		i := int64(row)*d.secs + s
		if d.count[i].Add(1) == 1 {
			d.seen[i].Store(now)
		}
	} else if !ok {
		d.others.Add(1)
	}
	return targets.Dispatch{Done: &targets.Outcome{State: kind.RunSucceeded, Code: 200, Message: "noop"}}, nil
}

func (d *countingDriver) Beat(context.Context, string) error               { return nil }
func (d *countingDriver) IdleBeat(context.Context, string, int64) error    { return nil }
func (d *countingDriver) Kill(context.Context, string, int64, int64) error { return nil }
func (d *countingDriver) Log(context.Context, string, int64, int) (targets.LogChunk, error) {
	return targets.LogChunk{End: true}, nil
}

// window is what the target saw of the watched jobs for fire seconds [from, to).
type window struct {
	Expected   int     `json:"expected"`
	Missing    int     `json:"missing"`
	Duplicates int     `json:"duplicates"`
	LagP50Ms   float64 `json:"lag_p50_ms"`
	LagP99Ms   float64 `json:"lag_p99_ms"`
	LagMaxMs   float64 `json:"lag_max_ms"`
}

func (d *countingDriver) window(from, to int64) window {
	return d.windows([][2]int64{{from, to}})
}

// windows is what the target saw over several [from, to) windows together.
func (d *countingDriver) windows(ranges [][2]int64) window {
	var w window
	var lags []float64
	var mu sync.Mutex
	for row := 0; row < len(d.slot); row++ {
		for _, rg := range ranges {
			for sec := rg[0]; sec < rg[1]; sec++ {
				s := sec - d.baseSec
				if s < 0 || s >= d.secs {
					continue
				}
				i := int64(row)*d.secs + s
				w.Expected++
				switch n := d.count[i].Load(); {
				case n == 0:
					w.Missing++
					continue
				case n > 1:
					w.Duplicates += int(n - 1)
				}
				lag := float64(d.seen[i].Load()-sec*1_000_000) / 1000
				mu.Lock()
				lags = append(lags, lag)
				mu.Unlock()
			}
		}
	}
	sort.Float64s(lags)
	if len(lags) > 0 {
		w.LagP50Ms = lags[len(lags)*50/100]
		w.LagP99Ms = lags[min(len(lags)-1, len(lags)*99/100)]
		w.LagMaxMs = lags[len(lags)-1]
	}
	return w
}

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// percentiles are the lag fields both harnesses write.
type percentiles struct {
	P50 *float64 `json:"p50"`
	P99 *float64 `json:"p99"`
	Max *float64 `json:"max"`
}

// result is the part of a result line the charts draw. An e2e line names a
// target and its lag at the target; a core line has the driver's lag.
type result struct {
	Label         string       `json:"label"`
	Target        string       `json:"target"`
	Jobs          int          `json:"jobs"`
	PeriodS       int          `json:"period_s"`
	IntervalS     float64      `json:"interval_s"`
	FiresExpected float64      `json:"fires_expected"`
	Lag           *percentiles `json:"lag_ms"`
	LagDriver     *percentiles `json:"lag_driver_ms"`
	ServerMsFire  *float64     `json:"server_cpu_ms_per_fire"`
	CPUDB         float64      `json:"cpu_db_cores"`
	CPUTargets    float64      `json:"cpu_targets_cores"`
}

func (r result) e2e() bool { return r.Target != "" }

// name is how a row is labelled in a chart.
func (r result) name() string {
	var b strings.Builder
	if r.e2e() {
		b.WriteString(r.Target)
		b.WriteString(", ")
	}
	fmt.Fprintf(&b, "%s jobs", thousands(r.Jobs))
	if r.PeriodS > 1 {
		fmt.Fprintf(&b, " in one second every %d s", r.PeriodS)
	}
	if r.Label != "" {
		fmt.Fprintf(&b, " (%s)", r.Label)
	}
	return b.String()
}

// lag is the lag the harness reports at the target: at the executor end to
// end, at the driver in process.
func (r result) lag() *percentiles {
	if r.e2e() {
		return r.Lag
	}
	return r.LagDriver
}

// msPerFire turns cores used over the interval into CPU milliseconds per
// fire.
func (r result) msPerFire(cores float64) float64 {
	return cores * r.IntervalS * 1000 / r.FiresExpected
}

// readResults reads JSON lines; every line must be a result of one kind
// (all e2e or all core) with the fields its charts need.
func readResults(rd io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if len(out) > 0 && out[0].e2e() != r.e2e() {
			return nil, fmt.Errorf("line %d: mixes bench/e2e and bench results (field target)", n)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no result lines")
	}
	return out, nil
}

func (r result) check() error {
	if r.Jobs <= 0 {
		return errors.New("field jobs: missing or not positive")
	}
	lagField := "lag_driver_ms"
	if r.e2e() {
		lagField = "lag_ms"
	}
	l := r.lag()
	if l == nil || l.P50 == nil || l.P99 == nil || l.Max == nil {
		return fmt.Errorf("field %s: needs p50, p99 and max", lagField)
	}
	if r.e2e() {
		if r.ServerMsFire == nil {
			return errors.New("field server_cpu_ms_per_fire: missing")
		}
		if r.IntervalS <= 0 || r.FiresExpected <= 0 {
			return errors.New("fields interval_s and fires_expected: missing or not positive")
		}
	}
	return nil
}

// thousands writes n with comma separators, as the docs do.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Command trace summarizes a statement trace of bench/fresh-mariadbd.sh
// (TRACE=FILE) second by second: for each kind of scheduler statement, how
// many ran, the rows they changed, their summed time, and when within the
// second the first started and the last ended. The last line gives medians
// over the busy seconds (those that handed off at least -min-rows runs).
//
//	TRACE=/tmp/t.tsv bench/fresh-mariadbd.sh go run ./bench -jobs 10000
//	go run ./bench/trace /tmp/t.tsv
//
// The hand-offs' end is when the last run of the second could be sent:
// the driver's lag p99 follows it.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// kinds are the statements followed, by the start of their text.
var kinds = []struct{ name, prefix string }{
	{"hand-off", "UPDATE runs SET target = "},
	{"hand-off", "UPDATE runs SET dispatched_ms = CASE WHEN state"},
	{"claim", "UPDATE runs SET state = 'dispatching'"},
	{"outcome", "UPDATE runs SET state = "},
	{"last-outcome", "UPDATE jobs j JOIN"},
	{"insert", "INSERT INTO runs "},
	{"advance", "UPDATE jobs SET next_fire_ms"},
}

type span struct {
	n, rows     int
	sumMs       float64
	first, last float64 // ms within the second
}

func main() {
	minRows := flag.Int("min-rows", 1, "busy seconds hand off (or claim) at least this many runs")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: trace [-min-rows N] FILE")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *minRows); err != nil {
		fmt.Fprintln(os.Stderr, "trace:", err)
		os.Exit(1)
	}
}

func run(path string, minRows int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var wall0, timer0 float64
	secs := map[int64]map[string]*span{}
	for line := 1; sc.Scan(); line++ {
		t := sc.Text()
		if strings.HasPrefix(t, "# marker ") {
			fs := strings.Fields(t)
			if len(fs) != 4 {
				return fmt.Errorf("line %d: marker: want wall and timer", line)
			}
			if wall0, err = strconv.ParseFloat(fs[2], 64); err == nil {
				timer0, err = strconv.ParseFloat(fs[3], 64)
			}
			if err != nil {
				return fmt.Errorf("line %d: marker: %w", line, err)
			}
			continue
		}
		if wall0 == 0 {
			return fmt.Errorf("line %d: no marker line before the statements", line)
		}
		fs := strings.SplitN(t, "\t", 4)
		if len(fs) != 4 {
			continue
		}
		kind := ""
		for _, k := range kinds {
			if strings.HasPrefix(fs[3], k.prefix) {
				kind = k.name
				break
			}
		}
		if kind == "" {
			continue
		}
		start, err1 := strconv.ParseFloat(fs[0], 64)
		wait, err2 := strconv.ParseFloat(fs[1], 64)
		rows, err3 := strconv.Atoi(fs[2])
		if err1 != nil || err2 != nil || err3 != nil || rows == 0 {
			continue
		}
		at := wall0 + (start-timer0)/1e12 // seconds
		sec := int64(math.Floor(at))
		ms := (at - float64(sec)) * 1000
		dur := wait / 1e9
		m := secs[sec]
		if m == nil {
			m = map[string]*span{}
			secs[sec] = m
		}
		s := m[kind]
		if s == nil {
			s = &span{first: ms, last: ms + dur}
			m[kind] = s
		}
		s.n++
		s.rows += rows
		s.sumMs += dur
		s.first = math.Min(s.first, ms)
		s.last = math.Max(s.last, ms+dur)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	keys := make([]int64, 0, len(secs))
	for k := range secs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var ends, sums []float64
	for _, sec := range keys {
		m := secs[sec]
		gate := m["hand-off"]
		if gate == nil {
			gate = m["claim"]
		}
		if gate == nil || gate.rows < minRows {
			continue
		}
		ends = append(ends, gate.last)
		sums = append(sums, gate.sumMs)
		var b strings.Builder
		fmt.Fprintf(&b, "%d", sec)
		for _, k := range []string{"hand-off", "claim", "outcome", "last-outcome", "insert", "advance"} {
			if s := m[k]; s != nil {
				fmt.Fprintf(&b, " | %s %.0f-%.0f ms, %d stmts, %d rows, %.0f ms", k, s.first, s.last, s.n, s.rows, s.sumMs)
			}
		}
		fmt.Println(b.String())
	}
	if len(ends) == 0 {
		return fmt.Errorf("no second handed off %d runs or more", minRows)
	}
	fmt.Printf("%d busy seconds: hand-offs end at median %.0f ms (p90 %.0f), statement time median %.0f ms a second\n",
		len(ends), quantile(ends, 0.5), quantile(ends, 0.9), quantile(sums, 0.5))
	return nil
}

func quantile(v []float64, q float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

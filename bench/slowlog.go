package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// slowLog uses MariaDB's slow query log as a statement profiler: with
// -slowlog the harness switches the log on globally (long_query_time stays as
// it is for every other client) and sets long_query_time=0 on its own
// connections only, so every statement of the benchmark database is logged
// with its time and row counts. The previous setting is restored at the end.
// The log file must be readable by the harness (same machine).
type slowLog struct {
	admin   *sql.DB
	path    string
	wasOn   bool
	from    int64 // file offset at the start of the measured interval
	to      int64
	enabled bool
}

func enableSlowLog(ctx context.Context, admin *sql.DB) (*slowLog, error) {
	l := &slowLog{admin: admin}
	var on int
	var file, dataDir string
	if err := admin.QueryRowContext(ctx, "SELECT @@global.slow_query_log, @@slow_query_log_file, @@datadir").Scan(&on, &file, &dataDir); err != nil {
		return nil, fmt.Errorf("read slow log settings: %w", err)
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(dataDir, file)
	}
	l.path, l.wasOn = file, on == 1
	if !l.wasOn {
		if _, err := admin.ExecContext(ctx, "SET GLOBAL slow_query_log = 1"); err != nil {
			return nil, fmt.Errorf("switch the slow query log on (needs SUPER or SYSTEM_VARIABLES_ADMIN): %w", err)
		}
	}
	l.enabled = true
	return l, nil
}

func (l *slowLog) size() int64 {
	fi, err := os.Stat(l.path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func (l *slowLog) markStart() { l.from = l.size() }
func (l *slowLog) markEnd()   { l.to = l.size() }

// restore switches the log off again if the harness switched it on.
func (l *slowLog) restore(ctx context.Context) {
	if l == nil || !l.enabled || l.wasOn {
		return
	}
	l.enabled = false
	_, _ = l.admin.ExecContext(ctx, "SET GLOBAL slow_query_log = 0")
}

// stmtStat sums the logged executions of one statement shape.
type stmtStat struct {
	Shape        string  `json:"shape"`
	Count        int     `json:"count"`
	TotalMs      float64 `json:"total_ms"`
	MaxMs        float64 `json:"max_ms"`
	RowsAffected int64   `json:"rows_affected"`
	RowsExamined int64   `json:"rows_examined"`
	RowsSent     int64   `json:"rows_sent"`
}

var (
	reQuery = regexp.MustCompile(`Query_time: ([0-9.]+)\s+Lock_time: [0-9.]+\s+Rows_sent: (\d+)\s+Rows_examined: (\d+)`)
	reAff   = regexp.MustCompile(`Rows_affected: (\d+)`)
	reStr   = regexp.MustCompile(`'(?:[^'\\]|\\.)*'`)
	reNum   = regexp.MustCompile(`\b\d+\b`)
	reList  = regexp.MustCompile(`\?(?:\s*,\s*\?)+`)
	reWhen  = regexp.MustCompile(`(?:\s*WHEN \? THEN \?)+`)
	reRows  = regexp.MustCompile(`\([?, ]+\)(?:\s*,\s*\([?, ]+\))+`)
	reSpace = regexp.MustCompile(`\s+`)
)

// shape turns a logged statement into its shape: literals become ?, lists
// and repeated CASE arms collapse.
func shape(q string) string {
	q = reStr.ReplaceAllString(q, "?")
	q = reNum.ReplaceAllString(q, "?")
	q = reWhen.ReplaceAllString(q, " WHEN…")
	q = reRows.ReplaceAllString(q, "(…),…")
	q = reList.ReplaceAllString(q, "…")
	q = reSpace.ReplaceAllString(strings.TrimSpace(q), " ")
	if r := []rune(q); len(r) > 110 {
		q = string(r[:110]) + "…"
	}
	return q
}

// analyse reads the log written during the measured interval and sums the
// statements run in schema db, most total time first.
func (l *slowLog) analyse(db string) ([]stmtStat, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, fmt.Errorf("read slow log %s: %w", l.path, err)
	}
	defer f.Close()
	if _, err := f.Seek(l.from, io.SeekStart); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(io.LimitReader(f, l.to-l.from))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	by := map[string]*stmtStat{}
	var inDB bool
	var qt float64
	var sent, exam, aff int64
	var q strings.Builder
	flush := func() {
		if inDB && q.Len() > 0 {
			k := shape(q.String())
			s := by[k]
			if s == nil {
				s = &stmtStat{Shape: k}
				by[k] = s
			}
			s.Count++
			ms := qt * 1000
			s.TotalMs += ms
			s.MaxMs = max(s.MaxMs, ms)
			s.RowsAffected += aff
			s.RowsExamined += exam
			s.RowsSent += sent
		}
		q.Reset()
		qt, sent, exam, aff = 0, 0, 0, 0
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# User@Host:") || strings.HasPrefix(line, "# Time:"):
			flush()
			inDB = false
		case strings.HasPrefix(line, "# Thread_id:"):
			inDB = strings.Contains(line, "Schema: "+db+" ")
		case strings.HasPrefix(line, "# Query_time:"):
			if m := reQuery.FindStringSubmatch(line); m != nil {
				qt, _ = strconv.ParseFloat(m[1], 64)
				sent, _ = strconv.ParseInt(m[2], 10, 64)
				exam, _ = strconv.ParseInt(m[3], 10, 64)
			}
		case strings.HasPrefix(line, "# Rows_affected:"):
			if m := reAff.FindStringSubmatch(line); m != nil {
				aff, _ = strconv.ParseInt(m[1], 10, 64)
			}
		case strings.HasPrefix(line, "#"), strings.HasPrefix(line, "SET timestamp="), strings.HasPrefix(line, "use "):
		default:
			q.WriteString(line)
			q.WriteByte(' ')
		}
	}
	flush()
	out := make([]stmtStat, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TotalMs > out[j].TotalMs })
	return out, sc.Err()
}

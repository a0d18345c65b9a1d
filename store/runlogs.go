package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/ringjob/ringjob/internal/kind"
)

// RunLogChunk is a slice of a run's central log by 1-based line numbers.
type RunLogChunk struct {
	FromLine int
	ToLine   int // last line returned, 0 when none
	Content  string
	Finished bool // the run is in a final state
}

// RunLogAppend appends text to a run's log. Text is split into lines; a
// missing final newline is added.
func (s *Store) RunLogAppend(ctx context.Context, runID int64, text string) error {
	if text == "" {
		return nil
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	lines := strings.Count(text, "\n")
	// Concurrent appends to one run race for the next sequence number (the
	// loser gets a duplicate key) or deadlock on the INSERT ... SELECT's
	// locks (the database rolls one back): both only ask to run again.
	// A statement cut off mid-flight is not repeated (it may have appended).
	dupes := 0
	err := s.retry(ctx, false, func() error {
		_, err := s.db.ExecContext(ctx, `INSERT INTO run_logs (run_id, seq, first_line, line_count, content)
 SELECT ?, COALESCE(MAX(seq), 0) + 1, COALESCE(MAX(first_line + line_count), 1), ?, ? FROM run_logs WHERE run_id = ?`,
			runID, lines, text, runID)
		if s.d.isDuplicate(err) && dupes < retryConflictMax {
			dupes++
			return fmt.Errorf("%w: %w", errRaced, err)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("append to log of run %d: %w", runID, err)
	}
	return nil
}

// RunLogRead reads a run's log from a 1-based line.
func (s *Store) RunLogRead(ctx context.Context, runID int64, fromLine int) (RunLogChunk, error) {
	if fromLine < 1 {
		fromLine = 1
	}
	out := RunLogChunk{FromLine: fromLine}
	var state kind.RunState
	if err := s.db.QueryRowContext(ctx, "SELECT state FROM runs WHERE id = ?", runID).Scan(&state); err != nil {
		return out, fmt.Errorf("read log of run %d: %w", runID, notFound(err, "run", runID))
	}
	out.Finished = state.Final()
	rows, err := s.db.QueryContext(ctx, "SELECT first_line, content FROM run_logs WHERE run_id = ? AND first_line + line_count > ? ORDER BY seq", runID, fromLine)
	if err != nil {
		return out, fmt.Errorf("read log of run %d: %w", runID, err)
	}
	defer rows.Close()
	var sb strings.Builder
	for rows.Next() {
		var first int
		var content string
		if err := rows.Scan(&first, &content); err != nil {
			return out, fmt.Errorf("read log of run %d: %w", runID, err)
		}
		lines := strings.SplitAfter(content, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		for i, l := range lines {
			n := first + i
			if n < fromLine {
				continue
			}
			sb.WriteString(l)
			out.ToLine = n
		}
	}
	out.Content = sb.String()
	return out, rows.Err()
}

// RunLogEntry is one append to a run's log (RunLogAppendMany).
type RunLogEntry struct {
	RunID int64
	Text  string
}

// runLogChunk bounds the appends written by one statement (5 values each).
const runLogChunk = 500

// RunLogAppendMany appends many texts, to one run's log or to many, in two
// statements per runLogChunk entries instead of one INSERT ... SELECT each:
// one read of every run's last sequence and line number, then one multi-row
// INSERT. Entries for the same run are appended in their order. A
// concurrent append to one of the runs takes a sequence number first (the
// INSERT, atomic, fails on the duplicate key and changes nothing): both
// statements run again.
func (s *Store) RunLogAppendMany(ctx context.Context, entries []RunLogEntry) error {
	var es []RunLogEntry
	for _, e := range entries {
		if e.Text == "" {
			continue
		}
		if !strings.HasSuffix(e.Text, "\n") {
			e.Text += "\n"
		}
		es = append(es, e)
	}
	for start := 0; start < len(es); start += runLogChunk {
		if err := s.appendLogChunk(ctx, es[start:min(start+runLogChunk, len(es))]); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) appendLogChunk(ctx context.Context, es []RunLogEntry) error {
	type tail struct{ seq, next int64 }
	var ids []any
	seen := map[int64]bool{}
	for _, e := range es {
		if !seen[e.RunID] {
			seen[e.RunID] = true
			ids = append(ids, e.RunID)
		}
	}
	dupes := 0
	err := s.retry(ctx, false, func() error {
		tails := make(map[int64]tail, len(ids))
		rows, err := s.db.QueryContext(ctx, "SELECT run_id, MAX(seq), MAX(first_line + line_count) FROM run_logs WHERE run_id IN ("+
			placeholders(len(ids))+") GROUP BY run_id", ids...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var t tail
			if err := rows.Scan(&id, &t.seq, &t.next); err != nil {
				rows.Close()
				return err
			}
			tails[id] = t
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		args := make([]any, 0, 5*len(es))
		for _, e := range es {
			t, ok := tails[e.RunID]
			if !ok {
				t = tail{seq: 0, next: 1}
			}
			lines := int64(strings.Count(e.Text, "\n"))
			args = append(args, e.RunID, t.seq+1, t.next, lines, e.Text)
			tails[e.RunID] = tail{seq: t.seq + 1, next: t.next + lines}
		}
		_, err = s.db.ExecContext(ctx, "INSERT INTO run_logs (run_id, seq, first_line, line_count, content) VALUES "+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?),", len(es)), ","), args...)
		if s.d.isDuplicate(err) && dupes < retryConflictMax {
			dupes++
			return fmt.Errorf("%w: %w", errRaced, err)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("append to the logs of %d runs: %w", len(ids), err)
	}
	return nil
}

package jobfn

import (
	"fmt"
	"io"
	"strings"
	"sync"
)

// Logger is a run's log. Every line goes to the function's stdout at once
// (so it is in CloudWatch and in the log tail Ringjob reads in synchronous
// mode) and is also collected for the response or callback, up to a cap.
// It is safe for concurrent use.
type Logger struct {
	out      io.Writer
	maxLines int
	maxBytes int

	mu      sync.Mutex
	lines   []string
	bytes   int
	dropped int
}

func newLogger(out io.Writer, maxLines, maxBytes int) *Logger {
	return &Logger{out: out, maxLines: maxLines, maxBytes: maxBytes}
}

// Printf logs one line (or several, if the text has newlines).
func (l *Logger) Printf(format string, args ...any) { l.write(fmt.Sprintf(format, args...)) }

// Println logs its arguments, separated by spaces, as one line.
func (l *Logger) Println(args ...any) { l.write(strings.TrimSuffix(fmt.Sprintln(args...), "\n")) }

func (l *Logger) write(text string) {
	text = strings.TrimSuffix(text, "\n")
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range strings.Split(text, "\n") {
		if l.out != nil {
			_, _ = io.WriteString(l.out, line+"\n")
		}
		if len(l.lines) >= l.maxLines || l.bytes+len(line) > l.maxBytes {
			l.dropped++
			continue
		}
		l.lines = append(l.lines, line)
		l.bytes += len(line)
	}
}

// Lines returns the collected lines; when some were dropped past the cap, a
// last line says how many.
func (l *Logger) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append(make([]string, 0, len(l.lines)+1), l.lines...)
	if l.dropped > 0 {
		out = append(out, fmt.Sprintf("[jobfn: %d more line(s) not collected; see the function's CloudWatch log]", l.dropped))
	}
	return out
}

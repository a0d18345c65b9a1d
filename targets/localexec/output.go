//go:build unix

package localexec

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/targets"
)

// Output batching: lines reach the sink every flushInterval, or as soon as
// flushBytes are pending, and at exit.
const (
	flushInterval = 200 * time.Millisecond
	flushBytes    = 64 << 10
	// maxLine splits longer lines (without a newline) into several.
	maxLine = 64 << 10
	// maxMessageTail bounds the stderr line quoted in a failure message.
	maxMessageTail = 512
	// maxOutputLine bounds the last stdout line a success reports as its
	// message (a workflow node's output).
	maxOutputLine = 4 << 10
	stderrPrefix  = "[stderr] "
)

// truncatedMarker is the line that ends a log cut at the cap.
func truncatedMarker(capBytes int) string {
	return fmt.Sprintf("[ringjob: output truncated after %d bytes]", capBytes)
}

// read copies one pipe into the run's log line by line until EOF, or until
// drainOutput stops it with a read deadline.
func (r *run) read(f *os.File, stderr bool) {
	defer func() { r.readersDone <- struct{}{} }()
	br := bufio.NewReaderSize(f, maxLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			r.out.add(line, stderr)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// runLog collects a run's output lines and hands them to the sink in batches
// from a single goroutine, so the sink sees them in order.
type runLog struct {
	sink     targets.Sink
	runID    int64
	capBytes int
	log      *logrus.Entry

	mu        sync.Mutex
	pending   strings.Builder
	kept      int  // bytes kept in the log, newlines and prefixes included
	truncated bool // the cap was reached and the marker queued
	stderrEnd string
	stdoutEnd string

	kick    chan struct{} // asks for an early flush; buffered 1
	done    chan struct{} // closed by close: flush the rest and stop
	stopped chan struct{} // closed when flushLoop has returned
}

func newRunLog(sink targets.Sink, runID int64, capBytes int, log *logrus.Entry) *runLog {
	return &runLog{
		sink:     sink,
		runID:    runID,
		capBytes: capBytes,
		log:      log,
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		stopped:  make(chan struct{}),
	}
}

// add queues one line (raw, with or without its newline).
func (l *runLog) add(raw []byte, stderr bool) {
	line := strings.TrimSuffix(string(raw), "\n")
	line = strings.TrimSuffix(line, "\r")
	line = strings.ToValidUTF8(line, "\uFFFD")
	if stderr {
		if tail := strings.TrimSpace(line); tail != "" {
			if len(tail) > maxMessageTail {
				tail = strings.ToValidUTF8(tail[:maxMessageTail], "") + "…"
			}
			l.mu.Lock()
			l.stderrEnd = tail
			l.mu.Unlock()
		}
		line = stderrPrefix + line
	} else if tail := strings.TrimSpace(line); tail != "" {
		if len(tail) > maxOutputLine {
			tail = strings.ToValidUTF8(tail[:maxOutputLine], "")
		}
		l.mu.Lock()
		l.stdoutEnd = tail
		l.mu.Unlock()
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.truncated {
		return
	}
	if l.kept+len(line)+1 > l.capBytes {
		l.truncated = true
		l.pending.WriteString(truncatedMarker(l.capBytes))
		l.pending.WriteByte('\n')
		l.kickLocked()
		return
	}
	l.kept += len(line) + 1
	l.pending.WriteString(line)
	l.pending.WriteByte('\n')
	if l.pending.Len() >= flushBytes {
		l.kickLocked()
	}
}

func (l *runLog) kickLocked() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// lastStderr returns the last non-blank stderr line, capped in length.
func (l *runLog) lastStderr() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stderrEnd
}

// lastStdout is the last non-empty line the process printed on stdout.
func (l *runLog) lastStdout() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stdoutEnd
}

// flushLoop sends pending lines to the sink until close.
func (l *runLog) flushLoop() {
	defer close(l.stopped)
	ticker := time.NewTicker(flushInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-l.kick:
		case <-l.done:
			l.flush()
			return
		}
		l.flush()
	}
}

func (l *runLog) flush() {
	l.mu.Lock()
	text := l.pending.String()
	l.pending.Reset()
	l.mu.Unlock()
	if text == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sinkTimeout)
	defer cancel()
	if err := l.sink.AppendLog(ctx, l.runID, text); err != nil {
		l.log.WithError(err).WithField("bytes", len(text)).Warn("append run output to its log; these lines are lost")
	}
}

// close flushes what is pending and waits for flushLoop to end. The readers
// must have ended.
func (l *runLog) close() {
	close(l.done)
	<-l.stopped
}

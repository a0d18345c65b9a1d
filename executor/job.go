package executor

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Handler runs one trigger of a job. Return nil for success (handle code
// 200) or an error for failure (500, with the error text as the message). A
// panic is recovered and reported as failure with its value and stack.
//
// ctx is cancelled when the run is killed (/kill, COVER_EARLY), times out
// (executorTimeout) or the executor stops after its grace period;
// context.Cause(ctx) tells which (ErrKilled, ErrTimeout, ErrStopping). A
// handler that ignores ctx is still reported at that moment and its later
// result is dropped, but its goroutine keeps running until it returns.
type Handler func(ctx context.Context, job *Job) error

// Job is one trigger as a handler sees it. The fields are read-only. A Job
// built by hand, as in a handler's unit test, works too; its log lines are
// discarded.
type Job struct {
	JobID         int64         // the job's id on the admin
	LogID         int64         // the run's id on the admin (xxl_job_log.id, Ringjob run id)
	HandlerName   string        // the name the handler is registered under
	Params        string        // executorParams
	ShardIndex    int           // broadcastIndex: 0 unless sharding
	ShardTotal    int           // broadcastTotal: 1 unless sharding
	LogDateTime   time.Time     // trigger time; names the log file's date directory
	Timeout       time.Duration // executorTimeout; 0 = none
	BlockStrategy string        // SERIAL_EXECUTION, DISCARD_LATER or COVER_EARLY as sent

	output     string
	log        *runLog
	loggerOnce sync.Once
	logger     *log.Logger
}

// Log appends one line to the run's log file, which the admin reads through
// /log. The line is "yyyy-MM-dd HH:mm:ss [handler]-[jobId] message".
func (j *Job) Log(format string, args ...any) {
	j.log.write(fmt.Sprintf(format, args...))
}

// SetOutput sets the message a successful run reports (its handle
// message): in a Ringjob workflow, what later nodes read as
// {{ nodes.NAME.output }}. Call it from the handler before it returns nil;
// a failure reports its error instead.
func (j *Job) SetOutput(s string) { j.output = s }

// Logger returns a standard logger writing to the run's log file; each entry
// becomes one line as with Log. Use it to hand the run's log to other code.
func (j *Job) Logger() *log.Logger {
	j.loggerOnce.Do(func() { j.logger = log.New(entryWriter{j.log}, "", 0) })
	return j.logger
}

type jobKey struct{}

// FromContext returns the Job of the run whose handler got ctx, or nil.
func FromContext(ctx context.Context) *Job {
	j, _ := ctx.Value(jobKey{}).(*Job)
	return j
}

// logDate is the date directory of a run: the day of logDateTime in the
// executor's local time zone, as XXL-JOB.
func logDate(t time.Time) string { return t.Local().Format(time.DateOnly) }

// logPath is {dir}/{yyyy-MM-dd}/{logId}.log.
func logPath(dir string, logDateTime time.Time, logID int64) string {
	return filepath.Join(dir, logDate(logDateTime), strconv.FormatInt(logID, 10)+".log")
}

// runLog appends lines to one run's log file. It opens the file for each line,
// so it holds no descriptor, and a handler that outlives its run (killed but
// ignoring ctx) can still write safely.
type runLog struct {
	path   string
	tag    string // "[handler]-[jobId]"
	clock  clockwork.Clock
	logger Logger

	mu     sync.Mutex
	failed bool // the first write error was reported
}

func (l *runLog) write(msg string) {
	if l == nil { // a Job built outside the executor, e.g. in a handler's unit test
		return
	}
	line := l.clock.Now().Local().Format(time.DateTime) + " " + l.tag + " " + strings.TrimSuffix(msg, "\n") + "\n"
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := appendFile(l.path, line); err != nil && !l.failed {
		l.failed = true
		l.logger.Errorf("executor: write run log %s: %v", l.path, err)
	}
}

func appendFile(path, s string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// entryWriter adapts runLog to log.Logger, which writes one entry per call.
type entryWriter struct{ l *runLog }

func (w entryWriter) Write(p []byte) (int, error) {
	w.l.write(string(p))
	return len(p), nil
}

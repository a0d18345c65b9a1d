//go:build unix

package localexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/logs"
	"github.com/ringjob/ringjob/targets"
)

// sinkTimeout bounds each call the driver makes to the sink.
const sinkTimeout = 10 * time.Second

// Driver runs local://NAME targets as processes. Build it with New and stop
// it with Close. It is safe for concurrent use.
type Driver struct {
	cfg      Config
	commands map[string]*command
	names    []string // declared names, sorted, for error messages
	sink     targets.Sink
	log      *logrus.Entry

	mu      sync.Mutex
	runs    map[int64]*run // accepted runs that have not been reported yet
	active  map[string]int // runs per command name
	closed  bool
	live    int           // supervisors (and reservations) not yet ended
	allDone chan struct{} // closed when closed && live == 0
}

var _ targets.Driver = (*Driver)(nil)

// Capabilities: a local command runs at once on every dispatch (the
// scheduler applies the block strategy), as a process of the replica that
// sent it.
func (d *Driver) Capabilities() targets.Capabilities {
	return targets.Capabilities{Unqueued: true, OnDispatchingNode: true}
}

// command is a declared Command with its program resolved.
type command struct {
	Command
	path string
}

// New validates cfg and returns a driver that reports outcomes and output to
// sink. log may be nil (nothing is logged).
func New(cfg Config, sink targets.Sink, log *logrus.Entry) (*Driver, error) {
	if sink == nil {
		return nil, errors.New("localexec.New: sink is nil")
	}
	log = logs.OrDiscard(log)
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("localexec config: %w", err)
	}
	d := &Driver{
		cfg:      cfg,
		commands: make(map[string]*command, len(cfg.Commands)),
		sink:     sink,
		log:      log,
		runs:     map[int64]*run{},
		active:   map[string]int{},
		allDone:  make(chan struct{}),
	}
	for _, c := range cfg.Commands {
		path, err := resolveProgram(c.Argv[0])
		if err != nil { // validated above; the file may have gone since
			return nil, fmt.Errorf("localexec config: command %q: %w", c.Name, err)
		}
		d.commands[c.Name] = &command{Command: c, path: path}
		d.names = append(d.names, c.Name)
	}
	sort.Strings(d.names)
	return d, nil
}

// lookup returns the declared command a target names.
func (d *Driver) lookup(target string) (*command, error) {
	scheme, rest, ok := strings.Cut(target, "://")
	if !ok || !strings.EqualFold(scheme, "local") {
		return nil, fmt.Errorf("%w: %q is not a local target (expected local://NAME)", targets.ErrUnknownTarget, target)
	}
	name := strings.TrimSuffix(rest, "/")
	c, ok := d.commands[name]
	if !ok {
		declared := "none"
		if len(d.names) > 0 {
			declared = strings.Join(d.names, ", ")
		}
		return nil, fmt.Errorf("%w: local://%s is not a declared command (declared: %s); declare it under local.commands in the server config",
			targets.ErrUnknownTarget, name, declared)
	}
	return c, nil
}

// Run starts the command's process in its own process group and returns at
// once; the outcome reaches the sink when the process group has ended. A run
// id that is already running is not started twice.
func (d *Driver) Run(ctx context.Context, req targets.Request) (targets.Dispatch, error) {
	if err := ctx.Err(); err != nil {
		return targets.Dispatch{}, fmt.Errorf("run %d on %s: %w", req.RunID, req.Target, err)
	}
	c, err := d.lookup(req.Target)
	if err != nil {
		return targets.Dispatch{}, err
	}
	if strings.ContainsRune(req.Params, 0) {
		return targets.Dispatch{}, fmt.Errorf("run %d on local://%s: params contain a NUL byte, which a process cannot receive", req.RunID, c.Name)
	}

	r := newRun(d, c, req)
	if dup, err := d.reserve(r); err != nil || dup {
		msg := ""
		if dup {
			msg = fmt.Sprintf("run %d is already running on local://%s; duplicate dispatch ignored", req.RunID, c.Name)
		}
		return targets.Dispatch{Message: msg}, err
	}
	pid, err := r.start()
	if err != nil {
		d.release(r)
		d.ended()
		return targets.Dispatch{}, fmt.Errorf("start run %d on local://%s (%s): %w", req.RunID, c.Name, c.path, err)
	}
	go r.supervise()
	return targets.Dispatch{Message: fmt.Sprintf("started local://%s as pid %d", c.Name, pid)}, nil
}

// reserve records r as running and takes a concurrency slot. dup is true when
// the run id is already running.
func (d *Driver) reserve(r *run) (dup bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false, fmt.Errorf("run %d on local://%s: %w", r.req.RunID, r.cmd.Name, ErrClosed)
	}
	if _, ok := d.runs[r.req.RunID]; ok {
		return true, nil
	}
	if limit := r.cmd.MaxConcurrency; limit > 0 && d.active[r.cmd.Name] >= limit {
		return false, fmt.Errorf("%w: %w: local://%s already runs %d of at most %d (MaxConcurrency); run %d rejected",
			targets.ErrBusy, ErrConcurrencyLimit, r.cmd.Name, d.active[r.cmd.Name], limit, r.req.RunID)
	}
	d.runs[r.req.RunID] = r
	d.active[r.cmd.Name]++
	d.live++
	return false, nil
}

// release forgets r and frees its concurrency slot.
func (d *Driver) release(r *run) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.runs[r.req.RunID] == r {
		delete(d.runs, r.req.RunID)
		d.active[r.cmd.Name]--
	}
}

// ended marks the end of one reservation or supervisor.
func (d *Driver) ended() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.live--
	if d.closed && d.live == 0 {
		close(d.allDone)
	}
}

// Beat reports whether the target is a declared command whose program is
// still an executable file.
func (d *Driver) Beat(_ context.Context, target string) error {
	c, err := d.lookup(target)
	if err != nil {
		return err
	}
	if _, err := exec.LookPath(c.path); err != nil {
		return fmt.Errorf("local://%s: program %s is not executable: %w", c.Name, c.path, err)
	}
	return nil
}

// IdleBeat returns an error wrapping targets.ErrBusy when this driver runs a
// process for the job, on any command.
func (d *Driver) IdleBeat(_ context.Context, target string, jobID int64) error {
	if _, err := d.lookup(target); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, r := range d.runs {
		if r.req.JobID == jobID {
			return fmt.Errorf("%w: job %d has run %d running on local://%s", targets.ErrBusy, jobID, id, r.cmd.Name)
		}
	}
	return nil
}

// Kill ends the run's whole process group (SIGTERM, then SIGKILL after
// KillGrace) and returns without waiting; the run is reported as killed. A run
// that is not running here is not an error.
func (d *Driver) Kill(_ context.Context, _ string, runID, _ int64) error {
	d.mu.Lock()
	r := d.runs[runID]
	d.mu.Unlock()
	if r != nil {
		r.requestStop(kind.RunKilled, "killed by request")
	}
	return nil
}

// Log reads the run's log from the sink, from a 1-based line.
func (d *Driver) Log(ctx context.Context, _ string, runID int64, fromLine int) (targets.LogChunk, error) {
	chunk, err := d.sink.ReadLog(ctx, runID, fromLine)
	if err != nil {
		return targets.LogChunk{}, fmt.Errorf("read log of run %d from line %d: %w", runID, fromLine, err)
	}
	return chunk, nil
}

// Close stops taking runs, kills every running process group (SIGTERM, then
// SIGKILL after KillGrace) and waits until all of them have ended and been
// reported as killed. When ctx ends first it returns ctx's error while the
// driver finishes in the background. Close is safe to call more than once.
func (d *Driver) Close(ctx context.Context) error {
	return d.stopAll(ctx, kind.RunKilled, "killed: the local target driver shut down")
}

// Drain is the first half of a graceful stop (a rolling deploy): it stops
// taking runs and waits until the running ones have ended on their own, or
// until ctx ends (the stop grace). It returns how many runs are still
// running then; Abandon ends them.
func (d *Driver) Drain(ctx context.Context) int {
	d.closeIntake()
	select {
	case <-d.allDone:
		return 0
	case <-ctx.Done():
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.runs)
}

// Abandon ends the runs still running when this server goes away: their
// process groups are stopped (SIGTERM, then SIGKILL after KillGrace) and
// each is reported lost with msg. Unlike a kill, which a user asked for, a
// lost run is followed up like a failure: the job's retry policy runs it
// again, on a replica that stays. It waits as Close does.
func (d *Driver) Abandon(ctx context.Context, msg string) error {
	return d.stopAll(ctx, kind.RunLost, msg)
}

// closeIntake refuses new runs from now on.
func (d *Driver) closeIntake() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		d.closed = true
		if d.live == 0 {
			close(d.allDone)
		}
	}
}

// stopAll refuses new runs, stops the running ones with state and msg, and
// waits until every run has been reported or ctx ends.
func (d *Driver) stopAll(ctx context.Context, state kind.RunState, msg string) error {
	d.closeIntake()
	d.mu.Lock()
	runs := make([]*run, 0, len(d.runs))
	for _, r := range d.runs {
		runs = append(runs, r)
	}
	d.mu.Unlock()
	for _, r := range runs {
		r.requestStop(state, msg)
	}
	select {
	case <-d.allDone:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close local target driver: %d run(s) still ending: %w", len(runs), ctx.Err())
	}
}

// environ builds the process environment for a run.
func (d *Driver) environ(c *command, req targets.Request) []string {
	env := map[string]string{}
	if d.cfg.InheritEnv {
		for _, kv := range os.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" && !strings.HasPrefix(k, "RINGJOB_") {
				env[k] = v
			}
		}
	} else {
		for _, k := range []string{"PATH", "HOME", "LANG", "TZ"} {
			if v, ok := os.LookupEnv(k); ok {
				env[k] = v
			}
		}
	}
	for k, v := range c.Env {
		env[k] = v
	}
	shardTotal := req.ShardTotal
	if shardTotal < 1 {
		shardTotal = 1
	}
	scheduledAt := ""
	if !req.ScheduledAt.IsZero() {
		scheduledAt = req.ScheduledAt.Format(time.RFC3339)
	}
	env["RINGJOB_JOB_ID"] = strconv.FormatInt(req.JobID, 10)
	env["RINGJOB_RUN_ID"] = strconv.FormatInt(req.RunID, 10)
	env["RINGJOB_PARAMS"] = req.Params
	env["RINGJOB_SHARD_INDEX"] = strconv.Itoa(req.ShardIndex)
	env["RINGJOB_SHARD_TOTAL"] = strconv.Itoa(shardTotal)
	env["RINGJOB_ATTEMPT"] = strconv.Itoa(req.Attempt)
	env["RINGJOB_SCHEDULED_AT"] = scheduledAt

	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// signalGroup sends sig to the process group; a group already gone is fine.
func signalGroup(pgid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("send %s to process group %d: %w", sig, pgid, err)
	}
	return nil
}

// ValidateTarget reports whether target names a declared command.
func (d *Driver) ValidateTarget(target string) error {
	_, err := d.lookup(target)
	return err
}

var _ targets.Validator = (*Driver)(nil)

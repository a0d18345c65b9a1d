package executor

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"
	"unicode/utf8"

	"github.com/ringjob/ringjob/internal/xxlwire"
)

// One worker goroutine per job id runs that job's triggers one at a time from
// a FIFO queue (XXL-JOB's JobThread). Block strategies decide what a trigger
// does when the worker is busy: SERIAL_EXECUTION queues, DISCARD_LATER
// rejects, COVER_EARLY kills the worker (its running handler and its queue)
// and starts a new one. A worker with nothing to do for 90 s ends.
//
// All worker and run state is guarded by Executor.mu. A run is reported
// exactly once, by whichever comes first: its handler returning, its timeout,
// or a kill. I/O (log lines, callbacks) happens after mu is released, from the
// reports that finishLocked hands back.

const (
	seenLogIDs        = 10000             // logIds remembered for deduplication
	maxTimeoutSeconds = 100 * 365 * 86400 // executorTimeout is capped so it fits a time.Duration
)

// run is one accepted trigger.
type run struct {
	job     *Job
	handler Handler

	// Set when the worker takes the run from the queue.
	ctx    context.Context
	cancel context.CancelCauseFunc
	killed chan struct{} // closed when a kill reports the running run

	finished bool // reported; no other outcome is sent
}

type worker struct {
	jobID   int64
	handler string // registered name
	gen     uint64 // registration generation: Register again replaces workers
	queue   []*run
	running *run
	gone    bool          // killed or retired: the goroutine ends, nothing more is queued
	wake    chan struct{} // capacity 1
}

func (w *worker) busy() bool { return w.running != nil || len(w.queue) > 0 }

func (w *worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// report is a run's outcome, to be written to its log and called back.
type report struct {
	r    *run
	code int
	msg  string
}

// trigger accepts or rejects one /run request (XXL-JOB ExecutorBizImpl.run).
func (e *Executor) trigger(req xxlwire.TriggerRequest) (int, string) {
	if req.GlueType != "" && req.GlueType != xxlwire.GlueBean {
		if xxlwire.GlueScriptTypes[req.GlueType] {
			return CodeFail, fmt.Sprintf("fail, current glue type [%s] not supported.", req.GlueType)
		}
		return CodeFail, fmt.Sprintf("glueType[%s] is not valid.", req.GlueType)
	}
	if req.LogID <= 0 {
		return CodeFail, fmt.Sprintf("invalid request, logId must be positive, got %d.", req.LogID)
	}
	h, gen, ok := e.lookup(req.ExecutorHandler)
	if !ok {
		return CodeFail, fmt.Sprintf("job handler [%s] not found.", req.ExecutorHandler)
	}

	e.mu.Lock()
	var reports []report // of runs killed on the way; delivered once mu is released
	reject := func(msg string) (int, string) {
		e.mu.Unlock()
		e.deliver(reports...)
		return CodeFail, msg
	}
	if e.stopping {
		return reject("executor is stopping, trigger rejected.")
	}
	if e.seen.has(req.LogID) {
		return reject(fmt.Sprintf("repeat trigger job, logId:%d", req.LogID))
	}
	w := e.workers[req.JobID]
	if w != nil && (w.handler != req.ExecutorHandler || w.gen != gen) {
		reports = e.killLocked(w, reasonHandlerChange, ErrKilled)
		w = nil
	}
	if w != nil && w.busy() {
		switch req.ExecutorBlockStrategy {
		case DiscardLater:
			return reject(msgDiscardLater)
		case CoverEarly:
			reports = append(reports, e.killLocked(w, reasonCoverEarly, ErrKilled)...)
			w = nil
		}
	}
	if w != nil && len(w.queue) >= e.cfg.maxQueue {
		e.cfg.logger.Errorf("executor: job %d: queue full, rejected logId %d", req.JobID, req.LogID)
		return reject(fmt.Sprintf("job queue is full (%d triggers waiting), trigger rejected.", len(w.queue)))
	}
	if w == nil {
		w = e.newWorkerLocked(req.JobID, req.ExecutorHandler, gen)
	}
	r := e.newRun(req, h)
	w.queue = append(w.queue, r)
	w.signal()
	e.seen.add(req.LogID)
	e.active[req.LogID] = r
	e.changedLocked()
	e.mu.Unlock()

	e.deliver(reports...)
	return CodeSuccess, xxlwire.MsgSuccess
}

func (e *Executor) newRun(req xxlwire.TriggerRequest, h Handler) *run {
	job := &Job{
		JobID:         req.JobID,
		LogID:         req.LogID,
		HandlerName:   req.ExecutorHandler,
		Params:        req.ExecutorParams,
		ShardIndex:    req.BroadcastIndex,
		ShardTotal:    req.BroadcastTotal,
		LogDateTime:   time.UnixMilli(req.LogDateTime),
		BlockStrategy: req.ExecutorBlockStrategy,
	}
	if job.ShardTotal <= 0 {
		job.ShardIndex, job.ShardTotal = 0, 1
	}
	if req.ExecutorTimeout > 0 {
		job.Timeout = time.Duration(min(req.ExecutorTimeout, maxTimeoutSeconds)) * time.Second
	}
	job.log = &runLog{
		path:   logPath(e.cfg.logDir, job.LogDateTime, job.LogID),
		tag:    fmt.Sprintf("[%s]-[%d]", job.HandlerName, job.JobID),
		clock:  e.cfg.clock,
		logger: e.cfg.logger,
	}
	return &run{job: job, handler: h, killed: make(chan struct{})}
}

func (e *Executor) newWorkerLocked(jobID int64, handler string, gen uint64) *worker {
	w := &worker{jobID: jobID, handler: handler, gen: gen, wake: make(chan struct{}, 1)}
	e.workers[jobID] = w
	e.workerWG.Add(1)
	go e.work(w)
	return w
}

func (e *Executor) work(w *worker) {
	defer e.workerWG.Done()
	for {
		r := e.next(w)
		if r == nil {
			return
		}
		e.execute(w, r)
	}
}

// next takes the next run from w's queue, waiting for one; nil means the
// worker ends (killed, or idle for workerIdleTimeout).
func (e *Executor) next(w *worker) *run {
	idle := e.cfg.clock.NewTimer(workerIdleTimeout)
	defer idle.Stop()
	for {
		e.mu.Lock()
		if w.gone {
			e.mu.Unlock()
			return nil
		}
		if len(w.queue) > 0 {
			r := w.queue[0]
			w.queue[0] = nil
			w.queue = w.queue[1:]
			w.running = r
			r.ctx, r.cancel = context.WithCancelCause(context.WithValue(context.Background(), jobKey{}, r.job))
			e.mu.Unlock()
			return r
		}
		e.mu.Unlock()
		select {
		case <-w.wake:
		case <-idle.Chan():
			e.mu.Lock()
			if !w.gone && len(w.queue) == 0 {
				w.gone = true
				if e.workers[w.jobID] == w {
					delete(e.workers, w.jobID)
				}
				e.changedLocked()
			}
			e.mu.Unlock()
		}
	}
}

type outcome struct {
	code int
	msg  string
}

// execute runs r's handler and reports it: on return, at the timeout, or not
// at all if a kill reported it first.
func (e *Executor) execute(w *worker, r *run) {
	job := r.job
	defer func() {
		r.cancel(context.Canceled) // no-op if already cancelled with a cause
		e.mu.Lock()
		if w.running == r {
			w.running = nil
		}
		e.changedLocked()
		e.mu.Unlock()
	}()

	job.log.write(fmt.Sprintf("----------- job execute start ----------- params: %q, shard: %d/%d, timeout: %v",
		job.Params, job.ShardIndex, job.ShardTotal, job.Timeout))

	// The timer exists before the handler starts, so a test that waits for
	// the handler to start can then advance a fake clock past the timeout.
	var timeout <-chan time.Time
	if job.Timeout > 0 {
		t := e.cfg.clock.NewTimer(job.Timeout)
		defer t.Stop()
		timeout = t.Chan()
	}
	done := make(chan outcome, 1)
	e.mu.Lock()
	if r.finished { // killed between leaving the queue and starting
		e.mu.Unlock()
		return
	}
	e.handlerWG.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.handlerWG.Done()
		code, msg := invoke(r.ctx, r.handler, job)
		done <- outcome{code, msg}
	}()

	var rep report
	select {
	case o := <-done:
		e.mu.Lock()
		rep = e.finishLocked(r, o.code, o.msg)
		e.mu.Unlock()
	case <-timeout:
		e.mu.Lock()
		rep = e.finishLocked(r, CodeTimeout, msgTimeout)
		e.mu.Unlock()
		if rep.r != nil {
			r.cancel(ErrTimeout)
			job.log.write(fmt.Sprintf("----------- job execute timeout after %v, handler context cancelled", job.Timeout))
		}
	case <-r.killed:
	}
	e.deliver(rep)
}

// invoke calls h, turning its error or panic into a handle code and message.
func invoke(ctx context.Context, h Handler, job *Job) (code int, msg string) {
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			if len(stack) > 8<<10 {
				stack = append(stack[:8<<10:8<<10], "..."...)
			}
			code, msg = CodeFail, fmt.Sprintf("panic: %v\n%s", v, stack)
		}
	}()
	if err := h(ctx, job); err != nil {
		msg = err.Error()
		if msg == "" {
			msg = fmt.Sprintf("job handler failed (%T with no message)", err)
		}
		return CodeFail, msg
	}
	return CodeSuccess, job.output
}

// finishLocked marks r reported and returns its report; a zero report if r
// was already reported.
func (e *Executor) finishLocked(r *run, code int, msg string) report {
	if r.finished {
		return report{}
	}
	r.finished = true
	return report{r: r, code: code, msg: msg}
}

// killLocked ends w: its running run is reported killed and its context
// cancelled with cause; its queued runs are reported not executed.
func (e *Executor) killLocked(w *worker, reason string, cause error) []report {
	if e.workers[w.jobID] == w {
		delete(e.workers, w.jobID)
	}
	w.gone = true
	w.signal()
	var reports []report
	if r := w.running; r != nil {
		if rep := e.finishLocked(r, CodeFail, reason+suffixRunningKilled); rep.r != nil {
			reports = append(reports, rep)
			r.cancel(cause)
			close(r.killed)
		}
	}
	for _, r := range w.queue {
		if rep := e.finishLocked(r, CodeFail, reason+suffixQueuedKilled); rep.r != nil {
			reports = append(reports, rep)
		}
	}
	w.queue = nil
	e.changedLocked()
	return reports
}

// deliver writes each report's end line to its run log, then queues its
// callback. The run stays active (for /log's isEnd) until its end line is
// written.
func (e *Executor) deliver(reports ...report) {
	for _, rep := range reports {
		if rep.r == nil {
			continue
		}
		job := rep.r.job
		msg := truncate(rep.msg, maxHandleMsg)
		job.log.write(fmt.Sprintf("----------- job execute end ----------- handleCode: %d, handleMsg: %s", rep.code, msg))
		e.mu.Lock()
		if e.active[job.LogID] == rep.r {
			delete(e.active, job.LogID)
		}
		e.mu.Unlock()
		e.callbacks.push(xxlwire.NewCallbackItem(job.LogID, job.LogDateTime.UnixMilli(), rep.code, msg))
	}
}

// kill handles /kill: it reports whether anything was running or queued.
func (e *Executor) kill(jobID int64) bool {
	e.mu.Lock()
	w := e.workers[jobID]
	if w == nil {
		e.mu.Unlock()
		return false
	}
	busy := w.busy()
	reports := e.killLocked(w, reasonKill, ErrKilled)
	e.mu.Unlock()
	e.deliver(reports...)
	return busy
}

// idle handles /idleBeat.
func (e *Executor) idle(jobID int64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.workers[jobID]
	return w == nil || !w.busy()
}

// killAll ends every worker (Stop after the grace period).
func (e *Executor) killAll(reason string, cause error) {
	e.mu.Lock()
	var reports []report
	for _, w := range e.workers {
		reports = append(reports, e.killLocked(w, reason, cause)...)
	}
	e.mu.Unlock()
	e.deliver(reports...)
}

// allIdleLocked reports whether no worker runs or queues anything.
func (e *Executor) allIdleLocked() bool {
	for _, w := range e.workers {
		if w.busy() {
			return false
		}
	}
	return true
}

// changedLocked wakes everyone waiting for a change of worker state.
func (e *Executor) changedLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// truncate cuts s to max runes plus "...", as XXL-JOB does with handleMsg.
func truncate(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i] + "..."
		}
		n++
	}
	return s
}

// logIDSet remembers the last seenLogIDs accepted logIds, so a trigger sent
// twice (a retried dispatch) runs once even after the first has finished.
type logIDSet struct {
	ids  map[int64]struct{}
	ring []int64
	next int
}

func (s *logIDSet) has(id int64) bool {
	_, ok := s.ids[id]
	return ok
}

func (s *logIDSet) add(id int64) {
	if s.ids == nil {
		s.ids = make(map[int64]struct{})
	}
	if len(s.ring) < seenLogIDs {
		s.ring = append(s.ring, id)
	} else {
		delete(s.ids, s.ring[s.next])
		s.ring[s.next] = id
		s.next = (s.next + 1) % seenLogIDs
	}
	s.ids[id] = struct{}{}
}

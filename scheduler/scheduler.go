package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/internal/logs"
	"github.com/ringjob/ringjob/routes"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// Options are what a Scheduler is built from.
type Options struct {
	Config  Config
	Store   *store.Store
	Drivers *targets.Registry
	Clock   clockwork.Clock // nil = the real clock
	Log     *logrus.Entry   // nil = a discarding logger
	Metrics *Metrics        // nil = unregistered collectors
	Alarmer Alarmer         // nil = no alarms: a job that names alarm channels records its alarms as failed
	// Deliverer sends failure records to failure destinations; nil = they
	// are owed (kept in the database) but not sent.
	Deliverer Deliverer
}

// Scheduler is one replica: heartbeat, takeover, pre-read loop, time ring,
// trigger pools and the ledger writer. Its services are two lists, each
// started in order and stopped in reverse: the recording half (heartbeat,
// ledger and outcome writers) starts first and stops last, so that work
// ended while the firing half stops (and in-process targets drained in
// between, see StopFiring) still has its outcome recorded.
type Scheduler struct {
	cfg     Config
	node    string
	st      *store.Store
	clock   clockwork.Clock
	log     *logrus.Entry
	metrics *Metrics
	drivers *targets.Registry

	liveness  *store.NodeLiveness
	peers     *peerView
	watch     *peerWatch
	gate      *handoffGate
	inflight  *batcher[inflightQuery, []store.Run]
	logs      *batcher[store.RunLogEntry, struct{}]
	ledger    *ledgerWriter
	disp      *dispatcher
	ring      *ring
	preread   *preReader
	heartbeat *heartbeat
	takeover  *takeover
	registry  *registryMonitor
	outcomes  *outcomeWriter
	// The follow-up services, in start order (see followups.go).
	followups []lifecycle.Service

	recording *lifecycle.Services // started first, stopped last
	firing    *lifecycle.Services
	// stopCtx bounds the writes of the stop (the ledger's last flush).
	stopCtx    context.Context
	handedBack int

	mu      sync.Mutex
	started bool
	stopped bool
}

// New builds a scheduler; nothing runs until Start.
func New(o Options) (*Scheduler, error) {
	cfg := o.Config.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if o.Store == nil || o.Drivers == nil {
		return nil, fmt.Errorf("scheduler: Store and Drivers are required")
	}
	if cfg.NodeID == "" {
		cfg.NodeID = defaultNodeID()
	}
	if len(cfg.NodeID) > 64 {
		return nil, fmt.Errorf("scheduler.node_id must be at most 64 characters, got %d", len(cfg.NodeID))
	}
	clock := o.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	log := logs.OrDiscard(o.Log)
	log = log.WithField("node", cfg.NodeID)
	m := o.Metrics
	if m == nil {
		m = NewMetrics(nil)
	}
	s := &Scheduler{cfg: cfg, node: cfg.NodeID, st: o.Store, clock: clock, log: log, metrics: m, drivers: o.Drivers, peers: &peerView{}, watch: &peerWatch{}}
	s.gate = newHandoffGate(o.Store, s.node, clock, cfg.LateAfter)
	s.inflight = newInflightReader(o.Store, clock)
	s.logs = newLogWriter(o.Store)
	sent := newSentTargets()
	s.ledger = newLedgerWriter(o.Store, log.WithField("service", "ledger"), sent)
	s.disp = &dispatcher{
		cfg: cfg, node: s.node, st: o.Store, clock: clock, log: log.WithField("service", "dispatcher"), drivers: o.Drivers,
		ledger: s.ledger, metrics: m,
		candidates: newCandidates(o.Store, clock, o.Drivers, cfg.ExecutorDeadAfter),
		router:     routes.New(routes.Options{Clock: clock, Prober: routes.RegistryProber{Registry: o.Drivers}}),
		fast:       newPool("fast", cfg.FastPool),
		slow:       newPool("slow", cfg.SlowPool),
		slowJobs:   &slowTracker{clock: clock, threshold: cfg.SlowDispatch, count: cfg.SlowDispatchCount},
		gate:       s.gate,
		inflight:   s.inflight,
		sent:       sent,
		warns:      newWarnEvery(log.WithField("service", "dispatcher"), clock, warnInterval),
	}
	s.ring = newRing(clock, s.disp.fire)
	s.disp.requeue = func(f fire) { s.ring.push(f) }
	s.disp.waits = newRunWaits(s.ring.hurry)
	s.disp.inRing = s.ring.has
	s.preread = &preReader{cfg: cfg, node: s.node, st: o.Store, clock: clock, log: log.WithField("service", "preread"),
		ring: s.ring, metrics: m, peers: s.peers, cache: &scheduleCache{}, candidates: s.disp.candidates}
	s.heartbeat = &heartbeat{cfg: cfg, node: s.node, host: hostname(), st: o.Store, clock: clock, log: log.WithField("service", "heartbeat"),
		peers: s.peers, watch: s.watch, rejoin: s.rejoin}
	s.takeover = &takeover{cfg: cfg, node: s.node, st: o.Store, clock: clock, log: log.WithField("service", "takeover"), ring: s.ring, disp: s.disp,
		metrics: m, watch: s.watch}
	s.registry = &registryMonitor{cfg: cfg, st: o.Store, clock: clock, log: log.WithField("service", "registry")}
	s.outcomes = newOutcomeWriter(o.Store, log.WithField("service", "outcomes"), m)
	s.takeover.record = s.outcomes.record
	var wf *workflows // below, with the other follow-ups
	s.ledger.urgent = s.disp.handing
	s.outcomes.urgent = s.disp.handing
	s.outcomes.writing = s.ledger.outcomesWriting
	s.outcomes.written = s.ledger.outcomesWritten // settles the ledger's runs when committed
	s.outcomes.settled = func(ids []int64) {
		s.disp.waits.settled(ids)
		wf.settled(ids)
	}
	fd := &followupDeps{cfg: cfg, node: s.node, st: o.Store, clock: clock, metrics: m, alarmer: o.Alarmer, ring: s.ring,
		drivers: o.Drivers, record: s.outcomes.record, trigger: s.Trigger}
	svc := func(name string) (*logrus.Entry, *warnEvery) {
		l := log.WithField("service", name)
		return l, newWarnEvery(l, clock, warnInterval)
	}
	retriesLog, retriesWarns := svc("retries")
	childrenLog, childrenWarns := svc("children")
	killsLog, killsWarns := svc("kills")
	lostLog, lostWarns := svc("lost_runs")
	alarmsLog, alarmsWarns := svc("alarms")
	deliveriesLog, deliveriesWarns := svc("failure_deliveries")
	workflowsLog, workflowsWarns := svc("workflows")
	wf = &workflows{followupDeps: fd, log: workflowsLog, warns: workflowsWarns, wake: make(chan struct{}, 1)}
	s.followups = append(s.followups,
		&retries{followupDeps: fd, log: retriesLog, warns: retriesWarns},
		&children{followupDeps: fd, log: childrenLog, warns: childrenWarns},
		&recoveries{followupDeps: fd, log: log.WithField("service", "recoveries")},
		&kills{followupDeps: fd, log: killsLog, warns: killsWarns},
		&lostRuns{followupDeps: fd, log: lostLog, warns: lostWarns},
		&alarmSender{followupDeps: fd, log: alarmsLog, warns: alarmsWarns},
		&deliveries{followupDeps: fd, sender: o.Deliverer, log: deliveriesLog, warns: deliveriesWarns},
		&completions{followupDeps: fd, cache: s.preread.cache, log: log.WithField("service", "completions")},
		wf,
	)
	s.recording, s.firing = s.services()
	return s, nil
}

// NodeID is this replica's name in the ledger.
func (s *Scheduler) NodeID() string { return s.node }

// Clock is the scheduler's clock.
func (s *Scheduler) Clock() clockwork.Clock { return s.clock }

// Start prepares the lock partitions, takes the liveness lock, registers the
// node, and starts the services. It returns at once.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("scheduler already started")
	}
	if err := s.st.LockPartitionsEnsure(ctx, s.cfg.LockPartitions); err != nil {
		return err
	}
	lv, err := s.st.NodeLivenessAcquire(ctx, s.node)
	if err != nil {
		return err
	}
	s.liveness = lv
	s.heartbeat.liveness = lv
	s.takeover.liveness = lv
	// A new incarnation: alive again even if the last one with this node id
	// was declared dead.
	if err := s.st.NodeRejoin(ctx, store.NodeHeartbeatParams{ID: s.node, Host: s.heartbeat.host, NowMs: s.clock.Now().UnixMilli()}); err != nil {
		lv.Release(ctx)
		return fmt.Errorf("register node: %w", err)
	}
	if err := s.heartbeat.beat(ctx); err != nil {
		lv.Release(ctx)
		return fmt.Errorf("first heartbeat: %w", err)
	}
	// This incarnation hands runs from here on: a run of this node handed
	// earlier was handed by an earlier one (adoptOwn below).
	startMs := s.clock.Now().UnixMilli()
	// Services outlive the Start call's context; Stop ends them.
	bg := context.WithoutCancel(ctx)
	s.recording.Start(bg)
	s.firing.Start(bg)
	s.started = true
	// What an earlier incarnation with this node id left (a fixed node_id
	// restarted after a crash): its waiting runs fire from here, what it
	// handed to a target may have arrived.
	if err := s.adoptOwn(ctx, startMs); err != nil {
		s.log.WithError(err).Warn("take over the runs a previous run of this node left; the takeover loop retries")
	}
	s.log.WithField("lock_partitions", s.cfg.LockPartitions).Info("scheduler started")
	return nil
}

// services lists the scheduler's services in start order, in two halves;
// each half stops in reverse. The heartbeat goes on until the very end, so
// the other replicas do not take this node for dead while it drains.
func (s *Scheduler) services() (recording, firing *lifecycle.Services) {
	recording = lifecycle.NewServices(
		s.heartbeat,
		lifecycle.Stage{OnStart: s.ledger.Start, OnStop: func() { s.ledger.Stop(s.stopCtx) }},
		s.gate, s.inflight, s.logs, s.outcomes,
	)
	fire := []lifecycle.Service{
		// Claimed runs are dispatched within StopGrace, then cancelled.
		lifecycle.Stage{OnStart: s.disp.fast.Start, OnStop: func() { s.disp.fast.Stop(s.clock, s.cfg.StopGrace) }},
		lifecycle.Stage{OnStart: s.disp.slow.Start, OnStop: func() { s.disp.slow.Stop(s.clock, s.cfg.StopGrace) }},
		// The runs still in the ring are handed back: they stay scheduled,
		// owned by this node, which the next leader takes at once.
		lifecycle.Stage{OnStop: func() { s.disp.stop(); s.handedBack = len(s.ring.drain()) }},
	}
	return recording, lifecycle.NewServices(append(fire, s.firingLoops()...)...)
}

// clockDriven are the services whose one goroutine each sleeps on the clock
// between rounds. Tests on a fake clock wait until as many goroutines sleep
// on it (ClockWaiters), so a service added here is counted there.
func (s *Scheduler) clockDriven() []lifecycle.Service {
	return append([]lifecycle.Service{s.heartbeat}, s.firingLoops()...)
}

// firingLoops are the clock-driven services of the firing half, in start
// order: the pre-read last, as it fills the ring.
func (s *Scheduler) firingLoops() []lifecycle.Service {
	l := []lifecycle.Service{s.ring, s.takeover, s.registry}
	l = append(l, s.followups...)
	return append(l, s.preread)
}

// StopFiring stops the firing half: no more pre-reads, takeovers or
// follow-ups; the runs still in the ring are handed back (they stay
// scheduled, owned by this node, and the node is marked stopped by Stop so
// the next leader takes them at once); claimed runs are dispatched within
// StopGrace. Outcomes are still recorded until Stop: the caller drains
// in-process targets (local commands, synchronous invokes) in between.
// Safe to call twice.
func (s *Scheduler) StopFiring() {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		s.firing.Stop()
	}
}

// Stop stops gracefully: StopFiring if not done, then the recording half
// (outcomes written, the ledger flushed within ctx), then the node leaves.
// Safe to call twice.
func (s *Scheduler) Stop(ctx context.Context) {
	s.mu.Lock()
	if !s.started || s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	s.mu.Unlock()
	s.firing.Stop()
	s.stopCtx = ctx
	s.recording.Stop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.st.NodeStop(sctx, s.node, s.clock.Now().UnixMilli()); err != nil {
		s.log.WithError(err).Warn("mark node stopped")
	}
	s.liveness.Release(sctx)
	s.log.WithField("handed_back", s.handedBack).Info("scheduler stopped")
}

// warnInterval is how often a recurring failure (failed dispatches, refused
// claims) is logged at most.
const warnInterval = 10 * time.Second

// rejoin is what a node does when it learns it was declared dead: it stops
// dispatching at once, drops its ring and backlog (their runs were taken
// over, and what was not is reloaded from the ledger), registers again and
// takes back what is still its own.
func (s *Scheduler) rejoin(ctx context.Context) error {
	s.disp.fenced.Store(true)
	defer s.disp.fenced.Store(false)
	dropped := len(s.ring.drain()) + s.disp.dropAll()
	if err := s.st.NodeRejoin(ctx, store.NodeHeartbeatParams{ID: s.node, Host: s.heartbeat.host, NowMs: s.clock.Now().UnixMilli()}); err != nil {
		return err
	}
	s.disp.fenced.Store(false)
	if err := s.adoptOwn(ctx, 0); err != nil {
		return fmt.Errorf("reload this node's runs after rejoining: %w", err)
	}
	s.log.WithField("dropped", dropped).Warn("rejoined after being declared dead; reloaded the runs still owned by this node")
	return nil
}

// adoptOwn loads this node's own scheduled and claimed-but-unsent runs from
// the ledger into the ring and the dispatcher. startedMs > 0: this is a new
// process, started then, so runs of this node handed to a target before it
// were handed by an earlier process and cannot still be on their way; their
// targets are asked about them (handed.go), now and at every takeover scan
// until each is resolved. Runs this process handed since (its services run
// already, and the API may have triggered some) are not touched.
func (s *Scheduler) adoptOwn(ctx context.Context, startedMs int64) error {
	scheduled, claimed, err := s.takeover.adopt(ctx, s.node, "left by an earlier run of this node")
	if err != nil {
		return err
	}
	if startedMs > 0 {
		// Asked now, and at every takeover scan while some are unresolved.
		pending, err := s.takeover.resolveHanded(ctx, s.node, startedMs, fmt.Sprintf("an earlier process of scheduler node %s", s.node))
		if err != nil {
			s.log.WithError(err).Warn("ask the targets about the runs an earlier process of this node handed; the takeover scan asks again")
		}
		if err != nil || pending > 0 {
			s.takeover.ownHandedBefore.Store(startedMs)
		}
	}
	if scheduled+claimed > 0 {
		s.log.WithFields(logrus.Fields{"scheduled": scheduled, "claimed_not_sent": claimed}).Info("took back this node's own runs")
	}
	return nil
}

// TriggerParams ask for a run now, outside the schedule.
type TriggerParams struct {
	JobID          int64
	Params         *string // nil = the job's params
	IdempotencyKey string
	TriggerType    kind.Trigger // default kind.TriggerManual
	// Target sends the run to this target instead of routing; it must be one
	// of the job's candidates (ErrTargetNotCandidate otherwise).
	Target string
	// ShardTotal, when > 0, fans the trigger out to this many shards
	// instead of the job's own count (a sharding job: one per executor,
	// else shard_count; other jobs: 1).
	ShardTotal int
	// OnlyShard, when not nil, creates only this shard (0-based) of the
	// fan-out: a *ShardRangeError when it is not below the shard count.
	OnlyShard *int
	// Record, when set, is called with the new run in the transaction that
	// creates the runs (not for a repeated idempotency key): what it writes
	// (the audit event) is committed with them, and its error creates none.
	Record func(ctx context.Context, tx *store.Store, run store.Run) error
}

// Trigger creates a run for now and dispatches it at once (or at the next
// tick when the pools are full). A repeated idempotency key returns the
// earlier run with created=false.
func (s *Scheduler) Trigger(ctx context.Context, p TriggerParams) (run store.Run, created bool, err error) {
	job, err := s.st.JobGet(ctx, p.JobID)
	if err != nil {
		return store.Run{}, false, err
	}
	params := job.Params
	if p.Params != nil {
		params = *p.Params
	}
	p0key := p.IdempotencyKey
	target := ""
	if p.Target != "" {
		if target, err = s.disp.candidates.checkTarget(ctx, &job, p.Target); err != nil {
			return store.Run{}, false, err
		}
	}
	tt := p.TriggerType
	if tt == "" {
		tt = kind.TriggerManual
	}
	now := s.clock.Now()
	// A sharding job fans out: the first shard created carries the
	// idempotency key, so a repeated key finds the earlier fire and creates
	// nothing.
	n := s.disp.candidates.shards(ctx, &job, s.log)
	if p.ShardTotal > 0 {
		n = p.ShardTotal
	}
	shards := make([]int, 0, n)
	if p.OnlyShard != nil {
		if *p.OnlyShard < 0 || *p.OnlyShard >= n {
			return store.Run{}, false, &ShardRangeError{Index: *p.OnlyShard, Total: n}
		}
		shards = append(shards, *p.OnlyShard)
	} else {
		for i := 0; i < n; i++ {
			shards = append(shards, i)
		}
	}
	var fires []fire
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		for k, i := range shards {
			p := store.RunCreateParams{
				JobID: job.ID, GroupID: job.GroupID, ScheduledMs: now.UnixMilli(), ShardIndex: i, ShardTotal: n, TriggerType: tt,
				Owner: s.node, Handler: job.Handler, Params: params, CreatedMs: now.UnixMilli(),
				// A workflow's node triggers no child jobs: its workflow says what follows.
				FollowSuccess: len(job.ChildJobIDs) > 0 && tt != kind.TriggerWorkflow,
			}
			if k == 0 {
				p.IdempotencyKey = p0key
			}
			r, ok, err := tx.RunCreate(ctx, p)
			if err != nil {
				return err
			}
			if k == 0 {
				run, created = r, ok
				if !ok {
					return nil
				}
			}
			fires = append(fires, fire{runID: r.ID, scheduledMs: r.ScheduledMs, shardIndex: i, shardTotal: n, params: params, job: &job, target: target, trigger: tt})
		}
		if p.Record != nil {
			return p.Record(ctx, tx, run)
		}
		return nil
	})
	if err != nil {
		return store.Run{}, false, err
	}
	if !created {
		return run, false, nil
	}
	s.disp.fire(ctx, fires)
	return run, true, nil
}

// ShardRangeError refuses a trigger of one shard that is not below the
// job's shard count.
type ShardRangeError struct{ Index, Total int }

func (e *ShardRangeError) Error() string {
	return fmt.Sprintf("shard %d does not exist: the trigger fans out to %d shards (0..%d)", e.Index, e.Total, e.Total-1)
}

// ForgetTargets drops the cached groups and executor registrations that
// dispatches choose targets from; call it after a group was edited or an
// executor registered or left through this replica. Other replicas see such
// changes within two seconds (the cache's lifetime).
func (s *Scheduler) ForgetTargets() { s.disp.candidates.forget() }

// SentTarget returns where this node sent a run whose target the ledger
// may not have recorded yet ("" when this node does not know): an executor
// may call back before that write.
func (s *Scheduler) SentTarget(runID int64) string { return s.disp.sent.get(runID) }

// Sink returns the targets.Sink drivers report to.
func (s *Scheduler) Sink() targets.BatchSink { return ledgerSink{s} }

type ledgerSink struct{ s *Scheduler }

func (l ledgerSink) Complete(ctx context.Context, runID int64, out targets.Outcome) error {
	_, err := l.CompleteMany(ctx, []targets.Result{{RunID: runID, Outcome: out}})
	return err
}

// CompleteMany records outcomes through the scheduler's outcome writer and
// returns once they are committed.
func (l ledgerSink) CompleteMany(ctx context.Context, results []targets.Result) ([]bool, error) {
	now := l.s.clock.Now().UnixMilli()
	outs := make([]store.RunResult, len(results))
	for i, r := range results {
		src := store.OutcomeSource(r.Source)
		if src == "" {
			src = store.SourceTarget
		}
		target := r.Target
		if target == "" {
			// Its accept may be held (ledgerWriter): the outcome records where it went.
			target = l.s.disp.sent.get(r.RunID)
		}
		outs[i] = store.RunResult{ID: r.RunID, State: r.State, Code: r.Code, Message: r.Message, Target: target, FinishedMs: now, Source: src, JobID: r.JobID}
	}
	return l.s.outcomes.record(ctx, outs)
}

// AppendLog appends through the scheduler's log writer, many runs per
// write, and returns once the text is stored.
func (l ledgerSink) AppendLog(ctx context.Context, runID int64, text string) error {
	if text == "" {
		return nil
	}
	_, err := l.s.logs.do(ctx, store.RunLogEntry{RunID: runID, Text: text})
	return err
}

func (l ledgerSink) ReadLog(ctx context.Context, runID int64, fromLine int) (targets.LogChunk, error) {
	c, err := l.s.st.RunLogRead(ctx, runID, fromLine)
	if err != nil {
		return targets.LogChunk{}, err
	}
	return targets.LogChunk{FromLine: c.FromLine, ToLine: c.ToLine, Content: c.Content, End: c.Finished}, nil
}

func defaultNodeID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", hostname(), os.Getpid(), hex.EncodeToString(b))
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "node"
	}
	if len(h) > 40 {
		h = h[:40]
	}
	return h
}

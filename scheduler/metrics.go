package scheduler

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the scheduler's Prometheus collectors. They are registered on
// the registry given to NewMetrics (never the global one).
type Metrics struct {
	Scheduled    prometheus.Counter
	Dispatched   prometheus.Counter
	Misfired     prometheus.Counter
	Skipped      *prometheus.CounterVec
	Lost         prometheus.Counter
	TakenOver    prometheus.Counter
	ClaimLost    prometheus.Counter
	Backpressure prometheus.Counter
	Backlog      prometheus.Gauge
	DispatchLag  prometheus.Histogram
	LockHold     prometheus.Histogram
	Outcomes     *prometheus.CounterVec
	Partitions   *prometheus.GaugeVec
	Leader       prometheus.Gauge
	// Deliveries counts tries to send failure records by result
	// (delivered, failed); DeliveriesPending is what is owed.
	Deliveries        *prometheus.CounterVec
	DeliveriesPending prometheus.Gauge
	// WorkflowRuns counts workflow runs ended by this node, by final state;
	// NodeStartDelay is how long a workflow node waited from its last
	// parent's outcome (or its run's start) to the creation of its run.
	WorkflowRuns   *prometheus.CounterVec
	NodeStartDelay prometheus.Histogram
}

// NewMetrics creates the collectors and registers them on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Scheduled:  prometheus.NewCounter(prometheus.CounterOpts{Name: "ringjob_fires_scheduled_total", Help: "Fires recorded as scheduled runs by the pre-read."}),
		Dispatched: prometheus.NewCounter(prometheus.CounterOpts{Name: "ringjob_fires_dispatched_total", Help: "Runs sent to a target (claimed and dispatched)."}),
		Misfired:   prometheus.NewCounter(prometheus.CounterOpts{Name: "ringjob_fires_misfired_total", Help: "Fires recorded as misfired under the do_nothing policy."}),
		Skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringjob_fires_skipped_total",
			Help: "Fire times a job missed by more than the misfire threshold (recorded misfired runs and, beyond the recorded ones, the rest), by job."}, []string{"job_id"}),
		Lost:         prometheus.NewCounter(prometheus.CounterOpts{Name: "ringjob_runs_lost_total", Help: "Runs marked lost because their dispatcher died mid-dispatch."}),
		TakenOver:    prometheus.NewCounter(prometheus.CounterOpts{Name: "ringjob_runs_taken_over_total", Help: "Scheduled runs of dead nodes taken over by this node."}),
		ClaimLost:    prometheus.NewCounter(prometheus.CounterOpts{Name: "ringjob_claims_lost_total", Help: "Runs this node meant to fire that another node had taken over."}),
		Backpressure: prometheus.NewCounter(prometheus.CounterOpts{Name: "ringjob_backpressure_total", Help: "Due runs deferred to the next tick because a trigger pool was full."}),
		Backlog:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "ringjob_dispatch_backlog", Help: "Due runs waiting for trigger pool capacity."}),
		DispatchLag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ringjob_dispatch_lag_seconds", Help: "Hand-off time (claim, right before the send) minus scheduled fire time.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}),
		LockHold: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ringjob_lock_hold_seconds", Help: "How long one locked pre-read transaction held the lock.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}}),
		Outcomes:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringjob_run_outcomes_total", Help: "Final run outcomes by state."}, []string{"state"}),
		Partitions: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ringjob_partition_leader", Help: "1 when this node held the lock partition in its last pre-read."}, []string{"partition"}),
		Leader:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "ringjob_leader", Help: "1 when this node held at least one lock partition in its last pre-read."}),
		Deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringjob_failure_deliveries_total",
			Help: "Tries to send a failure record to its destination, by result (delivered, failed: tried again later)."}, []string{"result"}),
		DeliveriesPending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ringjob_failure_deliveries_pending", Help: "Failure records owed to their destinations and not delivered yet."}),
		WorkflowRuns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringjob_workflow_runs_total",
			Help: "Workflow runs ended (by the node that ended them), by final state."}, []string{"state"}),
		NodeStartDelay: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ringjob_workflow_node_start_delay_seconds",
			Help:    "From a workflow node's last parent's outcome (a root node: its workflow run's start) to the creation of the node's run.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2, 5, 10, 30}}),
	}
	if reg != nil {
		reg.MustRegister(m.Scheduled, m.Dispatched, m.Misfired, m.Skipped, m.Lost, m.TakenOver, m.ClaimLost, m.Backpressure, m.Backlog,
			m.DispatchLag, m.LockHold, m.Outcomes, m.Partitions, m.Leader, m.Deliveries, m.DeliveriesPending, m.WorkflowRuns, m.NodeStartDelay)
	}
	return m
}

func (m *Metrics) setHeld(held []int, total int) {
	on := map[int]bool{}
	for _, h := range held {
		on[h] = true
	}
	for i := 0; i < total; i++ {
		v := 0.0
		if on[i] {
			v = 1
		}
		m.Partitions.WithLabelValues(strconv.Itoa(i)).Set(v)
	}
	if len(held) > 0 {
		m.Leader.Set(1)
	} else {
		m.Leader.Set(0)
	}
}

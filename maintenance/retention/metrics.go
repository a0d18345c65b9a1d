package retention

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the retention worker's collectors.
type Metrics struct {
	// Purged counts rows deleted, by table (runs, run_logs).
	Purged *prometheus.CounterVec
	// BacklogAge is how far the purge is behind: the age beyond its
	// retention of the oldest row it still had to delete (0 when caught up).
	BacklogAge *prometheus.GaugeVec
	// Partitions counts partitions dropped and created (partitioned mode).
	Partitions *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Purged: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringjob_retention_purged_rows_total",
			Help: "Rows deleted by the retention worker, by table."}, []string{"table"}),
		BacklogAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ringjob_retention_backlog_age_seconds",
			Help: "How far past its retention the oldest row still to delete was at the last batch (0 = caught up)."}, []string{"table"}),
		Partitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringjob_retention_partitions_total",
			Help: "Day partitions created and dropped (retention.partitioned), by action."}, []string{"action"}),
	}
	if reg != nil {
		reg.MustRegister(m.Purged, m.BacklogAge, m.Partitions)
	}
	return m
}

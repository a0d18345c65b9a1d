package scheduler

import (
	"errors"
	"fmt"
	"time"
)

// PoolConfig sizes one trigger pool.
type PoolConfig struct {
	Workers int `yaml:"workers"` // concurrent sends (driver calls)
	Queue   int `yaml:"queue"`   // runs waiting for their hand-off and send (still scheduled)
}

// Config tunes one scheduler replica. Zero values take the defaults of
// Defaults(); Validate names the field that is wrong.
type Config struct {
	// NodeID names this replica in the ledger; default host-pid-random. Must be
	// unique among running replicas.
	NodeID string `yaml:"node_id"`
	// LockPartitions spreads jobs over this many lock rows (default 1, the
	// XXL-JOB behaviour). All replicas must use the same value.
	LockPartitions int `yaml:"lock_partitions"`
	// PreReadWindow is how far ahead the leader reads due jobs (default 5s).
	PreReadWindow time.Duration `yaml:"pre_read_window"`
	// PreReadLimit caps the jobs read per locked transaction (default 5000);
	// the loop reads again at once when a batch was full.
	PreReadLimit int `yaml:"pre_read_limit"`
	// MisfireThreshold: a fire later than this is a misfire handled under the
	// job's misfire policy (default 5s, as XXL-JOB).
	MisfireThreshold time.Duration `yaml:"misfire_threshold"`
	// LoopInterval is the pre-read period (default 1s).
	LoopInterval time.Duration `yaml:"loop_interval"`
	// LockTxTimeout bounds one locked pre-read transaction (default 10s).
	LockTxTimeout time.Duration `yaml:"lock_tx_timeout"`
	// HeartbeatInterval is how often the node proves it is alive (default 1s).
	HeartbeatInterval time.Duration `yaml:"heartbeat_interval"`
	// NodeDeadAfter: a node whose heartbeat is older is dead and its runs are
	// taken over (default 10s). On MySQL a node's death is also seen at once
	// through its liveness lock.
	NodeDeadAfter time.Duration `yaml:"node_dead_after"`
	// PartitionLease: a node whose heartbeat has not changed for this long
	// loses its share of the lock partitions and its waiting runs to the
	// others (it is not dead for that: what it may have sent stays its own).
	// Default 3s, below the misfire threshold, so a paused replica's fires go
	// out late but not misfired. Must be at least twice heartbeat_interval
	// and at most node_dead_after.
	PartitionLease time.Duration `yaml:"partition_lease"`
	// TakeoverInterval is how often the node looks for dead peers whose runs
	// it must adopt (default 500ms).
	TakeoverInterval time.Duration `yaml:"takeover_interval"`
	// LateAfter: a run claimed later than this after its fire time is
	// recorded as late (default 1s).
	LateAfter time.Duration `yaml:"late_after"`
	// DispatchTimeout bounds one driver Run call (default 10s).
	DispatchTimeout time.Duration `yaml:"dispatch_timeout"`
	// FastPool and SlowPool size the trigger pools (defaults 200/2000 and 100/5000).
	FastPool PoolConfig `yaml:"fast_pool"`
	SlowPool PoolConfig `yaml:"slow_pool"`
	// SlowDispatch and SlowDispatchCount: a job with more than Count dispatches
	// slower than SlowDispatch within one minute moves to the slow pool
	// (defaults 500ms and 10, as XXL-JOB).
	SlowDispatch      time.Duration `yaml:"slow_dispatch"`
	SlowDispatchCount int           `yaml:"slow_dispatch_count"`
	// ExecutorDeadAfter: an HTTP executor silent for longer is dropped from
	// the registry and is no longer a candidate (default 90s, as XXL-JOB).
	ExecutorDeadAfter time.Duration `yaml:"executor_dead_after"`
	// RegistryMonitorInterval is how often silent executors are dropped
	// (default 30s).
	RegistryMonitorInterval time.Duration `yaml:"registry_monitor_interval"`
	// FollowupInterval is how often failed runs are looked at for retries and
	// alarms (default 1s).
	FollowupInterval time.Duration `yaml:"followup_interval"`
	// LostCheckInterval is how often running runs are checked for being lost
	// (default 10s). LostGrace is how long past its timeout a run may still
	// be running before it is lost (default 60s); LostAfter is how long a
	// run's executor may be gone from the registry (default 10m, XXL-JOB's
	// rule).
	LostCheckInterval time.Duration `yaml:"lost_check_interval"`
	LostGrace         time.Duration `yaml:"lost_grace"`
	LostAfter         time.Duration `yaml:"lost_after"`
	// RunDeadline is how long a run whose job has no timeout may stay
	// running before any replica records it lost (after LostGrace), unless
	// its target bounds its runs sooner (a Lambda function). Default 24h; it
	// makes every running run end, whichever replica dispatched it.
	RunDeadline time.Duration `yaml:"run_deadline"`
	// StopGrace bounds how long Stop waits for claimed runs to be dispatched
	// (default 10s).
	StopGrace time.Duration `yaml:"stop_grace"`
}

// Defaults returns the default configuration.
func Defaults() Config {
	return Config{
		LockPartitions:    1,
		PreReadWindow:     5 * time.Second,
		PreReadLimit:      5000,
		MisfireThreshold:  5 * time.Second,
		LoopInterval:      time.Second,
		LockTxTimeout:     10 * time.Second,
		HeartbeatInterval: time.Second,
		NodeDeadAfter:     10 * time.Second,
		PartitionLease:    3 * time.Second,
		TakeoverInterval:  500 * time.Millisecond,
		LateAfter:         time.Second,
		DispatchTimeout:   10 * time.Second,
		FastPool:          PoolConfig{Workers: 200, Queue: 2000},
		SlowPool:          PoolConfig{Workers: 100, Queue: 5000},
		SlowDispatch:      500 * time.Millisecond,
		SlowDispatchCount: 10,
		StopGrace:         10 * time.Second,

		FollowupInterval:  time.Second,
		LostCheckInterval: 10 * time.Second,
		LostGrace:         time.Minute,
		LostAfter:         10 * time.Minute,
		RunDeadline:       24 * time.Hour,

		ExecutorDeadAfter:       90 * time.Second,
		RegistryMonitorInterval: 30 * time.Second,
	}
}

// WithDefaults fills zero fields from Defaults.
func (c Config) WithDefaults() Config {
	d := Defaults()
	set := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	seti := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	seti(&c.LockPartitions, d.LockPartitions)
	set(&c.PreReadWindow, d.PreReadWindow)
	seti(&c.PreReadLimit, d.PreReadLimit)
	set(&c.MisfireThreshold, d.MisfireThreshold)
	set(&c.LoopInterval, d.LoopInterval)
	set(&c.LockTxTimeout, d.LockTxTimeout)
	set(&c.HeartbeatInterval, d.HeartbeatInterval)
	set(&c.NodeDeadAfter, d.NodeDeadAfter)
	if c.PartitionLease == 0 {
		// Scaled with a shortened heartbeat, capped by node_dead_after.
		c.PartitionLease = min(max(d.PartitionLease, 2*c.HeartbeatInterval), c.NodeDeadAfter)
	}
	set(&c.TakeoverInterval, d.TakeoverInterval)
	set(&c.LateAfter, d.LateAfter)
	set(&c.DispatchTimeout, d.DispatchTimeout)
	seti(&c.FastPool.Workers, d.FastPool.Workers)
	seti(&c.FastPool.Queue, d.FastPool.Queue)
	seti(&c.SlowPool.Workers, d.SlowPool.Workers)
	seti(&c.SlowPool.Queue, d.SlowPool.Queue)
	set(&c.SlowDispatch, d.SlowDispatch)
	seti(&c.SlowDispatchCount, d.SlowDispatchCount)
	set(&c.StopGrace, d.StopGrace)
	set(&c.ExecutorDeadAfter, d.ExecutorDeadAfter)
	set(&c.FollowupInterval, d.FollowupInterval)
	set(&c.LostCheckInterval, d.LostCheckInterval)
	set(&c.LostGrace, d.LostGrace)
	set(&c.LostAfter, d.LostAfter)
	set(&c.RunDeadline, d.RunDeadline)
	set(&c.RegistryMonitorInterval, d.RegistryMonitorInterval)
	return c
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	var errs []error
	pos := func(name string, v time.Duration) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("scheduler.%s must be positive, got %s", name, v))
		}
	}
	if c.LockPartitions < 1 || c.LockPartitions > 1024 {
		errs = append(errs, fmt.Errorf("scheduler.lock_partitions must be 1..1024, got %d", c.LockPartitions))
	}
	pos("pre_read_window", c.PreReadWindow)
	pos("misfire_threshold", c.MisfireThreshold)
	pos("loop_interval", c.LoopInterval)
	pos("lock_tx_timeout", c.LockTxTimeout)
	pos("heartbeat_interval", c.HeartbeatInterval)
	pos("node_dead_after", c.NodeDeadAfter)
	pos("takeover_interval", c.TakeoverInterval)
	pos("late_after", c.LateAfter)
	pos("dispatch_timeout", c.DispatchTimeout)
	pos("slow_dispatch", c.SlowDispatch)
	pos("stop_grace", c.StopGrace)
	pos("executor_dead_after", c.ExecutorDeadAfter)
	pos("followup_interval", c.FollowupInterval)
	pos("lost_check_interval", c.LostCheckInterval)
	pos("lost_grace", c.LostGrace)
	pos("lost_after", c.LostAfter)
	pos("run_deadline", c.RunDeadline)
	pos("registry_monitor_interval", c.RegistryMonitorInterval)
	if c.PreReadLimit < 1 {
		errs = append(errs, fmt.Errorf("scheduler.pre_read_limit must be positive, got %d", c.PreReadLimit))
	}
	if c.NodeDeadAfter < 2*c.HeartbeatInterval {
		errs = append(errs, fmt.Errorf("scheduler.node_dead_after (%s) must be at least twice scheduler.heartbeat_interval (%s)", c.NodeDeadAfter, c.HeartbeatInterval))
	}
	if c.PartitionLease < 2*c.HeartbeatInterval || c.PartitionLease > c.NodeDeadAfter {
		errs = append(errs, fmt.Errorf("scheduler.partition_lease (%s) must be between twice scheduler.heartbeat_interval (%s) and scheduler.node_dead_after (%s)",
			c.PartitionLease, 2*c.HeartbeatInterval, c.NodeDeadAfter))
	}
	for name, p := range map[string]PoolConfig{"fast_pool": c.FastPool, "slow_pool": c.SlowPool} {
		if p.Workers < 1 || p.Queue < 1 {
			errs = append(errs, fmt.Errorf("scheduler.%s.workers and .queue must be positive, got %d and %d", name, p.Workers, p.Queue))
		}
	}
	return errors.Join(errs...)
}

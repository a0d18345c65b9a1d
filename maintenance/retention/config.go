package retention

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Age is a duration written in days or Go units: "30d", "12h", "90m".
type Age time.Duration

// UnmarshalYAML reads "30d" or a Go duration such as "36h".
func (a *Age) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return err
	}
	d, err := ParseAge(s)
	if err != nil {
		return err
	}
	*a = Age(d)
	return nil
}

// ParseAge parses "30d" (days) or a Go duration ("720h").
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil {
			return 0, fmt.Errorf("%q: want a number of days such as 30d, or a duration such as 36h", s)
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want a number of days such as 30d, or a duration such as 36h", s)
	}
	return d, nil
}

// D is the age as a time.Duration.
func (a Age) D() time.Duration { return time.Duration(a) }

// GroupConfig overrides the retention of one group's runs and logs.
type GroupConfig struct {
	Runs Age `yaml:"runs"` // 0 = the global retention.runs
	Logs Age `yaml:"logs"` // 0 = the group's runs retention or the global logs, whichever is shorter
}

// Config is the retention section of the server config.
type Config struct {
	// Disabled keeps every run forever (the worker does not start).
	Disabled bool `yaml:"disabled"`
	// Runs: finished runs older than this are deleted (default 30d).
	Runs Age `yaml:"runs"`
	// Logs: run logs of finished runs older than this are deleted (default:
	// Runs; may be shorter, never longer: a run's log goes with the run).
	Logs Age `yaml:"logs"`
	// Groups overrides Runs and Logs per group, by app name.
	Groups map[string]GroupConfig `yaml:"groups"`
	// Partitioned (MySQL/MariaDB and PostgreSQL) range-partitions runs and run_logs by day and
	// purges by dropping whole partitions; see docs/retention.md for when to
	// choose it.
	Partitioned bool `yaml:"partitioned"`
	// Interval between purge cycles (default 1m).
	Interval time.Duration `yaml:"interval"`
	// BatchSize is the span of run ids one DELETE covers, so the rows it
	// removes (default 5000).
	BatchSize int `yaml:"batch_size"`
	// DBShare is the share of the database's time the purge may take
	// (default 0.25), counting its statements and, on MySQL, the work
	// InnoDB's purge threads do for them after the commit (about as much
	// again): after a DELETE that took t it waits t x 2 / share - t (t /
	// share - t on SQLite), so a database slowed by other work slows the
	// purge with it and the scheduler's statements keep most of it. 1 sets
	// no limit.
	DBShare float64 `yaml:"db_share"`
	// Pause is the least wait between two batches (default 5ms).
	Pause time.Duration `yaml:"pause"`
	// PartitionsAhead is how many future day partitions are kept ready
	// (default 3).
	PartitionsAhead int `yaml:"partitions_ahead"`
	// DropGap (partitioned) is the least time from one partition drop to
	// the next (default 10s). Deleting a dropped day's file slows the
	// database's commits for a few hundred milliseconds (docs/retention.md),
	// so a backlog of days goes one every DropGap instead of back to back;
	// in steady state one day goes a day.
	DropGap time.Duration `yaml:"drop_gap"`
}

// WithDefaults fills the zero fields.
func (c Config) WithDefaults() Config {
	if c.Runs == 0 {
		c.Runs = Age(30 * 24 * time.Hour)
	}
	if c.Logs == 0 {
		c.Logs = c.Runs
	}
	if c.Interval == 0 {
		c.Interval = time.Minute
	}
	if c.BatchSize == 0 {
		c.BatchSize = 5000
	}
	if c.DBShare == 0 {
		c.DBShare = 0.25
	}
	if c.Pause == 0 {
		c.Pause = 5 * time.Millisecond
	}
	if c.PartitionsAhead == 0 {
		c.PartitionsAhead = 3
	}
	if c.DropGap == 0 {
		c.DropGap = 10 * time.Second
	}
	return c
}

// Validate names every field that is wrong.
func (c Config) Validate() error {
	var errs []error
	if c.Runs < 0 || c.Runs.D() > 0 && c.Runs.D() < time.Hour {
		errs = append(errs, fmt.Errorf("retention.runs must be at least 1h (e.g. 30d), got %s", c.Runs.D()))
	}
	if c.Logs < 0 || c.Logs.D() > 0 && c.Logs.D() < time.Hour {
		errs = append(errs, fmt.Errorf("retention.logs must be at least 1h (e.g. 7d), got %s", c.Logs.D()))
	}
	if c.Logs > c.Runs && c.Runs > 0 {
		errs = append(errs, fmt.Errorf("retention.logs (%s) must not be longer than retention.runs (%s): a run's log goes with the run", c.Logs.D(), c.Runs.D()))
	}
	names := make([]string, 0, len(c.Groups))
	for n := range c.Groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g := c.Groups[n]
		if g.Runs < 0 || g.Runs.D() > 0 && g.Runs.D() < time.Hour {
			errs = append(errs, fmt.Errorf("retention.groups.%s.runs must be at least 1h, got %s", n, g.Runs.D()))
		}
		if g.Logs < 0 || g.Logs.D() > 0 && g.Logs.D() < time.Hour {
			errs = append(errs, fmt.Errorf("retention.groups.%s.logs must be at least 1h, got %s", n, g.Logs.D()))
		}
		if g.Runs > 0 && g.Logs > g.Runs {
			errs = append(errs, fmt.Errorf("retention.groups.%s.logs must not be longer than its runs", n))
		}
	}
	if c.Interval < 0 || c.Interval > 0 && c.Interval < time.Second {
		errs = append(errs, fmt.Errorf("retention.interval must be at least 1s, got %s", c.Interval))
	}
	if c.BatchSize < 0 || c.BatchSize > 20000 {
		errs = append(errs, fmt.Errorf("retention.batch_size must be between 1 and 20000, got %d", c.BatchSize))
	}
	if c.DBShare < 0 || c.DBShare > 1 {
		errs = append(errs, fmt.Errorf("retention.db_share must be between 0 and 1 (a share of the time, e.g. 0.25), got %g", c.DBShare))
	}
	if c.Pause < 0 {
		errs = append(errs, fmt.Errorf("retention.pause must not be negative, got %s", c.Pause))
	}
	if c.DropGap < 0 || c.DropGap > time.Hour {
		errs = append(errs, fmt.Errorf("retention.drop_gap must be between 0s and 1h, got %s", c.DropGap))
	}
	if c.PartitionsAhead < 0 || c.PartitionsAhead > 60 {
		errs = append(errs, fmt.Errorf("retention.partitions_ahead must be between 1 and 60, got %d", c.PartitionsAhead))
	}
	return errors.Join(errs...)
}

// policy answers how long a group's runs and logs are kept.
type policy struct {
	runs, logs time.Duration
	byGroup    map[int64]GroupConfig // resolved from app names by the worker
}

func (p policy) runsFor(group int64) time.Duration {
	if g, ok := p.byGroup[group]; ok && g.Runs > 0 {
		return g.Runs.D()
	}
	return p.runs
}

func (p policy) logsFor(group int64) time.Duration {
	runs := p.runsFor(group)
	logs := p.logs
	if g, ok := p.byGroup[group]; ok && g.Logs > 0 {
		logs = g.Logs.D()
	}
	return min(logs, runs)
}

// longest is the longest retention in force: runs younger than that are
// kept whatever their group.
func (p policy) longest() time.Duration {
	d := p.runs
	for _, g := range p.byGroup {
		d = max(d, g.Runs.D())
	}
	return d
}

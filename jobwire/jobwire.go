// Package jobwire declares, once, the settings of a job as they travel: in
// the REST API's job bodies (POST/PUT /api/v1/jobs), in jobs as code (the
// YAML files, POST /api/v1/plan and /apply) and in the version a plan gives
// each job. The server (api, service) and the client (client, jobspec, the
// CLI) embed these structs, so a setting is added in one place.
//
// A job's children sit between Fields and Limits on the wire, and are
// spelled differently in each body (ids in the REST API, names in jobs as
// code), so each type embeds Fields, declares its children, then embeds
// Limits: the order of the JSON and YAML keys is the one these bodies have
// always had.
//
// Zero values are left out of JSON and YAML (omitempty): the server treats
// a missing setting and its zero value alike. This package imports nothing,
// so any package may use it.
package jobwire

// Fields are a job's settings up to its children.
type Fields struct {
	Description      string   `json:"description,omitempty" yaml:"description,omitempty"`
	ScheduleType     string   `json:"schedule_type,omitempty" yaml:"schedule_type,omitempty"`
	ScheduleConf     string   `json:"schedule_conf,omitempty" yaml:"schedule_conf,omitempty"`
	TimeZone         string   `json:"time_zone,omitempty" yaml:"time_zone,omitempty"`
	MisfirePolicy    string   `json:"misfire_policy,omitempty" yaml:"misfire_policy,omitempty"`
	Handler          string   `json:"handler,omitempty" yaml:"handler,omitempty"`
	Params           string   `json:"params,omitempty" yaml:"params,omitempty"`
	RouteStrategy    string   `json:"route_strategy,omitempty" yaml:"route_strategy,omitempty"`
	BlockStrategy    string   `json:"block_strategy,omitempty" yaml:"block_strategy,omitempty"`
	TimeoutSec       int      `json:"timeout_sec,omitempty" yaml:"timeout_sec,omitempty"`
	RetryCount       int      `json:"retry_count,omitempty" yaml:"retry_count,omitempty"`
	ShardCount       int      `json:"shard_count,omitempty" yaml:"shard_count,omitempty"`
	PinnedTargets    []string `json:"pinned_targets,omitempty" yaml:"pinned_targets,omitempty"`
	RetryBackoff     string   `json:"retry_backoff,omitempty" yaml:"retry_backoff,omitempty"`
	RetryDelaySec    int      `json:"retry_delay_sec,omitempty" yaml:"retry_delay_sec,omitempty"`
	RetryMaxDelaySec int      `json:"retry_max_delay_sec,omitempty" yaml:"retry_max_delay_sec,omitempty"`
}

// Limits are a job's settings after its children: how many of its runs may
// be in flight, and which alarm channels hear of its failures.
type Limits struct {
	MaxInFlight   int      `json:"max_in_flight,omitempty" yaml:"max_in_flight,omitempty"`
	AlarmChannels []string `json:"alarm_channels,omitempty" yaml:"alarm_channels,omitempty"`
}

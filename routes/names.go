package routes

import (
	"fmt"
	"strings"
)

// Strategy names as Ringjob stores them (snake_case).
const (
	First          = "first"
	Last           = "last"
	Round          = "round"
	Random         = "random"
	ConsistentHash = "consistent_hash"
	LFU            = "lfu"
	LRU            = "lru"
	Failover       = "failover"
	Busyover       = "busyover"
	Sharding       = "sharding"
)

// strategyInfo describes one strategy: its Ringjob name, XXL-JOB's enum name
// (ExecutorRouteStrategyEnum) and XXL-JOB's title.
type strategyInfo struct {
	name, xxl, title string
}

var strategies = [...]strategyInfo{
	{First, "FIRST", "First"},
	{Last, "LAST", "Last"},
	{Round, "ROUND", "Round"},
	{Random, "RANDOM", "Random"},
	{ConsistentHash, "CONSISTENT_HASH", "Consistent Hash"},
	{LFU, "LEAST_FREQUENTLY_USED", "Least Frequently Used"},
	{LRU, "LEAST_RECENTLY_USED", "Least Recently Used"},
	{Failover, "FAILOVER", "Failover"},
	{Busyover, "BUSYOVER", "Busyover"},
	{Sharding, "SHARDING_BROADCAST", "Sharding Broadcast"},
}

// Names returns the ten Ringjob strategy names in XXL-JOB's enum order.
func Names() []string {
	out := make([]string, len(strategies))
	for i, s := range strategies {
		out[i] = s.name
	}
	return out
}

// Normalize maps a strategy name to its Ringjob name. It accepts the Ringjob
// names and XXL-JOB's enum names (FIRST, LAST, ROUND, RANDOM, CONSISTENT_HASH,
// LEAST_FREQUENTLY_USED, LEAST_RECENTLY_USED, FAILOVER, BUSYOVER,
// SHARDING_BROADCAST), ignoring case and surrounding spaces. Anything else is
// an error wrapping ErrUnknownStrategy that lists the valid names.
func Normalize(name string) (string, error) {
	n := strings.TrimSpace(name)
	for _, s := range strategies {
		if strings.EqualFold(n, s.name) || strings.EqualFold(n, s.xxl) {
			return s.name, nil
		}
	}
	return "", fmt.Errorf("%w %q: use one of %s (XXL-JOB names such as ROUND or LEAST_FREQUENTLY_USED are accepted too)",
		ErrUnknownStrategy, name, strings.Join(Names(), ", "))
}

// Title returns XXL-JOB's display title of a strategy ("Consistent Hash",
// "Sharding Broadcast", ...), or "" when the name is unknown. Aliases are
// accepted as by Normalize.
func Title(name string) string {
	n, err := Normalize(name)
	if err != nil {
		return ""
	}
	for _, s := range strategies {
		if s.name == n {
			return s.title
		}
	}
	return ""
}

// XXLName returns XXL-JOB's enum name of a strategy (ROUND,
// LEAST_FREQUENTLY_USED, SHARDING_BROADCAST, ...), or "" when the name is
// unknown. Aliases are accepted as by Normalize.
func XXLName(name string) string {
	n, err := Normalize(name)
	if err != nil {
		return ""
	}
	for _, s := range strategies {
		if s.name == n {
			return s.xxl
		}
	}
	return ""
}

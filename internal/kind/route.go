package kind

import (
	"fmt"
	"strings"
)

// Route is a routing strategy: how a job's run picks a target among its
// candidates. Ringjob stores the snake_case names; XXL-JOB's enum names are
// accepted as aliases by ParseRoute.
type Route string

// Routing strategies, in XXL-JOB's enum order.
const (
	RouteFirst          Route = "first"
	RouteLast           Route = "last"
	RouteRound          Route = "round"
	RouteRandom         Route = "random"
	RouteConsistentHash Route = "consistent_hash"
	RouteLFU            Route = "lfu"
	RouteLRU            Route = "lru"
	RouteFailover       Route = "failover"
	RouteBusyover       Route = "busyover"
	RouteSharding       Route = "sharding"
)

// routeInfo describes one strategy: XXL-JOB's enum name
// (ExecutorRouteStrategyEnum) and XXL-JOB's title.
type routeInfo struct {
	name       Route
	xxl, title string
}

var routeTable = [...]routeInfo{
	{RouteFirst, "FIRST", "First"},
	{RouteLast, "LAST", "Last"},
	{RouteRound, "ROUND", "Round"},
	{RouteRandom, "RANDOM", "Random"},
	{RouteConsistentHash, "CONSISTENT_HASH", "Consistent Hash"},
	{RouteLFU, "LEAST_FREQUENTLY_USED", "Least Frequently Used"},
	{RouteLRU, "LEAST_RECENTLY_USED", "Least Recently Used"},
	{RouteFailover, "FAILOVER", "Failover"},
	{RouteBusyover, "BUSYOVER", "Busyover"},
	{RouteSharding, "SHARDING_BROADCAST", "Sharding Broadcast"},
}

// Routes lists the ten strategies in XXL-JOB's enum order.
func Routes() []Route {
	out := make([]Route, len(routeTable))
	for i, s := range routeTable {
		out[i] = s.name
	}
	return out
}

// ErrUnknownRoute is wrapped by ParseRoute's errors.
var ErrUnknownRoute = fmt.Errorf("unknown routing strategy")

// ParseRoute maps a strategy name to its Route. It accepts the Ringjob names
// and XXL-JOB's enum names (FIRST, LAST, ROUND, RANDOM, CONSISTENT_HASH,
// LEAST_FREQUENTLY_USED, LEAST_RECENTLY_USED, FAILOVER, BUSYOVER,
// SHARDING_BROADCAST), ignoring case and surrounding spaces. Anything else is
// an error wrapping ErrUnknownRoute that lists the valid names.
func ParseRoute(name string) (Route, error) {
	n := strings.TrimSpace(name)
	for _, s := range routeTable {
		if strings.EqualFold(n, string(s.name)) || strings.EqualFold(n, s.xxl) {
			return s.name, nil
		}
	}
	return "", fmt.Errorf("%w %q: use one of %s (XXL-JOB names such as ROUND or LEAST_FREQUENTLY_USED are accepted too)",
		ErrUnknownRoute, name, Join(Routes()))
}

// Valid reports whether r is one of the ten Ringjob names (aliases are not).
func (r Route) Valid() bool { return r.info() != nil }

// Title is XXL-JOB's display title ("Consistent Hash", "Sharding
// Broadcast", ...), or "" for an unknown name.
func (r Route) Title() string {
	if i := r.info(); i != nil {
		return i.title
	}
	return ""
}

// XXLName is XXL-JOB's enum name (ROUND, LEAST_FREQUENTLY_USED,
// SHARDING_BROADCAST, ...), or "" for an unknown name.
func (r Route) XXLName() string {
	if i := r.info(); i != nil {
		return i.xxl
	}
	return ""
}

func (r Route) info() *routeInfo {
	for i := range routeTable {
		if routeTable[i].name == r {
			return &routeTable[i]
		}
	}
	return nil
}

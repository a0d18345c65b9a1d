package schedule

import (
	"strconv"
	"strings"
	"time"
)

// EventBridge Scheduler writes a schedule as one expression: cron(...),
// rate(value unit) or at(yyyy-mm-ddThh:mm:ss). Each is accepted as the conf
// of the matching schedule type (cron, fixed_rate, at), and FromExpression
// splits a whole expression into a type and a conf, so a schedule copied from
// the AWS console or `aws scheduler get-schedule` works as it is.

// cutCall returns the inside of name(...) when expr is such a call (the name
// case-insensitive).
func cutCall(expr, name string) (string, bool) {
	n := len(name) + 1
	if len(expr) < n+1 || !strings.EqualFold(expr[:n], name+"(") || !strings.HasSuffix(expr, ")") {
		return "", false
	}
	return strings.TrimSpace(expr[n : len(expr)-1]), true
}

// rateUnits are EventBridge's rate units, singular and plural alike.
var rateUnits = map[string]time.Duration{
	"minute": time.Minute, "minutes": time.Minute,
	"hour": time.Hour, "hours": time.Hour,
	"day": 24 * time.Hour, "days": 24 * time.Hour,
}

// parseRate reads the inside of rate(...): a positive whole number and a unit.
func parseRate(expr, inner string) (Schedule, error) {
	const how = `write rate(value unit) with a whole number and minute(s), hour(s) or day(s), e.g. "rate(5 minutes)", or a number of seconds, e.g. "300"`
	f := strings.Fields(inner)
	if len(f) != 2 {
		return nil, confError("fixed_rate %q: %s", expr, how)
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 1 {
		return nil, confError("fixed_rate %q: the value %q is not a positive whole number; %s", expr, f[0], how)
	}
	unit, ok := rateUnits[strings.ToLower(f[1])]
	if !ok {
		return nil, confError("fixed_rate %q: the unit %q is not minute(s), hour(s) or day(s); %s", expr, f[1], how)
	}
	if n > int64(MaxFixedRateSeconds*time.Second/unit) {
		return nil, confError("fixed_rate %q is more than 365 days; use cron for rarer fires", expr)
	}
	return fixedRate{interval: time.Duration(n) * unit}, nil
}

// FromExpression splits an EventBridge schedule expression into a schedule
// type and conf: cron(...) → cron, rate(...) → fixed_rate in seconds,
// at(...) → at. The result parses with Parse in the schedule's time zone.
func FromExpression(expr string) (Kind, string, error) {
	e := strings.TrimSpace(expr)
	if inner, ok := cutCall(e, "rate"); ok {
		s, err := parseRate(e, inner)
		if err != nil {
			return "", "", err
		}
		return KindFixedRate, strconv.FormatInt(int64(s.(fixedRate).interval/time.Second), 10), nil
	}
	if inner, ok := cutCall(e, "at"); ok {
		return KindAt, inner, nil
	}
	if _, ok := cutCall(e, "cron"); ok {
		return KindCron, e, nil
	}
	return "", "", confError("schedule expression %q is not cron(...), rate(...) or at(...)", expr)
}

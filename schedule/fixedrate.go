package schedule

import (
	"strconv"
	"strings"
	"time"
)

// Bounds of a fixed_rate interval, in seconds.
const (
	MinFixedRateSeconds = 1
	MaxFixedRateSeconds = 365 * 24 * 60 * 60 // 31536000
)

// fixedRate fires every interval after the previous fire, like XXL-JOB's FIX_RATE.
type fixedRate struct {
	interval time.Duration
}

func parseFixedRate(conf string) (Schedule, error) {
	s := strings.TrimSpace(conf)
	if inner, ok := cutCall(s, "rate"); ok {
		return parseRate(s, inner)
	}
	const how = "write a whole number of seconds between 1 and 31536000 (365 days), e.g. \"30\", or rate(5 minutes)"
	if s == "" {
		return nil, confError("fixed_rate needs an interval in seconds; %s", how)
	}
	digits := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	for _, r := range digits {
		if r < '0' || r > '9' {
			return nil, confError("fixed_rate %q is not a whole number of seconds; %s", conf, how)
		}
	}
	if digits == "" {
		return nil, confError("fixed_rate %q is not a whole number of seconds; %s", conf, how)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil && strings.HasPrefix(s, "-"), err == nil && n < MinFixedRateSeconds:
		return nil, confError("fixed_rate %q must be at least 1 second; %s", conf, how)
	case err != nil, n > MaxFixedRateSeconds:
		return nil, confError("fixed_rate %q is more than 31536000 seconds (365 days); %s, or use cron for rarer fires", conf, how)
	}
	return fixedRate{interval: time.Duration(n) * time.Second}, nil
}

// Next returns after + interval, rounded up to a whole second. It always fires again.
func (f fixedRate) Next(after time.Time) (time.Time, bool) {
	return ceilSecond(after.Add(f.interval)), true
}

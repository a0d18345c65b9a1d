package lambda

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/ringjob/ringjob/targets"
)

// target is a parsed lambda:// URI or function ARN.
type target struct {
	raw       string
	region    string
	function  string // what Invoke's FunctionName gets: a name or an unqualified ARN
	name      string // the function name alone
	qualifier string // version or alias; "" = $LATEST
	mode      string // ModeSync, ModeEvent, or "" for the driver's default
}

var (
	regionRE    = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d+$`)
	functionRE  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	qualifierRE = regexp.MustCompile(`^(\$LATEST|[A-Za-z0-9_-]{1,128})$`)
	arnRE       = regexp.MustCompile(`^arn:(aws[a-z-]*):lambda:([a-z0-9-]+):(\d{12}):function:([A-Za-z0-9_-]{1,64})(?::([^:?]+))?$`)
)

// parseTarget reads lambda://REGION/FUNCTION[?qualifier=Q][&mode=M] or
// arn:PARTITION:lambda:REGION:ACCOUNT:function:NAME[:Q][?mode=M]. Errors
// wrap targets.ErrUnknownTarget and say what a valid target looks like.
func parseTarget(raw string) (target, error) {
	bad := func(format string, args ...any) (target, error) {
		return target{}, fmt.Errorf("%w: %q: %s (expected lambda://REGION/FUNCTION[?qualifier=ALIAS][&mode=event] or arn:aws:lambda:REGION:ACCOUNT:function:NAME[:ALIAS])",
			targets.ErrUnknownTarget, raw, fmt.Sprintf(format, args...))
	}
	t := target{raw: raw}
	base, rawQuery, _ := strings.Cut(raw, "?")
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return bad("bad query: %v", err)
	}
	for k := range q {
		if k != "qualifier" && k != "mode" {
			return bad("unknown option %q", k)
		}
	}
	switch m := q.Get("mode"); m {
	case "", ModeSync, ModeEvent:
		t.mode = m
	default:
		return bad("mode %q is not %q or %q", m, ModeSync, ModeEvent)
	}
	t.qualifier = q.Get("qualifier")

	if strings.HasPrefix(base, "arn:") {
		m := arnRE.FindStringSubmatch(base)
		if m == nil {
			return bad("not a Lambda function ARN")
		}
		t.region, t.name = m[2], m[4]
		t.function = strings.Join(strings.Split(base, ":")[:7], ":")
		if m[5] != "" {
			if t.qualifier != "" && t.qualifier != m[5] {
				return bad("the ARN's qualifier %q and ?qualifier=%q differ", m[5], t.qualifier)
			}
			t.qualifier = m[5]
		}
	} else {
		scheme, rest, ok := strings.Cut(base, "://")
		if !ok || !strings.EqualFold(scheme, "lambda") {
			return bad("not a lambda:// target")
		}
		region, fn, _ := strings.Cut(rest, "/")
		if strings.Contains(fn, "/") {
			return bad("the path must be one function name")
		}
		t.region, t.name, t.function = region, fn, fn
		if !functionRE.MatchString(fn) {
			return bad("function name %q: use 1-64 letters, digits, '-' and '_'", fn)
		}
	}
	if !regionRE.MatchString(t.region) {
		return bad("region %q is not an AWS region name such as us-east-1", t.region)
	}
	if t.qualifier != "" && !qualifierRE.MatchString(t.qualifier) {
		return bad("qualifier %q is not a version or alias name", t.qualifier)
	}
	return t, nil
}

// key identifies the function (with its qualifier) for the GetFunction cache.
func (t target) key() string { return t.region + "|" + t.function + "|" + t.qualifier }

// String names the function for messages: name[:qualifier] in region.
func (t target) String() string {
	s := t.name
	if t.qualifier != "" {
		s += ":" + t.qualifier
	}
	return s + " in " + t.region
}

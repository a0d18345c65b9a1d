package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/client/jobspec"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/schedule"
)

// EventBridgeOptions say how EventBridge Scheduler schedules become jobs as
// code.
type EventBridgeOptions struct {
	// KeepEnabled keeps the ENABLED schedules running; otherwise every job
	// is imported stopped.
	KeepEnabled bool
}

// The retry delays given to a schedule with retries: EventBridge retries
// with exponential backoff and jitter, and publishes no exact figures.
const (
	ebRetryDelaySec    = 60
	ebRetryMaxDelaySec = 3600
)

// EventBridgeTime is a timestamp as the AWS CLI prints it: ISO 8601 text
// ("2026-01-01T00:00:00+00:00", the default) or epoch seconds
// (cli_timestamp_format = none).
type EventBridgeTime struct{ time.Time }

// UnmarshalJSON reads ISO 8601 text or epoch seconds.
func (t *EventBridgeTime) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q is not an ISO 8601 time with an offset", s)
		}
		t.Time = v
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("%s is neither an ISO 8601 time nor epoch seconds", b)
	}
	sec, frac := math.Modf(f)
	t.Time = time.Unix(int64(sec), int64(frac*1e9)).UTC()
	return nil
}

// EventBridgeSchedule is the output of `aws scheduler get-schedule` (every field of
// GetSchedule's response), or an item of `list-schedules` (a summary:
// Arn, Name, GroupName, State, dates and Target.Arn only).
type EventBridgeSchedule struct {
	ActionAfterCompletion string
	Arn                   string
	CreationDate          *EventBridgeTime
	Description           string
	EndDate               *EventBridgeTime
	FlexibleTimeWindow    *struct {
		Mode                   string
		MaximumWindowInMinutes int
	}
	GroupName                  string
	KmsKeyArn                  string
	LastModificationDate       *EventBridgeTime
	Name                       string
	ScheduleExpression         string
	ScheduleExpressionTimezone string
	StartDate                  *EventBridgeTime
	State                      string
	Target                     *EventBridgeTarget
	// unknown are the keys this command does not know (a newer API).
	unknown []string
}

// EventBridgeTarget is a schedule's target. The parameter blocks of non-Lambda
// targets are kept raw: they are only reported.
type EventBridgeTarget struct {
	Arn              string
	RoleArn          string
	Input            *string
	DeadLetterConfig *struct{ Arn string }
	RetryPolicy      *struct {
		MaximumEventAgeInSeconds *int
		MaximumRetryAttempts     *int
	}
	EcsParameters               json.RawMessage
	EventBridgeParameters       json.RawMessage
	KinesisParameters           json.RawMessage
	SageMakerPipelineParameters json.RawMessage
	SqsParameters               json.RawMessage
}

// The fields of GetSchedule's response and of its Target.
var (
	ebScheduleFields = fieldSet("ActionAfterCompletion", "Arn", "CreationDate", "Description", "EndDate", "FlexibleTimeWindow", "GroupName",
		"KmsKeyArn", "LastModificationDate", "Name", "ScheduleExpression", "ScheduleExpressionTimezone", "StartDate", "State", "Target")
	ebTargetFields = fieldSet("Arn", "RoleArn", "Input", "DeadLetterConfig", "RetryPolicy", "EcsParameters", "EventBridgeParameters",
		"KinesisParameters", "SageMakerPipelineParameters", "SqsParameters")
)

func fieldSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// unknownKeys lists the keys of a JSON object that known lacks (prefix
// names where they sit).
func unknownKeys(raw json.RawMessage, known map[string]bool, prefix string) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	var out []string
	for k := range m {
		if !known[k] {
			out = append(out, prefix+k)
		}
	}
	sort.Strings(out)
	return out
}

// ReadEventBridge reads schedules from the JSON of `aws scheduler
// get-schedule` (one schedule), `aws scheduler list-schedules` (an object
// with Schedules), a JSON list of schedules, or several of these one after
// the other (a shell loop of get-schedule). name names the input in errors.
func ReadEventBridge(r io.Reader, name string) ([]EventBridgeSchedule, error) {
	dec := json.NewDecoder(r)
	var out []EventBridgeSchedule
	for n := 1; ; n++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: not valid JSON (value %d): %w", name, n, err)
		}
		var items []json.RawMessage
		switch t := bytes.TrimSpace(raw); {
		case len(t) > 0 && t[0] == '[':
			if err := json.Unmarshal(t, &items); err != nil {
				return nil, fmt.Errorf("%s: value %d: %w", name, n, err)
			}
		case len(t) > 0 && t[0] == '{':
			var list struct{ Schedules *[]json.RawMessage }
			if err := json.Unmarshal(t, &list); err == nil && list.Schedules != nil {
				items = *list.Schedules
			} else {
				items = []json.RawMessage{t}
			}
		default:
			return nil, fmt.Errorf("%s: value %d is %s; expected the JSON of aws scheduler get-schedule or list-schedules", name, n, short(string(t)))
		}
		for i, it := range items {
			var s EventBridgeSchedule
			if err := json.Unmarshal(it, &s); err != nil {
				return nil, fmt.Errorf("%s: schedule %d of value %d: %w", name, i+1, n, err)
			}
			if s.Name == "" {
				return nil, fmt.Errorf("%s: schedule %d of value %d has no Name; expected the JSON of aws scheduler get-schedule or list-schedules", name, i+1, n)
			}
			s.unknown = unknownKeys(it, ebScheduleFields, "")
			var tgt struct{ Target json.RawMessage }
			if json.Unmarshal(it, &tgt) == nil && tgt.Target != nil {
				s.unknown = append(s.unknown, unknownKeys(tgt.Target, ebTargetFields, "Target.")...)
			}
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no schedule", name)
	}
	return out, nil
}

// lambdaTarget reads a Lambda function ARN
// (arn:PARTITION:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]) as the
// lambda:// target Ringjob invokes (targets/lambda), the function's name
// and its account.
func lambdaTarget(arn string) (uri, function, account string, ok bool) {
	p := strings.Split(arn, ":")
	if len(p) < 7 || len(p) > 8 || p[0] != "arn" || p[2] != "lambda" || p[5] != "function" || p[3] == "" || p[6] == "" {
		return "", "", "", false
	}
	uri = "lambda://" + p[3] + "/" + p[6]
	if len(p) == 8 && p[7] != "" && p[7] != "$LATEST" {
		uri += "?qualifier=" + p[7]
	}
	return uri, p[6], p[4], true
}

// targetService names the AWS service of a target ARN ("sqs", "ecs",
// "aws-sdk:sqs:sendMessage" for a universal target).
func targetService(arn string) string {
	p := strings.Split(arn, ":")
	if len(p) < 3 {
		return arn
	}
	if p[2] == "scheduler" && len(p) >= 6 && p[5] == "aws-sdk" {
		return "universal target " + strings.Join(p[5:], ":")
	}
	return p[2]
}

// ConvertEventBridge turns schedules into a declaration: each Lambda
// function becomes a group whose member is its lambda:// target, each
// schedule a job of it.
func ConvertEventBridge(schedules []EventBridgeSchedule, opts EventBridgeOptions) *Result {
	res := &Result{Set: &jobspec.Set{}, From: "EventBridge Scheduler", Origin: map[string]string{}}
	note := func(ref, source, field, value string, k NoteKind, why string, args ...any) {
		res.Notes = append(res.Notes, Note{Ref: ref, Source: source, Field: field, Value: value, Kind: k, Why: fmt.Sprintf(why, args...)})
	}
	// One group per function: its app name from the function's name.
	taken := map[string]bool{}
	appOf := map[string]string{}
	// Names: a schedule's Name, qualified by its schedule group when two
	// schedules of one function share a name.
	count := map[string]int{}
	for _, s := range schedules {
		if s.Target == nil {
			continue
		}
		uri, fn, _, ok := lambdaTarget(s.Target.Arn)
		if !ok || s.ScheduleExpression == "" {
			continue
		}
		if _, seen := appOf[uri]; !seen {
			app := uniqueApp(appName(fn), taken)
			appOf[uri] = app
			accept := false
			res.Set.Groups = append(res.Set.Groups, client.ApplyGroup{AppName: app, Title: "Lambda " + fn, Members: []string{uri}, AcceptRegistrations: &accept})
			res.Origin[app] = "the Lambda function " + s.Target.Arn
		}
		count[appOf[uri]+"/"+jobName(s.Name)]++
	}
	for _, s := range schedules {
		group := s.GroupName
		if group == "" {
			group = "default"
		}
		src := "schedule " + group + "/" + s.Name
		if s.Target == nil || s.ScheduleExpression == "" {
			note("", src, "ScheduleExpression", "", NotCarried,
				"a list-schedules summary has no expression nor target settings: import the output of aws scheduler get-schedule --group-name %s --name %s", group, s.Name)
			continue
		}
		t := s.Target
		uri, _, account, ok := lambdaTarget(t.Arn)
		if !ok {
			var blocks []string
			for name, raw := range map[string]json.RawMessage{"EcsParameters": t.EcsParameters, "EventBridgeParameters": t.EventBridgeParameters,
				"KinesisParameters": t.KinesisParameters, "SageMakerPipelineParameters": t.SageMakerPipelineParameters, "SqsParameters": t.SqsParameters} {
				if len(raw) > 0 && string(raw) != "null" {
					blocks = append(blocks, name)
				}
			}
			sort.Strings(blocks)
			with := ""
			if len(blocks) > 0 {
				with = " (with " + strings.Join(blocks, ", ") + ")"
			}
			note("", src, "Target.Arn", t.Arn, NotCarried,
				"the target is %s%s: Ringjob runs Lambda functions, HTTP executors and local commands, not this; the schedule is not imported", targetService(t.Arn), with)
			continue
		}
		app := appOf[uri]
		name := jobName(s.Name)
		if count[app+"/"+name] > 1 {
			name = jobName(group + "." + s.Name)
		}
		ref := app + "/" + name
		jnote := func(field, value string, k NoteKind, why string, args ...any) {
			note(ref, src, field, value, k, why, args...)
		}
		origin := "from EventBridge " + src
		if s.Arn != "" {
			origin += " (" + s.Arn + ")"
		}
		if s.CreationDate != nil {
			origin += ", created " + s.CreationDate.UTC().Format(time.RFC3339)
		}
		if s.LastModificationDate != nil {
			origin += ", modified " + s.LastModificationDate.UTC().Format(time.RFC3339)
		}
		aj := client.ApplyJob{Group: app, Name: name}
		aj.Description = strings.TrimSpace(s.Description)

		tz := strings.TrimSpace(s.ScheduleExpressionTimezone)
		if _, err := schedule.LoadZone(tz); err != nil {
			jnote("ScheduleExpressionTimezone", tz, NotCarried, "%v; imported in UTC", err)
			tz = ""
		}
		if tz != "" && tz != "UTC" {
			aj.TimeZone = tz
		}
		typ, conf, err := schedule.FromExpression(s.ScheduleExpression)
		if err == nil {
			_, err = schedule.Parse(typ, conf, tz)
		}
		if err != nil {
			jnote("ScheduleExpression", s.ScheduleExpression, NotCarried, "%v; the job is imported without a schedule", err)
		} else {
			aj.ScheduleType, aj.ScheduleConf = string(typ), conf
		}
		if s.StartDate != nil {
			aj.ActiveFrom = s.StartDate.UTC().Format(time.RFC3339)
		}
		if s.EndDate != nil {
			aj.ActiveUntil = s.EndDate.UTC().Format(time.RFC3339)
		}
		if w := s.FlexibleTimeWindow; w != nil && strings.EqualFold(w.Mode, "FLEXIBLE") {
			if err := schedule.CheckFlexMinutes(w.MaximumWindowInMinutes); err != nil {
				jnote("FlexibleTimeWindow.MaximumWindowInMinutes", strconv.Itoa(w.MaximumWindowInMinutes), NotCarried, "%v; imported without a window", err)
			} else {
				aj.FlexibleWindowMin = w.MaximumWindowInMinutes
			}
		}
		switch a := strings.ToUpper(strings.TrimSpace(s.ActionAfterCompletion)); a {
		case "", "NONE":
		case "DELETE":
			aj.AfterCompletion = string(kind.AfterCompletionDelete)
		default:
			jnote("ActionAfterCompletion", a, NotCarried, "unknown; the job stays after its last fire (none)")
		}

		// The target.
		if t.Input != nil {
			aj.Params = *t.Input
			if strings.Contains(*t.Input, "<aws.scheduler.") {
				jnote("Target.Input", *t.Input, Changed,
					"EventBridge's context attributes (<aws.scheduler.scheduled-time> ...) are not filled in: the function gets the text as written; read the schedule time from the run's payload instead")
			}
		}
		if rp := t.RetryPolicy; rp != nil {
			if n := rp.MaximumRetryAttempts; n != nil && *n > 0 {
				aj.RetryCount = min(*n, maxRetryCount)
				// EventBridge backs off exponentially (with jitter) from
				// about a minute; so does the import.
				aj.RetryBackoff = string(kind.BackoffExponential)
				aj.RetryDelaySec, aj.RetryMaxDelaySec = ebRetryDelaySec, ebRetryMaxDelaySec
				if *n > maxRetryCount {
					jnote("Target.RetryPolicy.MaximumRetryAttempts", strconv.Itoa(*n), Changed, "more than Ringjob's %d retries; imported as %d (with max_event_age_sec, age still bounds them)", maxRetryCount, maxRetryCount)
				}
			}
			if a := rp.MaximumEventAgeInSeconds; a != nil && *a > 0 {
				aj.MaxEventAgeSec = *a
			}
		}
		if d := t.DeadLetterConfig; d != nil && d.Arn != "" {
			aj.FailureDestination = d.Arn
		}
		if t.RoleArn != "" {
			jnote("Target.RoleArn", t.RoleArn, NotCarried, "Ringjob invokes with the server's own AWS credentials: give its role lambda:InvokeFunction and lambda:GetFunction on the function (account %s)", account)
		}
		if s.KmsKeyArn != "" {
			jnote("KmsKeyArn", s.KmsKeyArn, NotCarried, "Ringjob keeps the job's input in its own database; encrypt that database at rest instead")
		}
		for _, k := range s.unknown {
			jnote(k, "", NotCarried, "a field this command does not know")
		}
		switch {
		case !strings.EqualFold(s.State, "ENABLED"):
		case aj.ScheduleType == "":
			jnote("State", s.State, Changed, "a job without a schedule cannot be started; imported stopped")
		case opts.KeepEnabled:
			aj.Enabled = true
		default:
			res.Running++
		}
		if strings.EqualFold(s.State, "ENABLED") {
			origin += "; ENABLED"
		}
		res.Origin[ref] = origin
		res.Set.Jobs = append(res.Set.Jobs, aj)
	}
	return res
}

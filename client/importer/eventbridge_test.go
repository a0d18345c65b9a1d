package importer

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/client/jobspec"
)

func readEB(t *testing.T, files ...string) []EventBridgeSchedule {
	t.Helper()
	var all []EventBridgeSchedule
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		s, err := ReadEventBridge(fh, f)
		fh.Close()
		require.NoError(t, err)
		all = append(all, s...)
	}
	return all
}

func TestEventBridge(t *testing.T) {
	t.Parallel()
	all := readEB(t, "testdata/eb_get_schedule.json", "testdata/eb_schedules.json", "testdata/eb_list_schedules.json")
	require.Len(t, all, 10)
	r := ConvertEventBridge(all, EventBridgeOptions{})

	t.Run("each Lambda function is a group whose member is its lambda:// target", func(t *testing.T) {
		require.Len(t, r.Set.Groups, 2)
		g := groupOf(t, r, "billing-close")
		require.Equal(t, []string{"lambda://eu-west-1/billing-close?qualifier=live"}, g.Members)
		require.False(t, *g.AcceptRegistrations)
		require.Equal(t, []string{"lambda://us-east-1/report_gen"}, groupOf(t, r, "report-gen").Members)
	})

	t.Run("every field of get-schedule is carried over or listed", func(t *testing.T) {
		j := jobOf(t, r, "billing-close/billing.close-books")
		require.Equal(t, "Close the books every weekday evening", j.Description)
		require.Equal(t, "cron", j.ScheduleType)
		require.Equal(t, "cron(0 18 ? * MON-FRI *)", j.ScheduleConf)
		require.Equal(t, "Europe/Berlin", j.TimeZone)
		require.Equal(t, "2025-12-31T23:00:00Z", j.ActiveFrom, "StartDate, in UTC")
		require.Equal(t, "2027-12-31T23:00:00Z", j.ActiveUntil)
		require.Equal(t, 15, j.FlexibleWindowMin)
		require.Equal(t, `{"ledger":"eu","at":"<aws.scheduler.scheduled-time>"}`, j.Params)
		require.Equal(t, 5, j.RetryCount)
		require.Equal(t, "exponential", j.RetryBackoff)
		require.Equal(t, 60, j.RetryDelaySec)
		require.Equal(t, 3600, j.MaxEventAgeSec)
		require.Equal(t, "arn:aws:sqs:eu-west-1:111122223333:billing-dlq", j.FailureDestination)
		require.Empty(t, j.AfterCompletion)
		require.False(t, j.Enabled, "imported stopped without --enabled")
		for field, kind := range map[string]NoteKind{"Target.Input": Changed, "Target.RoleArn": NotCarried, "KmsKeyArn": NotCarried} {
			require.Equal(t, kind, noteOf(t, r, "billing-close/billing.close-books", field).Kind, field)
		}
		require.Contains(t, noteOf(t, r, "billing-close/billing.close-books", "Target.RoleArn").Why, "lambda:InvokeFunction")
	})

	t.Run("rates, one-time schedules, epoch dates and capped retries", func(t *testing.T) {
		rate := jobOf(t, r, "billing-close/default.close-books")
		require.Equal(t, "fixed_rate", rate.ScheduleType)
		require.Equal(t, "300", rate.ScheduleConf)
		require.Empty(t, rate.TimeZone)
		require.Zero(t, rate.FlexibleWindowMin, "Mode OFF")
		require.Equal(t, 10, rate.RetryCount)
		require.Equal(t, 86400, rate.MaxEventAgeSec)
		require.Equal(t, Changed, noteOf(t, r, "billing-close/default.close-books", "Target.RetryPolicy.MaximumRetryAttempts").Kind)

		at := jobOf(t, r, "report-gen/quarter-report")
		require.Equal(t, "at", at.ScheduleType)
		require.Equal(t, "2027-03-01T09:00:00", at.ScheduleConf)
		require.Equal(t, "America/New_York", at.TimeZone)
		require.Equal(t, "delete", at.AfterCompletion)
		require.Equal(t, 60, at.FlexibleWindowMin)
		require.Equal(t, "2026-01-01T00:00:00Z", at.ActiveFrom, "epoch seconds")
		require.Zero(t, at.RetryCount)
		require.Empty(t, at.RetryBackoff)
		require.Equal(t, 600, at.MaxEventAgeSec)
		require.Equal(t, `{"quarter":"Q1"}`, at.Params)
		require.Equal(t, 2, r.Running, "the two ENABLED Lambda schedules")
	})

	t.Run("other targets and summaries are listed, not imported", func(t *testing.T) {
		require.Len(t, r.Set.Jobs, 3)
		byName := map[string]Note{}
		for _, n := range r.Notes {
			if n.Ref == "" {
				byName[n.Source] = n
			}
		}
		for src, want := range map[string]string{
			"schedule default/nightly-batch": "the target is ecs (with EcsParameters)",
			"schedule default/enqueue":       "the target is sqs (with SqsParameters)",
			"schedule default/sdk-call":      "universal target aws-sdk:sqs:sendMessage",
			"schedule default/bus":           "the target is events (with EventBridgeParameters)",
			"schedule default/stream":        "the target is kinesis (with KinesisParameters)",
			"schedule default/pipeline":      "the target is sagemaker (with SageMakerPipelineParameters)",
			"schedule billing/close-books":   "aws scheduler get-schedule --group-name billing --name close-books",
		} {
			require.Contains(t, byName[src].Why, want, src)
			require.Equal(t, NotCarried, byName[src].Kind, src)
		}
		var table bytes.Buffer
		require.NoError(t, r.WriteTable(&table))
		require.Contains(t, table.String(), "(schedule default/nightly-batch)")
		require.Contains(t, table.String(), "Imported 2 group(s) and 3 job(s) from EventBridge Scheduler")
	})

	t.Run("the files read back as written", func(t *testing.T) {
		b, err := r.Marshal()
		require.NoError(t, err)
		require.Contains(t, string(b), "# from EventBridge schedule billing/close-books (arn:aws:scheduler:eu-west-1:111122223333:schedule/billing/close-books), created 2025-11-02T10:15:30Z")
		set, err := jobspec.Parse("eb.yaml", b)
		require.NoError(t, err)
		require.ElementsMatch(t, r.Set.Jobs, set.Jobs)
		require.ElementsMatch(t, r.Set.Groups, set.Groups)
	})

	t.Run("--enabled keeps ENABLED schedules running", func(t *testing.T) {
		r := ConvertEventBridge(all, EventBridgeOptions{KeepEnabled: true})
		require.True(t, jobOf(t, r, "billing-close/billing.close-books").Enabled)
		require.True(t, jobOf(t, r, "report-gen/quarter-report").Enabled)
		require.False(t, jobOf(t, r, "billing-close/default.close-books").Enabled, "DISABLED")
		require.Zero(t, r.Running)
	})
}

func TestReadEventBridgeInput(t *testing.T) {
	t.Parallel()
	one, err := os.ReadFile("testdata/eb_get_schedule.json")
	require.NoError(t, err)

	t.Run("get-schedule outputs one after the other", func(t *testing.T) {
		s, err := ReadEventBridge(bytes.NewReader(append(append([]byte{}, one...), one...)), "stdin")
		require.NoError(t, err)
		require.Len(t, s, 2)
	})
	t.Run("a field the API adds later is listed", func(t *testing.T) {
		in := strings.Replace(string(one), `"Name": "close-books",`, `"Name": "close-books", "Priority": 3,`, 1)
		s, err := ReadEventBridge(strings.NewReader(in), "new.json")
		require.NoError(t, err)
		r := ConvertEventBridge(s, EventBridgeOptions{})
		require.Equal(t, NotCarried, noteOf(t, r, "billing-close/close-books", "Priority").Kind)
	})
	for name, tc := range map[string]struct{ in, want string }{
		"not JSON":         {`{"Name": `, "x.json: not valid JSON (value 1)"},
		"no schedule":      {``, "x.json holds no schedule"},
		"no name":          {`{"ScheduleExpression": "rate(1 day)"}`, "x.json: schedule 1 of value 1 has no Name"},
		"a bare string":    {`"hello"`, "x.json: value 1 is \"hello\"; expected the JSON of aws scheduler"},
		"a bad date":       {`{"Name": "a", "StartDate": "tomorrow"}`, `"tomorrow" is not an ISO 8601 time`},
		"a wrong type":     {`{"Name": "a", "FlexibleTimeWindow": {"MaximumWindowInMinutes": "ten"}}`, "x.json: schedule 1 of value 1"},
		"a list of junk":   {`[1]`, "x.json: schedule 1 of value 1"},
		"an empty listing": {`{"Schedules": []}`, "x.json holds no schedule"},
	} {
		t.Run("refused: "+name, func(t *testing.T) {
			_, err := ReadEventBridge(strings.NewReader(tc.in), "x.json")
			require.ErrorContains(t, err, tc.want)
		})
	}
	t.Run("a bad expression is listed and the job kept without a schedule", func(t *testing.T) {
		in := strings.Replace(string(one), "cron(0 18 ? * MON-FRI *)", "cron(0 25 ? * MON-FRI *)", 1)
		s, err := ReadEventBridge(strings.NewReader(in), "bad.json")
		require.NoError(t, err)
		r := ConvertEventBridge(s, EventBridgeOptions{KeepEnabled: true})
		j := jobOf(t, r, "billing-close/close-books")
		require.Empty(t, j.ScheduleType)
		require.False(t, j.Enabled)
		require.Contains(t, noteOf(t, r, "billing-close/close-books", "ScheduleExpression").Why, "hour")
		require.Equal(t, Changed, noteOf(t, r, "billing-close/close-books", "State").Kind)
	})
}

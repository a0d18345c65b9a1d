package schedule

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCron_DocumentedExamples takes the examples of the Quartz CronTrigger
// tutorial, the Amazon EventBridge cron reference and XXL-JOB, and checks the
// fire times they document, worked out by calendar (2026-01-01 is a
// Thursday). done means the expression fires no more after want.
func TestCron_DocumentedExamples(t *testing.T) {
	t.Parallel()

	tests := []struct {
		source, meaning string
		expr, tz, after string
		want            []string
		done            bool
	}{
		// Quartz CronTrigger tutorial.
		{source: "Quartz", meaning: "12 pm every day", expr: "0 0 12 * * ?", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T12:00:00Z", "2026-01-02T12:00:00Z"}},
		{source: "Quartz", meaning: "10:15 am every day", expr: "0 15 10 ? * *", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T10:15:00Z", "2026-01-02T10:15:00Z"}},
		{source: "Quartz", meaning: "10:15 am every day (year *)", expr: "0 15 10 * * ? *", after: "2026-01-01T10:15:00Z",
			want: []string{"2026-01-02T10:15:00Z"}},
		{source: "Quartz", meaning: "10:15 am every day during 2005", expr: "0 15 10 * * ? 2005", after: "2005-12-30T12:00:00Z",
			want: []string{"2005-12-31T10:15:00Z"}, done: true},
		{source: "Quartz", meaning: "10:15 am every day during 2005, asked before 2005", expr: "0 15 10 * * ? 2005", after: "1999-06-01T00:00:00Z",
			want: []string{"2005-01-01T10:15:00Z", "2005-01-02T10:15:00Z"}},
		{source: "Quartz", meaning: "every minute from 2 pm to 2:59 pm", expr: "0 * 14 * * ?", after: "2026-01-01T14:58:00Z",
			want: []string{"2026-01-01T14:59:00Z", "2026-01-02T14:00:00Z", "2026-01-02T14:01:00Z"}},
		{source: "Quartz", meaning: "every 5 minutes from 2 pm to 2:55 pm", expr: "0 0/5 14 * * ?", after: "2026-01-01T14:50:00Z",
			want: []string{"2026-01-01T14:55:00Z", "2026-01-02T14:00:00Z"}},
		{source: "Quartz", meaning: "every 5 minutes 2-2:55 pm and 6-6:55 pm", expr: "0 0/5 14,18 * * ?", after: "2026-01-01T14:55:00Z",
			want: []string{"2026-01-01T18:00:00Z", "2026-01-01T18:05:00Z"}},
		{source: "Quartz", meaning: "every minute from 2 pm to 2:05 pm", expr: "0 0-5 14 * * ?", after: "2026-01-01T14:04:00Z",
			want: []string{"2026-01-01T14:05:00Z", "2026-01-02T14:00:00Z"}},
		{source: "Quartz", meaning: "2:10 pm and 2:44 pm every Wednesday in March", expr: "0 10,44 14 ? 3 WED", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-03-04T14:10:00Z", "2026-03-04T14:44:00Z", "2026-03-11T14:10:00Z"}},
		{source: "Quartz", meaning: "10:15 am Monday to Friday", expr: "0 15 10 ? * MON-FRI", after: "2026-01-02T11:00:00Z",
			want: []string{"2026-01-05T10:15:00Z", "2026-01-06T10:15:00Z"}},
		{source: "Quartz", meaning: "10:15 am on the 15th", expr: "0 15 10 15 * ?", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-15T10:15:00Z", "2026-02-15T10:15:00Z"}},
		{source: "Quartz", meaning: "10:15 am on the last day of every month", expr: "0 15 10 L * ?", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-31T10:15:00Z", "2026-02-28T10:15:00Z", "2026-03-31T10:15:00Z", "2026-04-30T10:15:00Z"}},
		{source: "Quartz", meaning: "10:15 am on the second-to-last day of every month", expr: "0 15 10 L-2 * ?", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-29T10:15:00Z", "2026-02-26T10:15:00Z", "2026-03-29T10:15:00Z"}},
		{source: "Quartz", meaning: "10:15 am on the last Friday of every month", expr: "0 15 10 ? * 6L", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-30T10:15:00Z", "2026-02-27T10:15:00Z", "2026-03-27T10:15:00Z"}},
		{source: "Quartz", meaning: "last Friday, by name", expr: "0 15 10 ? * FRIL", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-30T10:15:00Z"}},
		{source: "Quartz", meaning: "10:15 am on every last Friday during 2002-2005", expr: "0 15 10 ? * 6L 2002-2005", after: "2005-11-01T00:00:00Z",
			want: []string{"2005-11-25T10:15:00Z", "2005-12-30T10:15:00Z"}, done: true},
		{source: "Quartz", meaning: "10:15 am on the third Friday of every month", expr: "0 15 10 ? * 6#3", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-16T10:15:00Z", "2026-02-20T10:15:00Z", "2026-03-20T10:15:00Z"}},
		{source: "Quartz", meaning: "12 pm every 5 days from the 1st", expr: "0 0 12 1/5 * ?", after: "2026-01-20T00:00:00Z",
			want: []string{"2026-01-21T12:00:00Z", "2026-01-26T12:00:00Z", "2026-01-31T12:00:00Z", "2026-02-01T12:00:00Z"}},
		{source: "Quartz", meaning: "November 11th at 11:11 am", expr: "0 11 11 11 11 ?", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-11-11T11:11:00Z", "2027-11-11T11:11:00Z"}},
		{source: "Quartz", meaning: "L alone in day-of-week is Saturday", expr: "0 0 8 ? * L", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-03T08:00:00Z", "2026-01-10T08:00:00Z"}},
		{source: "Quartz", meaning: "weekday nearest the 15th (Thu 15; Sun 15 -> Mon 16)", expr: "0 0 12 15W * ?", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-15T12:00:00Z", "2026-02-16T12:00:00Z", "2026-03-16T12:00:00Z", "2026-04-15T12:00:00Z"}},
		{source: "Quartz", meaning: "weekday nearest the 15th (Sat 15 -> Fri 14)", expr: "0 0 12 15W * ?", after: "2026-08-01T00:00:00Z",
			want: []string{"2026-08-14T12:00:00Z"}},
		{source: "Quartz", meaning: "1W does not jump back over the month (Sat 1 -> Mon 3)", expr: "0 0 12 1W * ?", after: "2026-07-15T00:00:00Z",
			want: []string{"2026-08-03T12:00:00Z", "2026-09-01T12:00:00Z"}},
		{source: "Quartz", meaning: "last weekday of the month", expr: "0 0 18 LW * ?", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-30T18:00:00Z", "2026-02-27T18:00:00Z", "2026-03-31T18:00:00Z", "2026-04-30T18:00:00Z", "2026-05-29T18:00:00Z"}},
		{source: "Quartz", meaning: "overflowing range 22-2 is 22, 23, 0, 1, 2", expr: "0 0 22-2 * * ?", after: "2026-01-01T12:00:00Z",
			want: []string{"2026-01-01T22:00:00Z", "2026-01-01T23:00:00Z", "2026-01-02T00:00:00Z", "2026-01-02T01:00:00Z", "2026-01-02T02:00:00Z", "2026-01-02T22:00:00Z"}},
		{source: "Quartz", meaning: "overflowing range FRI-MON", expr: "0 0 9 ? * FRI-MON", after: "2026-01-01T12:00:00Z",
			want: []string{"2026-01-02T09:00:00Z", "2026-01-03T09:00:00Z", "2026-01-04T09:00:00Z", "2026-01-05T09:00:00Z", "2026-01-09T09:00:00Z"}},
		{source: "Quartz", meaning: "fifth Friday only in months that have one", expr: "0 0 9 ? * 6#5", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-30T09:00:00Z", "2026-05-29T09:00:00Z", "2026-07-31T09:00:00Z"}},

		// XXL-JOB (Quartz's CronExpression): the case from the issue.
		{source: "XXL-JOB", meaning: "2 am on Mondays", expr: "0 0 2 ? * 2", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-05T02:00:00Z", "2026-01-12T02:00:00Z"}},
		{source: "XXL-JOB", meaning: "1 = Sunday, 7 = Saturday", expr: "0 0 2 ? * 1,7", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-03T02:00:00Z", "2026-01-04T02:00:00Z", "2026-01-10T02:00:00Z"}},

		// Amazon EventBridge cron reference (minutes hours day-of-month month day-of-week year).
		{source: "EventBridge", meaning: "10:00 am UTC every day", expr: "cron(0 10 * * ? *)", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T10:00:00Z", "2026-01-02T10:00:00Z"}},
		{source: "EventBridge", meaning: "12:15 pm UTC every day", expr: "cron(15 12 * * ? *)", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T12:15:00Z", "2026-01-02T12:15:00Z"}},
		{source: "EventBridge", meaning: "6:00 pm Monday through Friday", expr: "cron(0 18 ? * MON-FRI *)", after: "2026-01-02T19:00:00Z",
			want: []string{"2026-01-05T18:00:00Z", "2026-01-06T18:00:00Z"}},
		{source: "EventBridge", meaning: "8:00 am on the first day of the month", expr: "cron(0 8 1 * ? *)", after: "2026-01-01T09:00:00Z",
			want: []string{"2026-02-01T08:00:00Z", "2026-03-01T08:00:00Z"}},
		{source: "EventBridge", meaning: "every 15 minutes", expr: "cron(0/15 * * * ? *)", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:45:00Z", "2026-01-01T01:00:00Z"}},
		{source: "EventBridge", meaning: "every 10 minutes Monday through Friday", expr: "cron(0/10 * ? * MON-FRI *)", after: "2026-01-02T23:50:00Z",
			want: []string{"2026-01-05T00:00:00Z", "2026-01-05T00:10:00Z"}},
		{source: "EventBridge", meaning: "every 5 minutes between 8:00 am and 5:55 pm weekdays", expr: "cron(0/5 8-17 ? * MON-FRI *)", after: "2026-01-02T17:50:00Z",
			want: []string{"2026-01-02T17:55:00Z", "2026-01-05T08:00:00Z", "2026-01-05T08:05:00Z"}},
		{source: "EventBridge", meaning: "9 am on the first Monday of each month", expr: "cron(0 9 ? * 2#1 *)", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-05T09:00:00Z", "2026-02-02T09:00:00Z", "2026-03-02T09:00:00Z"}},
		{source: "EventBridge", meaning: "last day of the month, in a year range", expr: "cron(0 0 L * ? 2026-2027)", after: "2027-11-15T00:00:00Z",
			want: []string{"2027-11-30T00:00:00Z", "2027-12-31T00:00:00Z"}, done: true},
		{source: "EventBridge", meaning: "weekday nearest the 3rd", expr: "cron(0 9 3W * ? *)", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-02T09:00:00Z", "2026-02-03T09:00:00Z"}}, // 3 Jan 2026 is a Saturday

		// Across DST, in the job's zone.
		{source: "Quartz", meaning: "Sundays 02:30 Berlin: the spring-forward Sunday fires at the gap end", expr: "0 30 2 ? * 1", tz: "Europe/Berlin", after: "2026-03-21T00:00:00Z",
			want: []string{"2026-03-22T01:30:00Z", "2026-03-29T01:00:00Z", "2026-04-05T00:30:00Z"}},
		{source: "Quartz", meaning: "last Sunday 01:30 London (clocks change on last Sundays)", expr: "0 30 1 ? * 1L", tz: "Europe/London", after: "2026-02-01T00:00:00Z",
			want: []string{"2026-02-22T01:30:00Z", "2026-03-29T01:00:00Z", "2026-04-26T00:30:00Z"}},
		{source: "Quartz", meaning: "last Sunday 01:30 London in October fires once, at the first 01:30", expr: "0 30 1 ? * SUNL", tz: "Europe/London", after: "2026-09-28T00:00:00Z",
			want: []string{"2026-10-25T00:30:00Z", "2026-11-29T01:30:00Z"}},
		{source: "EventBridge", meaning: "Sundays 02:30 New York across spring forward", expr: "cron(30 2 ? * SUN *)", tz: "America/New_York", after: "2026-03-01T00:00:00Z",
			want: []string{"2026-03-01T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-15T06:30:00Z"}},
		{source: "EventBridge", meaning: "first Sunday 01:30 New York across fall back fires once", expr: "cron(30 1 ? * 1#1 *)", tz: "America/New_York", after: "2026-10-01T00:00:00Z",
			want: []string{"2026-10-04T05:30:00Z", "2026-11-01T05:30:00Z", "2026-12-06T06:30:00Z"}},
		{source: "Quartz", meaning: "first Sunday 02:30 Sydney: October gap, April repeat", expr: "0 30 2 ? * 1#1", tz: "Australia/Sydney", after: "2026-03-01T00:00:00Z",
			want: []string{"2026-04-04T15:30:00Z", "2026-05-02T16:30:00Z", "2026-06-06T16:30:00Z"}}, // 1 March 02:30 +11 was 28 Feb 15:30Z
		{source: "Quartz", meaning: "first Sunday 02:30 Sydney in October fires at 03:00 AEDT", expr: "0 30 2 ? * 1#1", tz: "Australia/Sydney", after: "2026-09-10T00:00:00Z",
			want: []string{"2026-10-03T16:00:00Z", "2026-10-31T15:30:00Z"}}, // 1 Nov 02:30 +11
		{source: "Quartz", meaning: "last day 23:30 in Sao Paulo (no DST since 2019)", expr: "0 30 23 L * ?", tz: "America/Sao_Paulo", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T02:30:00Z", "2026-02-01T02:30:00Z"}}, // 31 Dec 2025 23:30 -03
	}
	for _, tt := range tests {
		t.Run(tt.source+": "+tt.meaning, func(t *testing.T) {
			t.Parallel()

			s := mustParse(t, KindCron, tt.expr, tt.tz)
			got := Preview(s, instant(t, tt.after), len(tt.want)+1)
			if tt.done {
				requireTimes(t, instants(t, tt.want...), got)
				return
			}
			require.Len(t, got, len(tt.want)+1)
			requireTimes(t, instants(t, tt.want...), got[:len(tt.want)])
		})
	}
}

package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
)

// An alarm channel for the imported alarm e-mails; nothing is sent to it.
const importAlarms = `
alarms:
  channels:
    ops-mail:
      type: email
      host: 127.0.0.1
      port: 2525
      from: ringjob@example.com
      to: [ops@example.com]
`

// oracleFires are the next n fires after `after` of a schedule that fires
// at hh:mm on the days day() accepts, in loc: computed day by day with the
// time package alone, so the check does not lean on the code it checks.
func oracleFires(after time.Time, loc *time.Location, hh, mm, n int, day func(time.Time) bool) []string {
	var out []string
	d := after.In(loc)
	d = time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, loc)
	for i := 0; len(out) < n && i < 800; i++ {
		t := time.Date(d.Year(), d.Month(), d.Day()+i, hh, mm, 0, 0, loc)
		if t.After(after) && day(t) {
			out = append(out, t.UTC().Format(time.RFC3339))
		}
	}
	return out
}

// Quartz's day rules, as XXL-JOB reads them.
var (
	lastDayOfMonth = func(t time.Time) bool { return t.AddDate(0, 0, 1).Month() != t.Month() }
	weekday        = func(t time.Time) bool { return t.Weekday() != time.Saturday && t.Weekday() != time.Sunday }
	thirdFriday    = func(t time.Time) bool { return t.Weekday() == time.Friday && t.Day() >= 15 && t.Day() <= 21 }
	every          = func(time.Time) bool { return true }
	// 15W: the weekday nearest the 15th (Friday the 14th for a Saturday,
	// Monday the 16th for a Sunday).
	nearest15th = func(t time.Time) bool {
		f := time.Date(t.Year(), t.Month(), 15, 0, 0, 0, 0, t.Location())
		switch f.Weekday() {
		case time.Saturday:
			return t.Day() == 14
		case time.Sunday:
			return t.Day() == 16
		}
		return t.Day() == 15
	}
)

func nextFires(t *testing.T, s *server, ref string, n int) []string {
	t.Helper()
	code, job := getJob(t, s, ref)
	require.Equal(t, 200, code, "job %s: %v", ref, job)
	code, body := s.call("GET", fmt.Sprintf("/api/v1/jobs/%d/next-fires?n=%d", num(job["id"]), n), nil, nil)
	require.Equal(t, 200, code, "%v", body)
	var out []string
	for _, it := range body["items"].([]any) {
		ts, err := time.Parse(time.RFC3339, it.(string))
		require.NoError(t, err)
		out = append(out, ts.UTC().Format(time.RFC3339))
	}
	return out
}

// TestImport imports an XXL-JOB database (MariaDB, from XXL-JOB's 2.4 and
// 3.5 schemas) and EventBridge get-schedule JSON with the real binary,
// applies the files to a real server, and checks what the server holds.
func TestImport(t *testing.T) {
	t.Parallel()
	s := startServerWith(t, mysqlURL(t, dbtest.MySQL(t)), "rj_import_admin_token_0123456789abcdef", freePort(t), importAlarms)
	work := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + filepath.Join(work, "config"), "RINGJOB_URL=" + s.base, "RINGJOB_TOKEN=" + s.token}
	testdata := filepath.Join("..", "..", "client", "importer", "testdata")

	xxlDSN := func(t *testing.T, schema string) string {
		dsn := dbtest.MySQL(t)
		db, err := sql.Open("mysql", dsn)
		require.NoError(t, err)
		defer db.Close()
		ddl, err := os.ReadFile(filepath.Join(testdata, schema))
		require.NoError(t, err)
		_, err = db.Exec(string(ddl))
		require.NoError(t, err)
		return dsn
	}

	t.Run("xxl: the files apply cleanly and fire on XXL-JOB's days", func(t *testing.T) {
		dir := filepath.Join(work, "xxl") + "/"
		r := jac(t, env, "import", "xxl", "--dsn", xxlDSN(t, "xxl_2_4.sql"), "--time-zone", "Asia/Shanghai",
			"--alarm-channel", "ops-mail", "--enabled", "-o", dir)
		require.Equal(t, 0, r.code, r.stderr)
		require.Empty(t, r.stdout)
		for _, want := range []string{"OBJECT", "report-exec/cleanup script", "glue_source", "not carried over",
			"Imported 2 group(s) and 11 job(s) from XXL-JOB", "Wrote 2 file(s)"} {
			require.Contains(t, r.stderr, want)
		}
		yaml, err := os.ReadFile(filepath.Join(dir, "report-exec.yaml"))
		require.NoError(t, err)
		require.Contains(t, string(yaml), "# not carried over: glue_source GLUE_SHELL, 3 line(s)")

		r = jac(t, env, "apply", "-f", dir)
		require.Equal(t, 0, r.code, r.stdout+r.stderr)
		require.Contains(t, r.stdout, "Plan: 13 to create, 0 to update, 0 to delete, 0 unchanged.")
		r = jac(t, env, "diff", "-f", dir)
		require.Equal(t, 0, r.code, "applying the import again changes nothing: %s", r.stdout)

		code, job := getJob(t, s, "billing-executor/月末结账")
		require.Equal(t, 200, code)
		require.Equal(t, "fire_once_now", job["misfire_policy"])
		require.Equal(t, []any{"ops-mail"}, job["alarm_channels"])
		require.Equal(t, true, job["enabled"])
		require.Len(t, job["child_job_ids"], 1)
		code, job = getJob(t, s, "report-exec/cleanup script")
		require.Equal(t, 200, code)
		require.Equal(t, false, job["enabled"], "its GLUE code is not here")

		shanghai, err := time.LoadLocation("Asia/Shanghai")
		require.NoError(t, err)
		now := time.Now().Add(-time.Second)
		for ref, want := range map[string][]string{
			"billing-executor/月末结账":             oracleFires(now, shanghai, 2, 30, 3, lastDayOfMonth),
			"billing-executor/notify finance":   oracleFires(now, shanghai, 9, 0, 5, weekday),
			"billing-executor/mid-month payout": oracleFires(now, shanghai, 12, 0, 3, nearest15th),
			"report-exec/cleanup script":        oracleFires(now, shanghai, 10, 15, 3, thirdFriday),
			"report-exec/-daily- sync":          oracleFires(now, shanghai, 0, 0, 3, every),
		} {
			require.Equal(t, want, nextFires(t, s, ref, len(want)), ref)
		}
		code, job = getJob(t, s, "billing-executor/月末结账")
		require.Equal(t, 200, code)
		next, err := time.Parse(time.RFC3339, job["next_fire_at"].(string))
		require.NoError(t, err)
		require.Equal(t, oracleFires(now, shanghai, 2, 30, 1, lastDayOfMonth)[0], next.UTC().Format(time.RFC3339), "the running job's next fire")
		fr := nextFires(t, s, "report-exec/weekly report", 2)
		a, _ := time.Parse(time.RFC3339, fr[0])
		b, _ := time.Parse(time.RFC3339, fr[1])
		require.Equal(t, time.Hour, b.Sub(a), "FIX_RATE 3600")
	})

	t.Run("xxl 3.5: the same jobs, groups on the 3.5 protocol", func(t *testing.T) {
		file := filepath.Join(work, "xxl35.yaml")
		r := jac(t, env, "import", "xxl", "--dsn", xxlDSN(t, "xxl_3_5.sql"), "--time-zone", "Asia/Shanghai",
			"--alarm-channel", "ops-mail", "--enabled", "-o", file)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stderr, "access_token")
		r = jac(t, env, "diff", "-f", file)
		require.Equal(t, 1, r.code, r.stdout+r.stderr)
		require.Contains(t, r.stdout, "Plan: 0 to create, 2 to update, 0 to delete, 11 unchanged.")
		require.Contains(t, r.stdout, `protocol: "" -> "3.5"`)
		r = jac(t, env, "apply", "-f", file)
		require.Equal(t, 0, r.code, r.stdout+r.stderr)
	})

	t.Run("eventbridge: window, dates, retries and dead-letter queue survive apply", func(t *testing.T) {
		file := filepath.Join(work, "eb.yaml")
		r := jac(t, env, "import", "eventbridge", filepath.Join(testdata, "eb_get_schedule.json"), filepath.Join(testdata, "eb_schedules.json"), "-o", file)
		require.Equal(t, 0, r.code, r.stderr)
		for _, want := range []string{"(schedule default/nightly-batch)", "Target.Arn", "Imported 2 group(s) and 3 job(s) from EventBridge Scheduler",
			"2 job(s) were running in EventBridge Scheduler and are imported stopped"} {
			require.Contains(t, r.stderr, want)
		}
		r = jac(t, env, "apply", "-f", file)
		require.Equal(t, 0, r.code, r.stdout+r.stderr)
		require.Contains(t, r.stdout, "Plan: 5 to create")
		r = jac(t, env, "diff", "-f", file)
		require.Equal(t, 0, r.code, r.stdout)

		code, job := getJob(t, s, "billing-close/billing.close-books")
		require.Equal(t, 200, code)
		for k, v := range map[string]any{"schedule_type": "cron", "schedule_conf": "cron(0 18 ? * MON-FRI *)", "time_zone": "Europe/Berlin",
			"active_from": "2025-12-31T23:00:00Z", "active_until": "2027-12-31T23:00:00Z", "flexible_window_min": 15.0,
			"max_event_age_sec": 3600.0, "retry_count": 5.0, "retry_backoff": "exponential",
			"failure_destination": "arn:aws:sqs:eu-west-1:111122223333:billing-dlq", "enabled": false} {
			require.Equal(t, v, job[k], k)
		}
		code, job = getJob(t, s, "report-gen/quarter-report")
		require.Equal(t, 200, code)
		require.Equal(t, "delete", job["after_completion"])
		require.Equal(t, `{"quarter":"Q1"}`, job["params"])

		// Weekdays at 18:00 Berlin, each moved by the job's offset within
		// its 15-minute window.
		berlin, err := time.LoadLocation("Europe/Berlin")
		require.NoError(t, err)
		for _, f := range nextFires(t, s, "billing-close/billing.close-books", 5) {
			ts, err := time.Parse(time.RFC3339, f)
			require.NoError(t, err)
			local := ts.In(berlin)
			require.True(t, weekday(local), f)
			require.Equal(t, 18, local.Hour(), f)
			require.Less(t, local.Minute(), 15, f)
		}
	})

	t.Run("eventbridge from stdin", func(t *testing.T) {
		in, err := os.ReadFile(filepath.Join(testdata, "eb_get_schedule.json"))
		require.NoError(t, err)
		cmd := exec.Command(ringjobBinary(t), "import", "eventbridge", "--enabled")
		cmd.Env = cliEnv(env)
		cmd.Stdin = bytes.NewReader(in)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		require.NoError(t, cmd.Run(), errb.String())
		require.Contains(t, out.String(), "name: close-books")
		require.Contains(t, out.String(), "enabled: true")
		require.NotContains(t, errb.String(), "were running")
	})

	t.Run("bad input is refused by name and writes nothing", func(t *testing.T) {
		out := filepath.Join(work, "nothing.yaml")
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"import", "xxl", "-o", out}, "--dsn is required"},
			{[]string{"import", "xxl", "--dsn", "root@tcp(127.0.0.1:3306)/", "-o", out}, "--dsn names no database"},
			{[]string{"import", "xxl", "--dsn", dbtest.MySQL(t), "-o", out}, "the database has no table xxl_job_group"},
			{[]string{"import", "xxl", "--dsn", "root@tcp(127.0.0.1:3306)/x", "--time-zone", "Mars/Olympus", "-o", out}, "--time-zone"},
			{[]string{"import", "eventbridge", filepath.Join(work, "missing.json"), "-o", out}, "missing.json"},
		} {
			r := jac(t, env, tc.args...)
			require.NotEqual(t, 0, r.code, tc.args)
			require.Contains(t, r.stderr, tc.want, tc.args)
			require.NoFileExists(t, out)
		}
		r := jac(t, env, "import")
		require.Equal(t, 2, r.code)
		require.True(t, strings.Contains(r.stderr, "xxl or eventbridge"), r.stderr)
	})
}

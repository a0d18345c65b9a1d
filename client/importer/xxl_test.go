package importer

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/client/jobspec"
	"github.com/ringjob/ringjob/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// xxlDB is a new MariaDB database holding an XXL-JOB admin's tables, made
// from a testdata schema file.
func xxlDB(t *testing.T, schemaFile string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dbtest.MySQL(t))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	ddl, err := os.ReadFile(schemaFile)
	require.NoError(t, err)
	_, err = db.Exec(string(ddl))
	require.NoError(t, err)
	return db
}

func jobOf(t *testing.T, r *Result, ref string) client.ApplyJob {
	t.Helper()
	for _, j := range r.Set.Jobs {
		if j.Group+"/"+j.Name == ref {
			return j
		}
	}
	t.Fatalf("no job %s in %v", ref, r.Set.Jobs)
	return client.ApplyJob{}
}

func groupOf(t *testing.T, r *Result, app string) client.ApplyGroup {
	t.Helper()
	for _, g := range r.Set.Groups {
		if g.AppName == app {
			return g
		}
	}
	t.Fatalf("no group %s", app)
	return client.ApplyGroup{}
}

// noteOf finds the note on ref's field; ref "" matches notes of objects not
// imported, by source.
func noteOf(t *testing.T, r *Result, ref, field string) Note {
	t.Helper()
	for _, n := range r.Notes {
		if n.Ref == ref && n.Field == field {
			return n
		}
	}
	t.Fatalf("no note on %s %s in %+v", ref, field, r.Notes)
	return Note{}
}

func TestReadXXL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ version, file string }{{"2.4", "testdata/xxl_2_4.sql"}, {"3.5", "testdata/xxl_3_5.sql"}} {
		t.Run("schema "+tc.version, func(t *testing.T) {
			t.Parallel()
			db := xxlDB(t, tc.file)
			ctx := context.Background()
			r, err := ReadXXL(ctx, db, XXLOptions{TimeZone: "Asia/Shanghai"})
			require.NoError(t, err)

			t.Run("groups keep their addresses and registration mode", func(t *testing.T) {
				billing := groupOf(t, r, "billing-executor")
				require.Equal(t, "Billing", billing.Title)
				require.Equal(t, []string{"http://127.0.0.1:9991/", "http://127.0.0.1:9992/"}, billing.Members)
				require.False(t, *billing.AcceptRegistrations, "a manual group takes no registrations")
				reports := groupOf(t, r, "report-exec")
				require.Equal(t, "报表执行器", reports.Title)
				require.Empty(t, reports.Members, "an auto group's address list is only who was registered")
				require.True(t, *reports.AcceptRegistrations)
				n := noteOf(t, r, "report-exec", "app_name")
				require.Equal(t, Changed, n.Kind)
				require.Contains(t, n.Why, "xxl.job.executor.appname to report-exec")
				if tc.version == "3.5" {
					require.Equal(t, "3.5", billing.Protocol)
					require.Equal(t, NotCarried, noteOf(t, r, "billing-executor", "access_token").Kind)
					require.NotContains(t, noteOf(t, r, "billing-executor", "access_token").Value, "billing-secret-token", "a secret is never shown")
				} else {
					require.Empty(t, billing.Protocol)
				}
			})

			t.Run("every field of a job is carried over", func(t *testing.T) {
				j := jobOf(t, r, "billing-executor/月末结账")
				require.Equal(t, "cron", j.ScheduleType)
				require.Equal(t, "0 30 2 L * ?", j.ScheduleConf)
				require.Equal(t, "Asia/Shanghai", j.TimeZone)
				require.Equal(t, "fire_once_now", j.MisfirePolicy)
				require.Equal(t, "closeBooksHandler", j.Handler)
				require.Equal(t, `{"shards":4}`, j.Params)
				require.Empty(t, j.RouteStrategy, "FIRST is the default")
				require.Equal(t, 600, j.TimeoutSec)
				require.Equal(t, 2, j.RetryCount)
				require.Equal(t, []string{"billing-executor/notify finance"}, j.Children)
				require.False(t, j.Enabled, "imported stopped without --enabled")
				require.Equal(t, NotCarried, noteOf(t, r, "billing-executor/月末结账", "child_jobid").Kind)
				mail := noteOf(t, r, "billing-executor/月末结账", "alarm_email")
				require.Equal(t, "ops@example.com,finance@example.com", mail.Value)
				require.Contains(t, mail.Why, "--alarm-channel")

				n := jobOf(t, r, "billing-executor/notify finance")
				require.Equal(t, "round", n.RouteStrategy)
				require.Equal(t, "DISCARD_LATER", n.BlockStrategy)
				require.Equal(t, []string{"report-exec/weekly report"}, n.Children, "children in other groups by app_name/name")

				w := jobOf(t, r, "report-exec/weekly report")
				require.Equal(t, "fixed_rate", w.ScheduleType)
				require.Equal(t, "3600", w.ScheduleConf)
				require.Equal(t, "busyover", w.RouteStrategy)
				require.Equal(t, "COVER_EARLY", w.BlockStrategy)
				require.Equal(t, "week=last", w.Params)
				require.Equal(t, 86400, w.TimeoutSec)
				require.Equal(t, 10, w.RetryCount)
				require.Equal(t, Changed, noteOf(t, r, "report-exec/weekly report", "executor_timeout").Kind)
				require.Equal(t, Changed, noteOf(t, r, "report-exec/weekly report", "executor_fail_retry_count").Kind)

				for ref, route := range map[string]string{"report-exec/cleanup script": "lfu", "report-exec/-daily- sync": "consistent_hash",
					"report-exec/lru job": "lru", "billing-executor/random job": "random", "billing-executor/last job": "last",
					"billing-executor/failover job": "failover", "billing-executor/notify finance #5": "sharding"} {
					require.Equal(t, route, jobOf(t, r, ref).RouteStrategy, ref)
				}
				d := jobOf(t, r, "report-exec/-daily- sync")
				require.Equal(t, "0 0 0 * * ? *", d.ScheduleConf)
				require.Equal(t, []string{"billing-executor/月末结账"}, d.Children)
				require.Equal(t, "/daily/ sync", d.Description, "the original name stays as the description")
			})

			t.Run("what cannot be carried over is listed", func(t *testing.T) {
				glue := noteOf(t, r, "report-exec/cleanup script", "glue_source")
				require.Equal(t, NotCarried, glue.Kind)
				require.Equal(t, "GLUE_SHELL, 3 line(s)", glue.Value)
				require.Equal(t, "--dry-run", jobOf(t, r, "report-exec/cleanup script").Params)
				require.Equal(t, "GLUE_GROOVY, 1 line(s)", noteOf(t, r, "billing-executor/failover job", "glue_source").Value)

				shard := jobOf(t, r, "billing-executor/notify finance #5")
				require.Equal(t, 2, shard.ShardCount, "a broadcast over a manual group fans out to its two addresses")
				require.Empty(t, shard.ScheduleType)
				require.Equal(t, Changed, noteOf(t, r, "billing-executor/notify finance #5", "job_desc").Kind)
				require.Contains(t, noteOf(t, r, "billing-executor/notify finance #5", "child_jobid").Why, "the job itself")

				for _, f := range []string{"misfire_strategy", "executor_route_strategy", "executor_block_strategy"} {
					require.Equal(t, NotCarried, noteOf(t, r, "billing-executor/mid-month payout", f).Kind, f)
				}
				p := jobOf(t, r, "billing-executor/mid-month payout")
				require.Empty(t, p.RouteStrategy+p.BlockStrategy+p.MisfirePolicy, "unknown strategies take the defaults")
				require.Equal(t, "0 0 12 15W * ?", p.ScheduleConf)

				require.Contains(t, noteOf(t, r, "", "job_group").Source, "xxl_job_info 7")
				require.Contains(t, noteOf(t, r, "report-exec/lru job", "schedule_type").Value, "FIX_DELAY")
				require.Empty(t, jobOf(t, r, "report-exec/lru job").ScheduleType)
				require.Len(t, r.Set.Jobs, 11, "every job but the orphan")
				require.Equal(t, 5, r.Running)

				var table bytes.Buffer
				require.NoError(t, r.WriteTable(&table))
				for _, want := range []string{"OBJECT", "WHAT HAPPENED", "report-exec/cleanup script", "glue_source",
					"(xxl_job_info 7 orphan)", "Imported 2 group(s) and 11 job(s) from XXL-JOB", "5 job(s) were running"} {
					require.Contains(t, table.String(), want)
				}
			})

			t.Run("the file reads back as written, notes as comments", func(t *testing.T) {
				b, err := r.Marshal()
				require.NoError(t, err)
				text := string(b)
				require.Contains(t, text, "# not carried over: glue_source GLUE_SHELL, 3 line(s): Ringjob keeps no code")
				require.Contains(t, text, "# from xxl_job_info 1, author zhang; running in XXL-JOB")
				require.Contains(t, text, "#   xxl_job_info 7 orphan: not carried over: job_group 42")
				set, err := jobspec.Parse("xxl.yaml", b)
				require.NoError(t, err)
				require.Equal(t, r.Set.Groups, set.Groups)
				require.ElementsMatch(t, r.Set.Jobs, set.Jobs)
			})

			t.Run("--enabled keeps running jobs running when they can run", func(t *testing.T) {
				r, err := ReadXXL(ctx, db, XXLOptions{TimeZone: "Asia/Shanghai", KeepEnabled: true, AlarmChannel: "ops-mail"})
				require.NoError(t, err)
				require.True(t, jobOf(t, r, "billing-executor/月末结账").Enabled)
				require.True(t, jobOf(t, r, "report-exec/weekly report").Enabled)
				require.False(t, jobOf(t, r, "billing-executor/notify finance").Enabled, "stopped in XXL-JOB")
				require.False(t, jobOf(t, r, "report-exec/cleanup script").Enabled, "GLUE code is not here to run")
				require.False(t, jobOf(t, r, "billing-executor/notify finance #5").Enabled, "no schedule")
				require.Equal(t, Changed, noteOf(t, r, "billing-executor/notify finance #5", "trigger_status").Kind)
				require.Equal(t, []string{"ops-mail"}, jobOf(t, r, "billing-executor/月末结账").AlarmChannels)
				for _, n := range r.Notes {
					require.NotEqual(t, "alarm_email", n.Field, "mapped to the channel")
				}
				require.Zero(t, r.Running)
			})
		})
	}
}

func TestReadXXLOldSchemaAndBadInput(t *testing.T) {
	t.Parallel()
	t.Run("2.0-2.2: job_cron, no misfire strategy", func(t *testing.T) {
		t.Parallel()
		db, err := sql.Open("mysql", dbtest.MySQL(t))
		require.NoError(t, err)
		defer db.Close()
		_, err = db.Exec(`CREATE TABLE xxl_job_group (id INT PRIMARY KEY, app_name VARCHAR(64) NOT NULL, title VARCHAR(12) NOT NULL,
			address_type TINYINT NOT NULL DEFAULT 0, address_list VARCHAR(512));
		CREATE TABLE xxl_job_info (id INT PRIMARY KEY, job_group INT NOT NULL, job_cron VARCHAR(128) NOT NULL, job_desc VARCHAR(255) NOT NULL,
			author VARCHAR(64), alarm_email VARCHAR(255), executor_route_strategy VARCHAR(50), executor_handler VARCHAR(255),
			executor_param VARCHAR(512), executor_block_strategy VARCHAR(50), executor_timeout INT NOT NULL DEFAULT 0,
			executor_fail_retry_count INT NOT NULL DEFAULT 0, glue_type VARCHAR(50) NOT NULL, glue_source MEDIUMTEXT,
			child_jobid VARCHAR(255), trigger_status TINYINT NOT NULL DEFAULT 0);
		INSERT INTO xxl_job_group VALUES (1, 'xxl-job-executor-sample', 'sample', 0, NULL);
		INSERT INTO xxl_job_info VALUES (1, 1, '0 0 0 * * ? *', 'demo', 'XXL', '', 'FIRST', 'demoJobHandler', '', 'SERIAL_EXECUTION', 0, 0, 'BEAN', '', '', 0);`)
		require.NoError(t, err)
		r, err := ReadXXL(context.Background(), db, XXLOptions{})
		require.NoError(t, err)
		j := jobOf(t, r, "xxl-job-executor-sample/demo")
		require.Equal(t, "cron", j.ScheduleType)
		require.Equal(t, "0 0 0 * * ? *", j.ScheduleConf)
		require.Empty(t, j.TimeZone, "UTC")
		require.Empty(t, r.Notes)
	})

	t.Run("a database without XXL-JOB's tables is refused by name", func(t *testing.T) {
		t.Parallel()
		db, err := sql.Open("mysql", dbtest.MySQL(t))
		require.NoError(t, err)
		defer db.Close()
		_, err = ReadXXL(context.Background(), db, XXLOptions{})
		require.ErrorContains(t, err, "the database has no table xxl_job_group")
	})

	t.Run("a wrong time zone names the flag", func(t *testing.T) {
		t.Parallel()
		_, err := ReadXXL(context.Background(), nil, XXLOptions{TimeZone: "Mars/Olympus"})
		require.ErrorContains(t, err, "--time-zone")
	})
}

func TestNames(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"Report_Exec": "report-exec", "xxl-job-executor-sample": "xxl-job-executor-sample",
		"app": "app-app", "9lives": "app-9lives", "支付": "appx", "A.B C": "a-b-c"} {
		require.Equal(t, want, appName(in), in)
	}
	require.Equal(t, "a-b b", jobName(" a/b\tb "))
	require.Equal(t, strings.Repeat("x", 255), jobName(strings.Repeat("x", 300)))
}

package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

func printTable(out io.Writer, r *result, ds driverStats, perSecond bool) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	from, _ := time.Parse(time.RFC3339, r.IntervalFrom)
	fmt.Fprintf(w, "ringjob bench\t%d every-second jobs, %d partition(s), fast pool %d workers / %d queue, run %.0fs\n",
		r.Jobs, r.Partitions, r.PoolWorkers, r.PoolQueue, r.DurationS)
	fmt.Fprintf(w, "measured fire times\t[%s, %s) = %d s\n", from.Format("15:04:05"), from.Add(time.Duration(r.IntervalS)*time.Second).Format("15:04:05"), r.IntervalS)
	fmt.Fprintf(w, "fires expected\t%d\n", r.Expected)
	fmt.Fprintf(w, "dispatched\t%d by the driver, %d in the runs table\n", r.DispatchedDrv, r.DispatchedDB)
	fmt.Fprintf(w, "duplicates\t%d by the driver (whole run), %d in the runs table\n", r.Duplicates, r.DuplicatesDB)
	fmt.Fprintf(w, "missing\t%d\n", r.Missing)
	fmt.Fprintf(w, "triggers/s\t%.0f (driver calls in the interval / s)\n", r.TriggersPerS)
	fmt.Fprintf(w, "lag claim p50/p99/max\t%.0f / %.0f / %.0f ms (runs.dispatched_ms - scheduled_ms)\n", r.LagClaim.P50, r.LagClaim.P99, r.LagClaim.Max)
	fmt.Fprintf(w, "lag driver p50/p99/max\t%.1f / %.1f / %.1f ms (driver's wall clock - scheduled time)\n", r.LagDriver.P50, r.LagDriver.P99, r.LagDriver.Max)
	fmt.Fprintf(w, "late runs / deferrals\t%d late (claimed > 1 s after their time), %.0f deferred by a full pool\n", r.Late, r.Backpressure)
	fmt.Fprintf(w, "cpu harness\t%.2f cores (%.0f%% of %d)\n", r.CPUSelfCores, 100*r.CPUSelfCores/float64(r.Machine.Cores), r.Machine.Cores)
	if r.CPUDBCores >= 0 {
		fmt.Fprintf(w, "cpu %s\t%.2f cores (%.0f%% of %d)\n", r.Machine.DBServer, r.CPUDBCores, 100*r.CPUDBCores/float64(r.Machine.Cores), r.Machine.Cores)
	}
	fmt.Fprintf(w, "cpu machine busy\t%.2f cores (everything on the host); other processes %.2f cores\n", r.CPUHostCores, r.CPUOtherCores)
	if r.CPUOtherCores > 0.25 {
		fmt.Fprintf(w, "WARNING\tother processes used %.2f of %d cores during the interval: these figures are disturbed; run again\n", r.CPUOtherCores, r.Machine.Cores)
	}
	fmt.Fprintf(w, "peak RSS\t%.0f MiB\n", r.PeakRSSMiB)
	fmt.Fprintf(w, "graceful stop\t%d ms\n", r.StopMs)
	if d := r.DBPerSec; len(d) > 0 && r.Machine.DBServer == "postgres" {
		fmt.Fprintf(w, "db transactions/s\t%.0f commits, %.0f rollbacks\n", d["xact_commit"], d["xact_rollback"])
		fmt.Fprintf(w, "db rows/s\t%.0f inserted, %.0f updated, %.0f deleted, %.0f fetched by index, %.0f returned by scans\n",
			d["tup_inserted"], d["tup_updated"], d["tup_deleted"], d["tup_fetched"], d["tup_returned"])
		if q, ok := d["Questions"]; ok {
			fmt.Fprintf(w, "db statements/s\t%.0f (pg_stat_statements)\n", q)
		} else {
			fmt.Fprintf(w, "\t(the benchmark database's counters; PostgreSQL counts no statements without pg_stat_statements)\n")
		}
	} else if len(r.DBPerSec) > 0 {
		d := r.DBPerSec
		perStmt := func(rows, stmts float64) string {
			if stmts == 0 {
				return "-"
			}
			return fmt.Sprintf("%.0f", rows/stmts)
		}
		fmt.Fprintf(w, "db statements/s\t%.0f questions: %.0f select, %.0f insert, %.0f update, %.0f commit\n",
			d["Questions"], d["Com_select"], d["Com_insert"], d["Com_update"], d["Com_commit"])
		fmt.Fprintf(w, "db rows/s\t%.0f written (%s per INSERT), %.0f updated (%s per UPDATE), %.0f read by key, %.0f by range\n",
			d["Handler_write"], perStmt(d["Handler_write"], d["Com_insert"]),
			d["Handler_update"], perStmt(d["Handler_update"], d["Com_update"]), d["Handler_read_key"], d["Handler_read_next"])
		fmt.Fprintf(w, "db fsyncs/s\t%.0f data, %.0f log writes (row lock waits %.0f/s)\n", d["Innodb_data_fsyncs"], d["Innodb_log_writes"], d["Innodb_row_lock_waits"])
		fmt.Fprintf(w, "\t(server-wide counters: other clients of the server count too)\n")
	}
	var states []string
	for s, n := range r.RunStates {
		states = append(states, fmt.Sprintf("%s=%d", s, n))
	}
	sort.Strings(states)
	fmt.Fprintf(w, "runs by state at the end\t%s\n", strings.Join(states, " "))
	if ds.OtherFires > 0 {
		fmt.Fprintf(w, "fires off the table\t%d (%d doubled)\n", ds.OtherFires, ds.OtherDouble)
	}
	w.Flush()
	if perSecond && len(ds.PerSecond) > 0 {
		fmt.Fprintln(out, "driver lag by fire second (p50/max ms):")
		for i, sl := range ds.PerSecond {
			fmt.Fprintf(out, "  %s %5.0f/%-5.0f", time.Unix(sl.Sec, 0).UTC().Format("15:04:05"), sl.P50, sl.Max)
			if i%4 == 3 {
				fmt.Fprintln(out)
			}
		}
		fmt.Fprintln(out)
	}
	if len(r.Statements) > 0 {
		fmt.Fprintln(out, "statements in the measured interval (slow log), by total time:")
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "count\ttotal ms\tavg ms\tmax ms\trows aff/stmt\trows exam/stmt\trows sent/stmt\t statement")
		for i, s := range r.Statements {
			if i == 12 {
				break
			}
			n := float64(s.Count)
			fmt.Fprintf(tw, "%d\t%.0f\t%.2f\t%.1f\t%.0f\t%.0f\t%.0f\t %s\n", s.Count, s.TotalMs, s.TotalMs/n, s.MaxMs,
				float64(s.RowsAffected)/n, float64(s.RowsExamined)/n, float64(s.RowsSent)/n, s.Shape)
		}
		tw.Flush()
	}
}

package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

const tableHeader = "| target | jobs | fires/s | expected | received | missing | dup | lag p50 / p99 / max (ms) | callback→ack p50 / p99 / max (ms) | result→ack > 1 s | non-final | server CPU (cores, ms/fire) | database CPU | targets CPU | other CPU | statements / fire | server peak RSS |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"

func tableRow(r *rowResult) string {
	ack, over := "–", "–"
	if strings.HasPrefix(r.Target, "xxl-") {
		ack = fmt.Sprintf("%.1f / %.0f / %.0f", r.CallbackAck.P50, r.CallbackAck.P99, r.CallbackAck.Max)
		over = fmt.Sprintf("%d", r.AckOver1s)
		if r.Received > int64(r.ResultAck.N) {
			over += fmt.Sprintf(", %d never acked", r.Received-int64(r.ResultAck.N))
		}
		if r.CallbackFail > 0 {
			over += fmt.Sprintf(" (%d item sends refused or timed out)", r.CallbackFail)
		}
	}
	target := r.Target
	if r.DB == "postgres" {
		target += " (PostgreSQL)"
	}
	if r.PeriodS > 1 {
		target += fmt.Sprintf(", all in one second every %d s", r.PeriodS)
	}
	return fmt.Sprintf("| %s | %d | %.0f | %d | %d | %d | %d | %.1f / %.1f / %.1f | %s | %s | %d | %.2f, %.3f | %.2f | %.2f | %.2f | %.2f | %.0f MiB |\n",
		target, r.Jobs, r.FiresPerS, r.Expected, r.Received, r.Missing, r.Duplicates,
		r.Lag.P50, r.Lag.P99, r.Lag.Max, ack, over, r.NonFinal,
		r.CPUServer, r.ServerMsFire, r.CPUDB, r.CPUTargets, r.CPUOther, r.StmtsFire, r.ServerRSSMiB)
}

func printRow(w io.Writer, r *rowResult, header bool) {
	if header {
		fmt.Fprint(w, tableHeader)
	}
	fmt.Fprint(w, tableRow(r))
	d := r.DBPerFire
	if r.DB == "postgres" {
		fmt.Fprintf(os.Stderr, "   per fire: %.3f statements (pg_stat_statements), %.3f commits, %.3f rollbacks; rows: %.2f inserted, %.2f updated, %.2f fetched, %.2f returned; runs by state: %v\n",
			d["Questions"], d["xact_commit"], d["xact_rollback"], d["tup_inserted"], d["tup_updated"], d["tup_fetched"], d["tup_returned"], r.RunStates)
	} else {
		fmt.Fprintf(os.Stderr, "   per fire: %.2f select, %.2f insert, %.2f insert-select, %.2f update, %.2f commit, %.3f fsync; handler: %.2f update, %.2f write; runs by state: %v\n",
			d["Com_select"], d["Com_insert"], d["Com_insert_select"], d["Com_update"], d["Com_commit"], d["Innodb_data_fsyncs"],
			d["Handler_update"], d["Handler_write"], r.RunStates)
	}
	if len(r.BurstLags) > 0 {
		fmt.Fprint(os.Stderr, "   bursts, lag p50 / p99 / max (ms):")
		for _, b := range r.BurstLags {
			fmt.Fprintf(os.Stderr, " %.0f/%.0f/%.0f", b.P50, b.P99, b.Max)
		}
		fmt.Fprintln(os.Stderr)
	}
	if r.CPUOther > 0.25 {
		fmt.Fprintf(os.Stderr, "   WARNING: other processes used %.2f cores during the interval: the machine was busy\n", r.CPUOther)
	}
}

func appendJSON(path string, r any) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	b, _ := json.Marshal(r)
	_, err = f.Write(append(b, '\n'))
	return err
}

const (
	docBegin = "<!-- bench-e2e:begin -->"
	docEnd   = "<!-- bench-e2e:end -->"
)

// writeDoc replaces the text between the markers of path with the table (or
// appends a section with the markers when the file has none).
func writeDoc(path string, rows []*rowResult, m machine, o options) error {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var sb strings.Builder
	sb.WriteString(docBegin + "\n")
	fmt.Fprintf(&sb, "Written by `go run ./bench/e2e` on %s: %d-core %s, kernel %s, %s, MariaDB %s (innodb_flush_log_at_trx_commit=%s); %s measured per row after a %s warm-up.",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), m.Cores, cmp.Or(m.CPU, "machine"), m.Kernel, m.GoVersion, m.DBVersion, m.DBFlush, o.duration, o.warmup)
	if o.label != "" {
		fmt.Fprintf(&sb, " Label: %s.", o.label)
	}
	sb.WriteString("\n\n")
	sb.WriteString(tableHeader)
	for _, r := range rows {
		sb.WriteString(tableRow(r))
	}
	sb.WriteString(docEnd)
	text := string(b)
	i, j := strings.Index(text, docBegin), strings.Index(text, docEnd)
	if i >= 0 && j > i {
		text = text[:i] + sb.String() + text[j+len(docEnd):]
	} else {
		text += "\n## End to end (`make bench-e2e`)\n\n" + sb.String() + "\n"
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

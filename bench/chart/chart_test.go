package main

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// e2eLine is a bench/e2e result line with the fields the charts read.
func e2eLine(label, target string, jobs, period int, p50, p99, maxLag, serverMs, dbCores float64) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return `{"label":"` + label + `","target":"` + target + `","jobs":` + strconv.Itoa(jobs) +
		`,"period_s":` + strconv.Itoa(period) + `,"interval_s":30,"fires_expected":` + strconv.Itoa(jobs*30/period) +
		`,"lag_ms":{"n":1,"p50":` + f(p50) + `,"p99":` + f(p99) + `,"max":` + f(maxLag) + `}` +
		`,"server_cpu_ms_per_fire":` + f(serverMs) + `,"cpu_db_cores":` + f(dbCores) + `,"cpu_targets_cores":0.1}`
}

// svgRow is what a chart shows of one result line.
type svgRow struct {
	name string
	bars map[string]float64 // width by series
}

// readSVG parses an SVG written by the chart and returns its rows in order.
func readSVG(t *testing.T, path string) []svgRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	var rows []svgRow
	inName := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch {
			case e.Name.Local == "g" && attr["class"] == "row":
				rows = append(rows, svgRow{bars: map[string]float64{}})
			case e.Name.Local == "text" && attr["class"] == "row-name":
				inName = true
			case e.Name.Local == "rect" && attr["class"] == "bar":
				w, err := strconv.ParseFloat(attr["width"], 64)
				if err != nil {
					t.Fatalf("bar width %q: %v", attr["width"], err)
				}
				rows[len(rows)-1].bars[attr["data-series"]] = w
			}
		case xml.CharData:
			if inName {
				rows[len(rows)-1].name += string(e)
			}
		case xml.EndElement:
			inName = false
		}
	}
	return rows
}

func writeLines(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "results.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestE2EChartsNameEveryRowAndDrawItsFigures(t *testing.T) {
	in := writeLines(t,
		e2eLine("abc1234", "xxl-batch", 5000, 1, 200, 400, 450, 0.09, 0.4),
		e2eLine("abc1234", "lambda", 1000, 1, 600, 2100, 3500, 0.34, 0.16),
		e2eLine("abc1234", "xxl-batch", 5000, 1, 190, 390, 410, 0.08, 0.4),
		e2eLine("abc1234", "xxl-batch", 1000, 10, 50, 110, 112, 0.21, 0.01),
	)
	dir := t.TempDir()
	written, err := run(in, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 2 {
		t.Fatalf("wrote %v, want the lag and the CPU chart", written)
	}

	lag := readSVG(t, filepath.Join(dir, "e2e-lag.svg"))
	byName := map[string]svgRow{}
	for _, r := range lag {
		byName[r.name] = r
	}
	for _, want := range []string{
		"lambda, 1,000 jobs (abc1234)",
		"xxl-batch, 5,000 jobs (abc1234), run 1",
		"xxl-batch, 5,000 jobs (abc1234), run 2",
		"xxl-batch, 1,000 jobs in one second every 10 s (abc1234)",
	} {
		if _, ok := byName[want]; !ok {
			t.Errorf("lag chart has no row %q; rows: %v", want, lag)
		}
	}
	if len(lag) != 4 {
		t.Errorf("lag chart has %d rows, want one per result line (4)", len(lag))
	}
	lambda, batch := byName["lambda, 1,000 jobs (abc1234)"], byName["xxl-batch, 5,000 jobs (abc1234), run 1"]
	if !(lambda.bars["p99"] > batch.bars["p99"] && batch.bars["p99"] > batch.bars["p50"]) {
		t.Errorf("p99 bars do not follow the figures: lambda %v, xxl-batch %v", lambda.bars, batch.bars)
	}
	// Lambda's p99 is 2,100 ms against 400: its bar is 5.25 times as long.
	if got := lambda.bars["p99"] / batch.bars["p99"]; got < 5.2 || got > 5.3 {
		t.Errorf("p99 bars in ratio %.2f, want 5.25", got)
	}

	cpu := readSVG(t, filepath.Join(dir, "e2e-cpu.svg"))
	if len(cpu) != 4 {
		t.Fatalf("CPU chart has %d rows, want 4", len(cpu))
	}
	for _, r := range cpu {
		for _, s := range []string{"server", "mariadbd", "target"} {
			if _, ok := r.bars[s]; !ok {
				t.Errorf("CPU row %q has no %s bar", r.name, s)
			}
		}
	}
}

func TestCoreChartDrawsDriverLag(t *testing.T) {
	in := writeLines(t,
		`{"label":"332a8df","jobs":10000,"lag_driver_ms":{"p50":88,"p99":178,"max":191},"lag_claim_ms":{"p50":1,"p99":2,"max":3}}`,
		`{"label":"d9ab8a5","jobs":1000,"lag_driver_ms":{"p50":12,"p99":19,"max":20}}`,
	)
	dir := t.TempDir()
	written, err := run(in, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 1 || filepath.Base(written[0]) != "core-lag.svg" {
		t.Fatalf("wrote %v, want core-lag.svg alone", written)
	}
	rows := readSVG(t, written[0])
	if len(rows) != 2 || rows[0].name != "1,000 jobs (d9ab8a5)" || rows[1].name != "10,000 jobs (332a8df)" {
		t.Fatalf("rows %v, want 1,000 then 10,000 jobs named with their labels", rows)
	}
	if rows[1].bars["p99"] <= rows[0].bars["p99"] {
		t.Errorf("178 ms p99 bar (%v) not longer than 19 ms (%v)", rows[1].bars["p99"], rows[0].bars["p99"])
	}
}

func TestBadResultLinesNameTheFieldAndWriteNothing(t *testing.T) {
	for _, tc := range []struct{ line, field string }{
		{`{"label":"x","target":"xxl-batch","jobs":10,"interval_s":30,"fires_expected":300,"server_cpu_ms_per_fire":0.1}`, "lag_ms"},
		{`{"label":"x","jobs":10,"lag_driver_ms":{"p50":1,"p99":2}}`, "lag_driver_ms"},
		{`{"label":"x","lag_driver_ms":{"p50":1,"p99":2,"max":3}}`, "jobs"},
		{`{"label":"x","target":"local","jobs":10,"lag_ms":{"p50":1,"p99":2,"max":3},"interval_s":30,"fires_expected":300}`, "server_cpu_ms_per_fire"},
		{`{"label":"x","jobs":`, "line 2"},
	} {
		in := writeLines(t, `{"label":"ok","jobs":10,"lag_driver_ms":{"p50":1,"p99":2,"max":3}}`, tc.line)
		dir := t.TempDir()
		_, err := run(in, dir)
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("line %s: error %v, want one naming %s", tc.line, err, tc.field)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("line %s: wrote %d files despite the error", tc.line, len(entries))
		}
	}
}

func TestMixedHarnessesAreRefused(t *testing.T) {
	in := writeLines(t,
		`{"label":"a","jobs":10,"lag_driver_ms":{"p50":1,"p99":2,"max":3}}`,
		e2eLine("b", "xxl-batch", 10, 1, 1, 2, 3, 0.1, 0.1),
	)
	if _, err := run(in, t.TempDir()); err == nil || !strings.Contains(err.Error(), "target") {
		t.Errorf("error %v, want one naming the field target", err)
	}
}

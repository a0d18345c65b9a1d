// Command chart draws the result lines of the benchmark harnesses as SVG bar
// charts for docs/benchmarks.md, one bar group per result line:
//
//	go run ./bench/chart -in docs/bench/e2e.jsonl -out docs/bench
//	go run ./bench/chart -in docs/bench/core.jsonl -out docs/bench
//
// bench/e2e lines (they name a target) give e2e-lag.svg, the lag p50 / p99 /
// max at the target per row, and e2e-cpu.svg, the CPU per fire of the
// server, mariadbd and the target processes per row. bench lines (the
// in-process scheduler core) give core-lag.svg, the driver's lag p50 / p99
// / max per run. The charts are drawn from the lines alone, so a new run of
// a harness with -out redraws them.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	in := flag.String("in", "", "JSON lines written by bench/e2e or bench with -out")
	out := flag.String("out", ".", "directory the SVG files are written to")
	flag.Parse()
	if *in == "" {
		fmt.Fprintln(os.Stderr, "chart: -in is required")
		os.Exit(2)
	}
	written, err := run(*in, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
	for _, p := range written {
		fmt.Println(p)
	}
}

// run reads the result lines of in and writes their charts into dir,
// returning the paths written.
func run(in, dir string) ([]string, error) {
	f, err := os.Open(in)
	if err != nil {
		return nil, fmt.Errorf("reading results: %w", err)
	}
	defer f.Close()
	results, err := readResults(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", in, err)
	}
	var written []string
	for _, c := range chartsFor(results) {
		p := filepath.Join(dir, c.file)
		if err := os.WriteFile(p, []byte(c.svg), 0o644); err != nil {
			return written, fmt.Errorf("writing chart: %w", err)
		}
		written = append(written, p)
	}
	return written, nil
}

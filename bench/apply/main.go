// Command apply measures jobs as code at scale with the real binaries: a
// `ringjob server` on its own database, and `ringjob apply -f DIR` of a
// directory declaring N jobs (default 10,000) in G groups, timed from the
// command line as a user runs it: the apply to an empty server, the
// no-change re-apply, and `ringjob diff`. It fails when an apply does not
// print what it should.
//
//	go build -o bin/ringjob ./cmd/ringjob
//	go run ./bench/apply -bin bin/ringjob -database-url 'mysql://root@127.0.0.1:3306/ringjob_bench_apply'
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	bin := flag.String("bin", "bin/ringjob", "the ringjob binary")
	dbURL := flag.String("database-url", "mysql://root@127.0.0.1:3306/ringjob_bench_apply", "an empty database for the server")
	jobs := flag.Int("jobs", 10000, "jobs to declare")
	groups := flag.Int("groups", 10, "groups to spread them over")
	flag.Parse()
	if err := run(*bin, *dbURL, *jobs, *groups); err != nil {
		fmt.Fprintln(os.Stderr, "bench/apply:", err)
		os.Exit(1)
	}
}

func run(bin, dbURL string, nJobs, nGroups int) error {
	dir, err := os.MkdirTemp("", "ringjob-bench-apply-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	port, err := freePort()
	if err != nil {
		return err
	}
	const token = "rj_bench_apply_admin_token_0123456789abcdef"
	cfg := filepath.Join(dir, "ringjob.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("database_url: %q\nlisten: 127.0.0.1:%d\nlog: {level: warn, format: json}\n", dbURL, port)), 0o600); err != nil {
		return err
	}
	srv := exec.Command(bin, "server", "--config", cfg)
	srv.Env = append(os.Environ(), "RINGJOB_ADMIN_TOKEN="+token)
	var srvOut bytes.Buffer
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start server: %w", err)
	}
	defer func() {
		_ = srv.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = srv.Process.Kill()
		}
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitReady(base, 60*time.Second); err != nil {
		return fmt.Errorf("%w\n%s", err, srvOut.String())
	}

	jobsDir := filepath.Join(dir, "jobs")
	if err := declare(jobsDir, nJobs, nGroups); err != nil {
		return err
	}
	env := append(os.Environ(), "RINGJOB_URL="+base, "RINGJOB_TOKEN="+token)
	step := func(name, want string, args ...string) (time.Duration, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		if err != nil && !(name == "diff" && cmd.ProcessState.ExitCode() == 0) {
			return took, fmt.Errorf("%s: %v\n%s", name, err, tail(out))
		}
		if !strings.Contains(string(out), want) {
			return took, fmt.Errorf("%s: the output lacks %q:\n%s", name, want, tail(out))
		}
		return took, nil
	}
	load := loadavg()
	first, err := step("apply to an empty server", fmt.Sprintf("Applied: %d created", nJobs+nGroups), "apply", "-f", jobsDir)
	if err != nil {
		return fmt.Errorf("%w\nserver log:\n%s", err, tail(srvOut.Bytes()))
	}
	fmt.Printf("apply to an empty server: %.2f s\n", first.Seconds())
	again, err := step("no-change re-apply", "Nothing to change.", "apply", "-f", jobsDir)
	if err != nil {
		return fmt.Errorf("%w\nserver log:\n%s", err, tail(srvOut.Bytes()))
	}
	diff, err := step("diff", fmt.Sprintf("%d unchanged", nJobs+nGroups), "diff", "-f", jobsDir)
	if err != nil {
		return err
	}
	fmt.Printf("bench/apply: %d jobs in %d groups, `ringjob apply -f DIR` against `ringjob server` on %s\n", nJobs, nGroups, strings.SplitN(dbURL, ":", 2)[0])
	fmt.Printf("load average before: %s\n", load)
	fmt.Printf("| step | seconds |\n|---|---|\n")
	fmt.Printf("| apply to an empty server (%d creates) | %.2f |\n", nJobs+nGroups, first.Seconds())
	fmt.Printf("| no-change re-apply | %.2f |\n", again.Seconds())
	fmt.Printf("| diff (no change) | %.2f |\n", diff.Seconds())
	fmt.Printf("load average after: %s\n", loadavg())
	return nil
}

// declare writes nGroups files of jobs: cron schedules spread over the day,
// half of them enabled, every tenth with a child in its group.
func declare(dir string, nJobs, nGroups int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for g := 0; g < nGroups; g++ {
		var b strings.Builder
		app := fmt.Sprintf("bench-%03d", g)
		fmt.Fprintf(&b, "groups:\n  - app_name: %s\n    title: Bench group %d\n    members: [http://127.0.0.1:9/]\njobs:\n", app, g)
		for i := g; i < nJobs; i += nGroups {
			fmt.Fprintf(&b, "  - group: %s\n    name: job-%05d\n    description: bench job %d\n    schedule_type: cron\n    schedule_conf: \"%d %d %d * * ?\"\n    time_zone: Europe/Berlin\n    handler: bench\n    params: '{\"i\": %d}'\n    retry_count: 1\n    enabled: %v\n",
				app, i, i, i%60, (i/60)%60, (i/3600)%24, i, i%2 == 0)
			if i%10 == 0 && i+nGroups < nJobs {
				fmt.Fprintf(&b, "    children: [job-%05d]\n", i+nGroups)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, app+".yaml"), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitReady(base string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the server at %s did not become ready within %s", base, within)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

func tail(b []byte) string {
	if len(b) > 2000 {
		return "..." + string(b[len(b)-2000:])
	}
	return string(b)
}

// Command demo-executor is a small HTTP executor built on package executor,
// for trying Ringjob (or an XXL-JOB admin) end to end. It serves four
// handlers:
//
//	hello  logs its params and succeeds
//	sleep  sleeps for its params as a duration ("30s", or seconds "30"; default 10s), honouring kill and timeout
//	fail   returns an error
//	shard  logs "shard i of n"
//
// Usage:
//
//	go run ./cmd/demo-executor -admin http://127.0.0.1:8080 -token TOKEN -app demo -listen 127.0.0.1:9999
//
// Every flag can also come from the environment; a flag given on the command
// line wins. SIGINT or SIGTERM stops it gracefully: it leaves the registry,
// lets running jobs finish for 5 s, then cancels them and reports them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/executor"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "demo-executor:", err)
		os.Exit(1)
	}
}

// config is what the flags and environment set.
type config struct {
	admin         string // RINGJOB_ADMIN
	token         string // RINGJOB_EXECUTOR_TOKEN
	app           string // RINGJOB_APP
	listen        string // RINGJOB_LISTEN
	address       string // RINGJOB_EXECUTOR_ADDRESS
	logDir        string // RINGJOB_LOG_DIR
	retentionDays int    // RINGJOB_LOG_RETENTION_DAYS
	logJSON       bool   // RINGJOB_LOG_JSON
}

func parse(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	env := func(key, def string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return def
	}
	var c config
	fs := flag.NewFlagSet("demo-executor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.admin, "admin", env("RINGJOB_ADMIN", "http://127.0.0.1:8080"), "admin base URL(s), comma-separated (env RINGJOB_ADMIN)")
	fs.StringVar(&c.token, "token", env("RINGJOB_EXECUTOR_TOKEN", ""), "executor access token (env RINGJOB_EXECUTOR_TOKEN); required")
	fs.StringVar(&c.app, "app", env("RINGJOB_APP", "demo"), "app name of the executor group (env RINGJOB_APP)")
	fs.StringVar(&c.listen, "listen", env("RINGJOB_LISTEN", "127.0.0.1:9999"), "listen address (env RINGJOB_LISTEN)")
	fs.StringVar(&c.address, "address", env("RINGJOB_EXECUTOR_ADDRESS", ""), "URL the admin calls; default http://{ip}:{port}/ of -listen (env RINGJOB_EXECUTOR_ADDRESS)")
	fs.StringVar(&c.logDir, "log-dir", env("RINGJOB_LOG_DIR", ""), "directory of run logs and callback retry files (env RINGJOB_LOG_DIR)")
	days, err := strconv.Atoi(env("RINGJOB_LOG_RETENTION_DAYS", strconv.Itoa(executor.DefaultLogRetentionDays)))
	if err != nil {
		return c, fmt.Errorf("RINGJOB_LOG_RETENTION_DAYS: %w", err)
	}
	fs.IntVar(&c.retentionDays, "log-retention-days", days, "days of run logs to keep; below 3 keeps them all (env RINGJOB_LOG_RETENTION_DAYS)")
	jsonLogs, _ := strconv.ParseBool(env("RINGJOB_LOG_JSON", "false"))
	fs.BoolVar(&c.logJSON, "log-json", jsonLogs, "log as JSON (env RINGJOB_LOG_JSON)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.token == "" {
		return c, errors.New("no token: set -token or RINGJOB_EXECUTOR_TOKEN to the executor token the admin shows")
	}
	return c, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	c, err := parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	logger := logrus.New()
	logger.SetOutput(stderr)
	if c.logJSON {
		logger.SetFormatter(&logrus.JSONFormatter{})
	}
	log := logger.WithField("service", "demo-executor")

	opts := []executor.Option{
		executor.WithAdminAddresses(c.admin),
		executor.WithAccessToken(c.token),
		executor.WithAppName(c.app),
		executor.WithLogRetentionDays(c.retentionDays),
		executor.WithLogger(log),
	}
	if c.address != "" {
		opts = append(opts, executor.WithAddress(c.address))
	}
	if c.logDir != "" {
		opts = append(opts, executor.WithLogDir(c.logDir))
	}
	e, err := executor.New(opts...)
	if err != nil {
		return err
	}
	register(e)
	log.WithField("listen", c.listen).WithField("admin", c.admin).WithField("app", c.app).Info("demo executor starting")
	if err := e.ListenAndServe(ctx, c.listen); err != nil {
		return err
	}
	log.Info("demo executor stopped")
	return nil
}

func register(e *executor.Executor) {
	e.Register("hello", hello)
	e.Register("sleep", sleep)
	e.Register("fail", fail)
	e.Register("shard", shard)
}

func hello(ctx context.Context, job *executor.Job) error {
	job.Log("hello from job %d, params: %q", job.JobID, job.Params)
	return nil
}

func sleep(ctx context.Context, job *executor.Job) error {
	d := 10 * time.Second
	if job.Params != "" {
		var err error
		if d, err = parseDuration(job.Params); err != nil {
			return err
		}
	}
	job.Log("sleeping for %v", d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		job.Log("slept for %v", d)
		return nil
	case <-ctx.Done():
		job.Log("stopped early: %v", context.Cause(ctx))
		return context.Cause(ctx)
	}
}

// parseDuration reads "30s", "1m30s" or a number of seconds.
func parseDuration(s string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(s, 64); err == nil && n >= 0 {
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("sleep: params %q is not a duration such as 30s or 1m", s)
	}
	return d, nil
}

func fail(ctx context.Context, job *executor.Job) error {
	job.Log("failing on purpose, params: %q", job.Params)
	return fmt.Errorf("fail: the demo handler always fails (params %q)", job.Params)
}

func shard(ctx context.Context, job *executor.Job) error {
	job.Log("shard %d of %d, params: %q", job.ShardIndex, job.ShardTotal, job.Params)
	return nil
}

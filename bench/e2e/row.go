package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var execCommand = exec.CommandContext

// rowResult is one table row (and one JSON line).
type rowResult struct {
	Label        string             `json:"label,omitempty"`
	Target       string             `json:"target"`
	DB           string             `json:"db"` // mariadb or postgres
	Jobs         int                `json:"jobs"`
	PeriodS      int                `json:"period_s"` // seconds between a job's fires (all jobs fire in the same second)
	IntervalFrom string             `json:"interval_from"`
	IntervalS    int                `json:"interval_s"`
	Expected     int64              `json:"fires_expected"`
	Received     int64              `json:"fires_received"`
	Missing      int64              `json:"missing"`
	Duplicates   int64              `json:"duplicates"`
	FiresPerS    float64            `json:"fires_per_s"`
	Lag          pct                `json:"lag_ms"`
	BurstLags    []pct              `json:"burst_lag_ms,omitempty"`      // +burst rows: the lag of each burst, in order
	CallbackAck  pct                `json:"callback_ack_ms,omitempty"`   // callback sent -> acknowledged (recorded)
	ResultAck    pct                `json:"result_ack_ms,omitempty"`     // result ready on the executor -> acknowledged
	AckOver1s    int64              `json:"acks_over_1s,omitempty"`      // results acknowledged more than 1 s after they were ready
	CallbackFail int64              `json:"callback_failures,omitempty"` // callback items refused or timed out (sent again)
	NonFinal     int64              `json:"runs_non_final"`
	RunStates    map[string]int     `json:"run_states"`
	CPUServer    float64            `json:"cpu_server_cores"`
	CPUDB        float64            `json:"cpu_db_cores"`
	CPUTargets   float64            `json:"cpu_targets_cores"`
	CPUOther     float64            `json:"cpu_other_cores"`
	CPUHost      float64            `json:"cpu_host_busy_cores"`
	ServerMsFire float64            `json:"server_cpu_ms_per_fire"`
	StmtsFire    float64            `json:"db_statements_per_fire"`
	DBPerFire    map[string]float64 `json:"db_counters_per_fire"`
	ServerRSSMiB float64            `json:"server_peak_rss_mib"`
	SetupS       float64            `json:"setup_s"`
	Machine      machine            `json:"machine"`
	StartedAt    string             `json:"started_at"`
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// runRow runs one (target, N) row from an empty database to its figures.
func runRow(ctx context.Context, env *environment, spec rowSpec) (*rowResult, error) {
	o := env.o
	started := time.Now()
	res := &rowResult{Label: o.label, Target: spec.target, DB: "mariadb", Jobs: spec.jobs, PeriodS: spec.period, Machine: env.machine, StartedAt: started.UTC().Format(time.RFC3339)}
	if spec.postgres {
		res.DB = "postgres"
	}
	dir, err := os.MkdirTemp(env.work, fmt.Sprintf("%s-%d-", spec.target, spec.jobs))
	if err != nil {
		return nil, err
	}
	recDir := filepath.Join(dir, "records")
	if err := os.MkdirAll(recDir, 0o755); err != nil {
		return nil, err
	}
	dbName := fmt.Sprintf("ringjob_e2e_%d_%s", spec.jobs, randHex(4))
	databaseURL := fmt.Sprintf("mysql://%s/%s", mysqlHostPart(env.serverDSN), dbName)
	if spec.postgres {
		if _, err := env.pg.admin.ExecContext(ctx, "CREATE DATABASE "+dbName+" TEMPLATE template0 ENCODING 'UTF8'"); err != nil {
			return nil, fmt.Errorf("create database: %w", err)
		}
		if !o.keep {
			defer func() {
				_, _ = env.pg.admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)")
			}()
		}
		databaseURL = env.pg.dbURL(dbName)
	} else {
		if _, err := env.admin.ExecContext(ctx, "CREATE DATABASE "+dbName+" CHARACTER SET utf8mb4"); err != nil {
			return nil, fmt.Errorf("create database: %w", err)
		}
		if !o.keep {
			defer func() { _, _ = env.admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+dbName) }()
		}
	}
	var children []*child
	defer func() {
		for i := len(children) - 1; i >= 0; i-- {
			children[i].stop(15 * time.Second)
		}
	}()

	// The Lambda emulator runs before the server, which is pointed at it.
	var emulator *child
	lambdaEndpoint := ""
	if spec.target == "lambda" {
		fnDir := filepath.Join(dir, "fn")
		if err := os.MkdirAll(fnDir, 0o755); err != nil {
			return nil, err
		}
		if err := copyFile(env.self, filepath.Join(fnDir, "bootstrap")); err != nil {
			return nil, err
		}
		// The function writes into records/ next to its bootstrap.
		if err := os.Symlink(recDir, filepath.Join(fnDir, "records")); err != nil {
			return nil, err
		}
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		emulator, err = startChild(ctx, dir, "emulator", nil, "Lambda emulator on", 60*time.Second,
			env.ringjob, "dev", "lambda", "--listen", "127.0.0.1:"+strconv.Itoa(port),
			"--function", "bench="+filepath.Join(fnDir, "bootstrap"),
			"--concurrency", strconv.Itoa(o.lambdaCon), "--queue", "100000")
		if err != nil {
			return nil, err
		}
		children = append(children, emulator)
		lambdaEndpoint = "http://127.0.0.1:" + strconv.Itoa(port)
	}

	port, err := freePort()
	if err != nil {
		return nil, err
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	adminToken := "rjbench_" + randHex(20)
	execToken := randHex(16)
	cfg := fmt.Sprintf(`database_url: %q
listen: "127.0.0.1:%d"
log:
  level: warn
api:
  admin_token: %q
  pprof: true
executors:
  access_token: %q
  max_connections_per_executor: %d
lambda:
  endpoint: %q
  mode: sync
local:
  commands:
    - name: bench
      argv: [%q, "-role", "local-cmd", "-rec", %q]
`, databaseURL, port, adminToken, execToken, o.maxConns, lambdaEndpoint, env.self, filepath.Join(recDir, "local"))
	if o.extraYAML != "" {
		cfg += o.extraYAML + "\n"
	}
	cfgPath := filepath.Join(dir, "ringjob.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	server, err := startChild(ctx, dir, "server",
		[]string{"AWS_ACCESS_KEY_ID=bench", "AWS_SECRET_ACCESS_KEY=bench", "AWS_REGION=us-east-1"},
		"is running", 120*time.Second, env.ringjob, "server", "--config", cfgPath)
	if err != nil {
		return nil, err
	}
	children = append(children, server)

	// The group first: executors may register only into a group that exists.
	app := "bench"
	api := &restClient{base: base + "/api/v1", token: adminToken, http: &http.Client{Timeout: 30 * time.Second}}
	group := map[string]any{"app_name": app, "title": "bench e2e"}
	switch spec.target {
	case "lambda":
		group["members"] = []string{"lambda://us-east-1/bench"}
	case "local":
		group["members"] = []string{"local://bench"}
	}
	var g struct {
		ID int64 `json:"id"`
	}
	if err := api.do(ctx, "POST", "/groups", group, &g); err != nil {
		return nil, fmt.Errorf("create group: %w", err)
	}
	var executor *child
	if strings.HasPrefix(spec.target, "xxl-") {
		executor, err = startChild(ctx, dir, "executor", nil, "ready", 60*time.Second,
			env.self, "-role", spec.target, "-admin", base, "-token", execToken, "-app", app,
			"-listen", "127.0.0.1:0", "-rec", filepath.Join(recDir, "executor"), "-role-no-callbacks="+strconv.FormatBool(o.noCalls))
		if err != nil {
			return nil, err
		}
		children = append(children, executor)
	}

	jobIDs, err := createJobs(ctx, api, g.ID, spec.jobs, spec.period)
	if err != nil {
		return nil, err
	}
	res.SetupS = time.Since(started).Seconds()

	// The interval: whole seconds, starting after the warm-up.
	from := time.Now().Add(o.warmup).Truncate(time.Second).Add(time.Second)
	to := from.Add(o.duration)
	res.IntervalFrom = from.UTC().Format(time.RFC3339)
	res.IntervalS = int(o.duration / time.Second)
	targetPID := 0
	switch {
	case executor != nil:
		targetPID = executor.pid()
	case emulator != nil:
		targetPID = emulator.pid()
	}
	if err := sleepUntil(ctx, from); err != nil {
		return nil, err
	}
	s0 := takeSample(ctx, env, spec, dbName, server.pid(), targetPID)
	profiled := make(chan error, 1)
	if o.profile != "" {
		go func() {
			secs := min(20, int(o.duration/time.Second))
			path := filepath.Join(o.profile, fmt.Sprintf("%s-%d.pprof", spec.target, spec.jobs))
			profiled <- api.download(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, secs), path)
		}()
	} else {
		profiled <- nil
	}
	if err := sleepUntil(ctx, to); err != nil {
		return nil, err
	}
	s1 := takeSample(ctx, env, spec, dbName, server.pid(), targetPID)
	if err := <-profiled; err != nil {
		fmt.Fprintln(os.Stderr, "   server CPU profile:", err)
	}
	hwm, _ := procMemKiB(server.pid())
	res.ServerRSSMiB = float64(hwm) / 1024
	if err := sleepUntil(ctx, to.Add(o.settle)); err != nil {
		return nil, err
	}
	if spec.postgres {
		res.RunStates, err = env.pg.runStates(ctx, dbName, from, to)
	} else {
		res.RunStates, err = runStates(ctx, env, dbName, from, to)
	}
	if err != nil {
		return nil, err
	}
	for st, n := range res.RunStates {
		switch st {
		case "succeeded", "failed", "timed_out", "killed", "lost":
		default:
			res.NonFinal += int64(n)
		}
	}

	// Stop the targets first (they write their records), then the server.
	for i := len(children) - 1; i >= 0; i-- {
		children[i].stop(15 * time.Second)
	}
	children = nil
	recs, err := readRecords(recDir)
	if err != nil {
		return nil, err
	}
	analyze(res, recs, jobIDs, from, to, spec.period)
	costs(res, s0, s1)
	return res, nil
}

func mysqlHostPart(dsn string) string {
	// root@tcp(127.0.0.1:PORT)/ -> root@127.0.0.1:PORT
	user, rest, _ := strings.Cut(dsn, "@")
	addr := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(rest, "/"), "tcp("), ")")
	return user + "@" + addr
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

type restClient struct {
	base, token string
	http        *http.Client
}

func (c *restClient) do(ctx context.Context, method, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, truncate(string(b), 300))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// download saves a GET of url (with the admin token) to path.
func (c *restClient) download(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d: %s", url, resp.StatusCode, truncate(string(b), 200))
	}
	return os.WriteFile(path, b, 0o644)
}

// createJobs creates n enabled cron jobs that fire every period seconds
// (all in the same second) through the REST API, 16 requests at a time.
func createJobs(ctx context.Context, api *restClient, groupID int64, n, period int) (map[int64]bool, error) {
	cron := "* * * * * ?"
	if period > 1 {
		cron = fmt.Sprintf("*/%d * * * * ?", period)
	}
	var (
		next  atomic.Int64
		mu    sync.Mutex
		ids   = make(map[int64]bool, n)
		first error
		wg    sync.WaitGroup
	)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				var j struct {
					ID int64 `json:"id"`
				}
				err := api.do(ctx, "POST", "/jobs", map[string]any{
					"group_id": groupID, "name": fmt.Sprintf("bench-%d", i), "schedule_type": "cron",
					"schedule_conf": cron, "time_zone": "UTC", "handler": "noop", "enabled": true,
				}, &j)
				mu.Lock()
				if err != nil && first == nil {
					first = fmt.Errorf("create job %d: %w", i, err)
				}
				ids[j.ID] = true
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return ids, first
}

// sample is what is compared at both ends of the interval.
type sample struct {
	wall     time.Time
	server   procStat
	db       procStat
	targets  time.Duration
	self     procStat
	hostBusy float64
	status   map[string]int64
}

func takeSample(ctx context.Context, env *environment, spec rowSpec, dbName string, serverPID, targetPID int) sample {
	s := sample{wall: time.Now(), server: readProcStat(serverPID), self: readProcStat(os.Getpid())}
	switch {
	case spec.postgres && env.pg.pid > 0:
		// The postmaster, its backends and workers, and the backends
		// that ended (reaped by the postmaster).
		s.db = procStat{self: treeCPU(env.pg.pid), ok: true}
	case !spec.postgres && env.dbPID > 0:
		s.db = readProcStat(env.dbPID)
	}
	if targetPID > 0 {
		s.targets = treeCPU(targetPID)
	}
	s.hostBusy, _ = hostCPU()
	if spec.postgres {
		s.status = env.pg.status(ctx, dbName)
	} else {
		s.status = globalStatus(ctx, env.admin)
	}
	return s
}

func costs(r *rowResult, s0, s1 sample) {
	wall := s1.wall.Sub(s0.wall).Seconds()
	cores := func(d time.Duration) float64 { return d.Seconds() / wall }
	r.CPUServer = cores(s1.server.self - s0.server.self)
	// Local commands are the server's children: they count as targets.
	r.CPUTargets = cores(s1.targets-s0.targets) + cores(s1.server.children-s0.server.children)
	if s0.db.ok {
		r.CPUDB = cores(s1.db.self - s0.db.self)
	}
	r.CPUHost = (s1.hostBusy - s0.hostBusy) / wall
	self := cores(s1.self.self - s0.self.self)
	r.CPUOther = max(0, r.CPUHost-r.CPUServer-r.CPUTargets-r.CPUDB-self)
	if r.Expected > 0 {
		r.ServerMsFire = (s1.server.self - s0.server.self).Seconds() * 1000 / float64(r.Expected)
		r.DBPerFire = map[string]float64{}
		for k, v := range s1.status {
			r.DBPerFire[k] = float64(v-s0.status[k]) / float64(r.Expected)
		}
		r.StmtsFire = r.DBPerFire["Questions"]
	}
}

func runStates(ctx context.Context, env *environment, db string, from, to time.Time) (map[string]int, error) {
	rows, err := env.admin.QueryContext(ctx, "SELECT state, COUNT(*) FROM "+db+".runs WHERE scheduled_ms >= ? AND scheduled_ms < ? GROUP BY state",
		from.UnixMilli(), to.UnixMilli())
	return countByState(rows, err)
}

// countByState reads the rows of a `SELECT state, COUNT(*) … GROUP BY
// state` (MariaDB's or PostgreSQL's) into a map.
func countByState(rows *sql.Rows, err error) (map[string]int, error) {
	if err != nil {
		return nil, fmt.Errorf("count runs by state: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[st] = n
	}
	return out, rows.Err()
}

type fireKey struct{ job, schedMs int64 }

// analyze counts fires and lags from what the targets recorded.
func analyze(r *rowResult, recs []record, jobs map[int64]bool, from, to time.Time, period int) {
	periodMs := int64(period) * 1000
	lo, hi := from.UnixMilli(), to.UnixMilli()
	type seen struct {
		n     int
		first int64
	}
	fires := map[fireKey]*seen{}
	schedOf := map[int64]int64{} // run id -> scheduled ms
	var acks, results []float64
	for _, rc := range recs {
		switch rc.Kind {
		case kindArrival:
			k := fireKey{rc.A, rc.B}
			if s := fires[k]; s != nil {
				s.n++
				s.first = min(s.first, rc.D)
			} else {
				fires[k] = &seen{n: 1, first: rc.D}
			}
			schedOf[rc.C] = rc.B
		case kindCallbackFail:
			if at, ok := schedOf[rc.A]; ok && at >= lo && at < hi {
				r.CallbackFail++
			}
		}
	}
	var lags []float64
	byFire := map[int64][]float64{} // scheduled ms -> lags, for the bursts
	for k, s := range fires {
		if !jobs[k.job] {
			continue
		}
		if s.n > 1 {
			r.Duplicates += int64(s.n - 1)
		}
		if k.schedMs >= lo && k.schedMs < hi && k.schedMs%periodMs == 0 {
			r.Received++
			lag := float64(s.first)/1e6 - float64(k.schedMs)
			lags = append(lags, lag)
			if period > 1 {
				byFire[k.schedMs] = append(byFire[k.schedMs], lag)
			}
		}
	}
	for _, rc := range recs {
		if rc.Kind != kindAck {
			continue
		}
		if at, ok := schedOf[rc.A]; !ok || at < lo || at >= hi {
			continue
		}
		acks = append(acks, float64(rc.D-rc.C)/1e6)
		if rc.B > 0 {
			d := float64(rc.D-rc.B) / 1e6
			results = append(results, d)
			if d > 1000 {
				r.AckOver1s++
			}
		}
	}
	fireTimes := int64(0) // fire seconds in the interval
	for t := (lo + periodMs - 1) / periodMs * periodMs; t < hi; t += periodMs {
		fireTimes++
	}
	r.Expected = int64(len(jobs)) * fireTimes
	r.Missing = r.Expected - r.Received
	r.FiresPerS = float64(r.Received) / to.Sub(from).Seconds()
	r.Lag = percentiles(lags)
	for _, t := range slices.Sorted(maps.Keys(byFire)) {
		r.BurstLags = append(r.BurstLags, percentiles(byFire[t]))
	}
	r.CallbackAck = percentiles(acks)
	r.ResultAck = percentiles(results)
}

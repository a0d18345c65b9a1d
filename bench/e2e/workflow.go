package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringjob/ringjob/apitypes"
)

// The workflow row (-workflows N): N workflows of the same ten nodes, each
// triggered once in the same second through the REST API, every node run to
// the xxl-batch executor. Separate workflows rather than N runs of one: a
// workflow's block strategy lets only one of its runs go at a time.

// wfShape is the definition's nodes and edges: 1 -> 4 -> 4 -> 1 (each of
// the four in the second layer feeds one of the third; all four join into
// the last node).
func wfShape(jobs []int64) apitypes.WorkflowDefinition {
	var d apitypes.WorkflowDefinition
	add := func(name string) {
		d.Nodes = append(d.Nodes, apitypes.WorkflowNode{Name: name, JobID: jobs[len(d.Nodes)]})
	}
	add("head")
	for i := range 4 {
		add(fmt.Sprintf("fan-%d", i))
	}
	for i := range 4 {
		add(fmt.Sprintf("chain-%d", i))
	}
	add("join")
	for i := range 4 {
		d.Edges = append(d.Edges,
			apitypes.WorkflowEdge{From: "head", To: fmt.Sprintf("fan-%d", i)},
			apitypes.WorkflowEdge{From: fmt.Sprintf("fan-%d", i), To: fmt.Sprintf("chain-%d", i)},
			apitypes.WorkflowEdge{From: fmt.Sprintf("chain-%d", i), To: "join"})
	}
	return d
}

const wfNodes = 10

// wfResult is the workflow row's figures (one JSON line).
type wfResult struct {
	Label        string         `json:"label,omitempty"`
	Workflows    int            `json:"workflows"`
	Nodes        int            `json:"nodes_per_workflow"`
	TriggerS     float64        `json:"trigger_s"` // first trigger sent -> last answered
	WallS        float64        `json:"wall_s"`    // first trigger sent -> every workflow run final
	NodeRunsExp  int            `json:"node_runs_expected"`
	Arrived      int            `json:"node_runs_arrived"` // distinct runs at the executor
	Missing      int            `json:"missing"`
	Duplicates   int            `json:"duplicates"`
	NodeRunsPerS float64        `json:"node_runs_per_s"`
	RunStates    map[string]int `json:"workflow_run_states"`
	NodeStates   map[string]int `json:"node_states"`
	Delay        pct            `json:"parent_outcome_to_child_arrival_ms"`
	DelayMetric  string         `json:"node_start_delay_metric"` // the server's histogram, bucket counts
	StmtsPerNode float64        `json:"db_statements_per_node_run"`
	ServerMsNode float64        `json:"server_cpu_ms_per_node_run"`
	CPUServer    float64        `json:"cpu_server_cores"`
	CPUDB        float64        `json:"cpu_db_cores"`
	CPUTargets   float64        `json:"cpu_targets_cores"`
	CPUOther     float64        `json:"cpu_other_cores"`
	LoadAvg      string         `json:"loadavg"`
	ServerRSSMiB float64        `json:"server_peak_rss_mib"`
	Machine      machine        `json:"machine"`
	StartedAt    string         `json:"started_at"`
}

func runWorkflowRow(ctx context.Context, env *environment, n int) (*wfResult, error) {
	o := env.o
	res := &wfResult{Label: o.label, Workflows: n, Nodes: wfNodes, Machine: env.machine, StartedAt: time.Now().UTC().Format(time.RFC3339)}
	dir, err := os.MkdirTemp(env.work, fmt.Sprintf("workflows-%d-", n))
	if err != nil {
		return nil, err
	}
	recDir := filepath.Join(dir, "records")
	if err := os.MkdirAll(recDir, 0o755); err != nil {
		return nil, err
	}
	dbName := fmt.Sprintf("ringjob_e2e_wf_%d_%s", n, randHex(4))
	if _, err := env.admin.ExecContext(ctx, "CREATE DATABASE "+dbName+" CHARACTER SET utf8mb4"); err != nil {
		return nil, fmt.Errorf("create database: %w", err)
	}
	if !o.keep {
		defer func() { _, _ = env.admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+dbName) }()
	}
	var children []*child
	defer func() {
		for i := len(children) - 1; i >= 0; i-- {
			children[i].stop(15 * time.Second)
		}
	}()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	adminToken := "rjbench_" + randHex(20)
	execToken := randHex(16)
	cfg := fmt.Sprintf(`database_url: "mysql://%s/%s"
listen: "127.0.0.1:%d"
log:
  level: warn
api:
  admin_token: %q
executors:
  access_token: %q
`, mysqlHostPart(env.serverDSN), dbName, port, adminToken, execToken)
	if o.extraYAML != "" {
		cfg += o.extraYAML + "\n"
	}
	cfgPath := filepath.Join(dir, "ringjob.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	server, err := startChild(ctx, dir, "server", nil, "is running", 120*time.Second, env.ringjob, "server", "--config", cfgPath)
	if err != nil {
		return nil, err
	}
	children = append(children, server)
	api := &restClient{base: base + "/api/v1", token: adminToken, http: &http.Client{Timeout: 60 * time.Second,
		// Enough kept-alive connections that the triggers are not spent on connecting.
		Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	var g struct {
		ID int64 `json:"id"`
	}
	if err := api.do(ctx, "POST", "/groups", map[string]any{"app_name": "bench", "title": "bench workflows"}, &g); err != nil {
		return nil, fmt.Errorf("create group: %w", err)
	}
	executor, err := startChild(ctx, dir, "executor", nil, "ready", 60*time.Second,
		env.self, "-role", "xxl-batch", "-admin", base, "-token", execToken, "-app", "bench",
		"-listen", "127.0.0.1:0", "-rec", filepath.Join(recDir, "executor"))
	if err != nil {
		return nil, err
	}
	children = append(children, executor)

	// Ten jobs without a schedule, one per node; every workflow uses them.
	jobs := make([]int64, wfNodes)
	for i := range jobs {
		var j struct {
			ID int64 `json:"id"`
		}
		if err := api.do(ctx, "POST", "/jobs", map[string]any{"group_id": g.ID, "name": fmt.Sprintf("node-%d", i),
			"schedule_type": "none", "handler": "noop"}, &j); err != nil {
			return nil, fmt.Errorf("create job: %w", err)
		}
		jobs[i] = j.ID
	}
	def := wfShape(jobs)
	wfIDs := make([]int64, n)
	if err := parallel(ctx, 8, n, func(i int) error {
		var w struct {
			ID int64 `json:"id"`
		}
		if err := api.do(ctx, "POST", "/workflows", apitypes.WorkflowInput{GroupID: g.ID, Name: fmt.Sprintf("wf-%d", i),
			Definition: def, ScheduleType: "none"}, &w); err != nil {
			return fmt.Errorf("create workflow %d: %w", i, err)
		}
		wfIDs[i] = w.ID
		return nil
	}); err != nil {
		return nil, err
	}

	// Every trigger in the same second: start at a whole second.
	start := time.Now().Add(time.Second).Truncate(time.Second).Add(time.Second)
	if err := sleepUntil(ctx, start); err != nil {
		return nil, err
	}
	s0 := takeSample(ctx, env, rowSpec{}, "", server.pid(), executor.pid())
	runIDs := make([]int64, n)
	if err := parallel(ctx, 64, n, func(i int) error {
		var r struct {
			ID int64 `json:"id"`
		}
		if err := api.do(ctx, "POST", fmt.Sprintf("/workflows/%d/trigger", wfIDs[i]), map[string]any{}, &r); err != nil {
			return fmt.Errorf("trigger workflow %d: %w", wfIDs[i], err)
		}
		runIDs[i] = r.ID
		return nil
	}); err != nil {
		return nil, err
	}
	res.TriggerS = time.Since(start).Seconds()
	if res.TriggerS > 1 {
		fmt.Fprintf(os.Stderr, "   warning: the triggers took %.2f s, not within one second\n", res.TriggerS)
	}

	// Wait until every workflow run is final (the list by state), at most 3 min.
	deadline := start.Add(3 * time.Minute)
	for {
		var open []apitypes.WorkflowRun
		for _, st := range []string{"queued", "running"} {
			var page apitypes.Page[apitypes.WorkflowRun]
			if err := api.do(ctx, "GET", "/workflow-runs?state="+st+"&limit=10", nil, &page); err != nil {
				return nil, fmt.Errorf("list workflow runs: %w", err)
			}
			open = append(open, page.Items...)
		}
		if len(open) == 0 || time.Now().After(deadline) {
			break
		}
		if err := sleepUntil(ctx, time.Now().Add(200*time.Millisecond)); err != nil {
			return nil, err
		}
	}
	s1 := takeSample(ctx, env, rowSpec{}, "", server.pid(), executor.pid())
	res.WallS = s1.wall.Sub(start).Seconds()
	hwm, _ := procMemKiB(server.pid())
	res.ServerRSSMiB = float64(hwm) / 1024
	res.DelayMetric = delayMetric(ctx, api, base)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		res.LoadAvg = strings.Join(strings.Fields(string(b))[:3], " ")
	}

	// Every workflow run with its node attempts, from the API.
	runs := make([]apitypes.WorkflowRun, n)
	if err := parallel(ctx, 8, n, func(i int) error {
		return api.do(ctx, "GET", fmt.Sprintf("/workflow-runs/%d", runIDs[i]), nil, &runs[i])
	}); err != nil {
		return nil, fmt.Errorf("get workflow run: %w", err)
	}
	// Stop the executor first: it writes its records.
	executor.stop(15 * time.Second)
	recs, err := readRecords(recDir)
	if err != nil {
		return nil, err
	}
	analyzeWorkflows(res, runs, def, recs)
	wall := s1.wall.Sub(s0.wall).Seconds()
	res.CPUServer = (s1.server.self - s0.server.self).Seconds() / wall
	res.CPUDB = (s1.db.self - s0.db.self).Seconds() / wall
	res.CPUTargets = (s1.targets - s0.targets).Seconds() / wall
	res.CPUOther = max(0, (s1.hostBusy-s0.hostBusy)/wall-res.CPUServer-res.CPUDB-res.CPUTargets-(s1.self.self-s0.self.self).Seconds()/wall)
	if res.Arrived > 0 {
		res.ServerMsNode = (s1.server.self - s0.server.self).Seconds() * 1000 / float64(res.Arrived)
		res.StmtsPerNode = float64(s1.status["Questions"]-s0.status["Questions"]) / float64(res.Arrived)
		res.NodeRunsPerS = float64(res.Arrived) / res.WallS
	}
	return res, nil
}

// analyzeWorkflows counts, for every workflow run, that each node has one
// current attempt whose run reached the executor exactly once, and the delay
// from the last parent's outcome (its finished_at in the API) to the child's
// run arriving at the executor.
func analyzeWorkflows(res *wfResult, runs []apitypes.WorkflowRun, def apitypes.WorkflowDefinition, recs []record) {
	arrivals := map[int64][]int64{} // run id -> arrival times (Unix ns)
	for _, r := range recs {
		if r.Kind == kindArrival {
			arrivals[r.C] = append(arrivals[r.C], r.D)
		}
	}
	res.Arrived = len(arrivals)
	parents := map[string][]string{}
	for _, e := range def.Edges {
		parents[e.To] = append(parents[e.To], e.From)
	}
	res.RunStates = map[string]int{}
	res.NodeStates = map[string]int{}
	res.NodeRunsExp = len(runs) * len(def.Nodes)
	var delays []float64
	for _, wr := range runs {
		res.RunStates[wr.State]++
		byNode := map[string]apitypes.WorkflowNodeRun{}
		for _, nr := range wr.Nodes {
			if !nr.Current {
				continue
			}
			if _, dup := byNode[nr.Node]; dup {
				res.Duplicates++
			}
			byNode[nr.Node] = nr
		}
		for _, node := range def.Nodes {
			nr, ok := byNode[node.Name]
			if !ok || nr.RunID == 0 {
				res.Missing++
				continue
			}
			res.NodeStates[nr.State]++
			at := arrivals[nr.RunID]
			switch {
			case len(at) == 0:
				res.Missing++
				continue
			case len(at) > 1:
				res.Duplicates += len(at) - 1
			}
			var last time.Time
			for _, p := range parents[node.Name] {
				if pr, ok := byNode[p]; ok && pr.FinishedAt != nil {
					if t, err := time.Parse(time.RFC3339Nano, *pr.FinishedAt); err == nil && t.After(last) {
						last = t
					}
				}
			}
			if !last.IsZero() {
				delays = append(delays, float64(at[0]-last.UnixNano())/1e6)
			}
		}
	}
	res.Delay = percentiles(delays)
}

// delayMetric is the server's ringjob_workflow_node_start_delay_seconds
// histogram as "le=count" pairs (cumulative), for comparison with the
// delay measured at the executor.
func delayMetric(ctx context.Context, api *restClient, base string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return ""
	}
	req.Header.Set("Authorization", "Bearer "+api.token)
	resp, err := api.http.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "ringjob_workflow_node_start_delay_seconds_bucket{le=\""); ok {
			le, count, _ := strings.Cut(rest, "\"} ")
			out = append(out, le+"="+count)
		}
	}
	return strings.Join(out, " ")
}

// parallel runs f(0..n-1) on w goroutines and returns the first error.
func parallel(ctx context.Context, w, n int, f func(i int) error) error {
	var (
		next  atomic.Int64
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func printWorkflowRow(w io.Writer, r *wfResult) {
	keys := func(m map[string]int) string {
		var ks []string
		for k, v := range m {
			ks = append(ks, fmt.Sprintf("%s %d", k, v))
		}
		sort.Strings(ks)
		return strings.Join(ks, ", ")
	}
	fmt.Fprintf(w, "| workflow runs × nodes | node runs expected / arrived | missing | duplicates | workflow runs | node runs/s | statements per node run | server CPU per node run | parent outcome → child arrival p50 / p99 / max | cores: server, db, executor, other | load |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(w, "| %d × %d | %d / %d | %d | %d | %s | %.0f | %.1f | %.2f ms | %.0f / %.0f / %.0f ms | %.2f, %.2f, %.2f, %.2f | %s |\n",
		r.Workflows, r.Nodes, r.NodeRunsExp, r.Arrived, r.Missing, r.Duplicates, keys(r.RunStates), r.NodeRunsPerS,
		r.StmtsPerNode, r.ServerMsNode, r.Delay.P50, r.Delay.P99, r.Delay.Max, r.CPUServer, r.CPUDB, r.CPUTargets, r.CPUOther, r.LoadAvg)
	fmt.Fprintf(w, "triggers took %.2f s; all final after %.1f s; node states: %s; server histogram: %s\n", r.TriggerS, r.WallS, keys(r.NodeStates), r.DelayMetric)
}

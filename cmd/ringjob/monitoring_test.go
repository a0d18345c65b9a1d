package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// The monitoring files shipped for operators.
const (
	rulesFile     = "../../deploy/prometheus/ringjob-rules.yml"
	dashboardFile = "../../deploy/grafana/ringjob-dashboard.json"
)

// scrapeMetrics are series Prometheus makes itself when it scrapes.
var scrapeMetrics = map[string]bool{"up": true}

// TestMonitoringFilesNameServedMetrics: every alert expression of the
// Prometheus rules and every query of the Grafana dashboard is valid PromQL,
// every rule has a name, an expression and a summary, and every metric they
// name is served on /metrics by a real server that has run a job (a renamed
// or removed metric fails here instead of silencing an alert).
func TestMonitoringFilesNameServedMetrics(t *testing.T) {
	t.Parallel()
	p := parser.NewParser(parser.Options{})

	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	raw, err := os.ReadFile(rulesFile)
	require.NoError(t, err)
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&rules), "rules file")
	named := map[string][]string{} // metric -> where
	exprs := 0
	use := func(where, expr string) {
		e, err := p.ParseExpr(expr)
		require.NoError(t, err, "%s: %q", where, expr)
		exprs++
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				named[vs.Name] = append(named[vs.Name], where)
			}
			return nil
		})
	}
	require.NotEmpty(t, rules.Groups)
	for _, g := range rules.Groups {
		require.NotEmpty(t, g.Name)
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "a rule of group %s has no alert name", g.Name)
			require.NotEmpty(t, r.Annotations["summary"], "alert %s has no summary", r.Alert)
			if r.For != "" {
				_, err := time.ParseDuration(r.For)
				require.NoError(t, err, "alert %s: for", r.Alert)
			}
			use("alert "+r.Alert, r.Expr)
		}
	}

	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	raw, err = os.ReadFile(dashboardFile)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &dash), "dashboard")
	require.NotEmpty(t, dash.Panels)
	for _, pn := range dash.Panels {
		require.NotEmpty(t, pn.Targets, "panel %q has no query", pn.Title)
		for _, tg := range pn.Targets {
			use("panel "+pn.Title, tg.Expr)
		}
	}

	// A server that has scheduled, run a job and answered API requests.
	token := "monitoring-test-admin-token-0123456789abcdef"
	db := filepath.Join(t.TempDir(), "ringjob.db")
	s := startReplica(t, fmt.Sprintf(`database_url: "sqlite://%s"
local:
  commands:
    - name: echo
      argv: ["/bin/echo", "hi"]
`, db), "http", http.DefaultClient, "RINGJOB_ADMIN_TOKEN="+token)
	s.token = token
	code, g := s.call("POST", "/api/v1/groups", map[string]any{"app_name": "monitoring", "title": "monitoring", "members": []string{"local://echo"}}, nil)
	require.Equal(t, 201, code, "%v", g)
	code, j := s.call("POST", "/api/v1/jobs", map[string]any{"group_id": num(g["id"]), "name": "echo"}, nil)
	require.Equal(t, 201, code, "%v", j)
	code, r := s.call("POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", num(j["id"])), map[string]any{}, nil)
	require.Equal(t, 201, code, "%v", r)
	require.Eventually(t, func() bool { return runState(s.server, num(r["id"]))["state"] == "succeeded" },
		20*time.Second, 50*time.Millisecond)

	resp, err := http.Get(s.base + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	served := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			served[f[2]] = true
			if f[3] == "histogram" || f[3] == "summary" {
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					served[f[2]+suf] = true
				}
			}
		}
	}
	var missing []string
	for m, where := range named {
		if !served[m] && !scrapeMetrics[m] {
			missing = append(missing, fmt.Sprintf("%s (%s)", m, strings.Join(where, "; ")))
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "metrics the monitoring files name that /metrics does not serve")
	require.Greater(t, exprs, 15, "expressions checked")
	t.Logf("%d expressions, %d metrics, all served", exprs, len(named))
	s.stop()
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/executor"
	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/store"
)

// The credentials of the trust test: the global executor token every
// executor host holds, the orders group's own token, and the secrets key.
const (
	trustGlobalToken = "trust-global-executor-token-0123"
	trustOrdersToken = "trust-orders-group-token-0123456"
	trustAdminToken  = "trust-admin-token-0123456789abcdefghij"
	trustAdminToken2 = "trust-admin-token-replaced-0123456789abc"
	trustSecretsKey  = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
)

// xxlPost calls the executor API as an executor (or an attacker holding an
// executor's credentials) does and returns XXL-JOB's code and msg.
func xxlPost(t *testing.T, base, path string, body any, hdr map[string]string) (int, string) {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest("POST", base+path, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json;charset=UTF-8")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var env struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	}
	require.NoError(t, json.Unmarshal(out, &env), "%s", out)
	return env.Code, env.Msg
}

func beat(app, addr string) map[string]string {
	return map[string]string{"registryGroup": "EXECUTOR", "registryKey": app, "registryValue": addr}
}

func token(tok string) map[string]string { return map[string]string{"XXL-JOB-ACCESS-TOKEN": tok} }

// TestTrustBoundaries performs each attack of issue 13 against a real
// server process (SQLite and MariaDB) with only an executor token or an API
// token, checks that it is refused and that nothing changed, and that the
// legitimate paths still work.
func TestTrustBoundaries(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"sqlite", "mysql"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var dbURL, sqlitePath string
			if kind == "sqlite" {
				sqlitePath = dbtest.SQLitePath(t)
				dbURL = "sqlite://" + sqlitePath
			} else {
				dbURL = mysqlURL(t, dbtest.MySQL(t))
			}
			port := freePort(t)
			extra := fmt.Sprintf(`executors: {access_token: %q}
secrets: {key: %q}
lambda: {allowed_functions: ["billing-*"]}
`, trustGlobalToken, trustSecretsKey)
			s := startServerWith(t, dbURL, trustAdminToken, port, extra)
			ctx := context.Background()
			db, err := store.Open(ctx, dbURL) // to look at what the server stored
			require.NoError(t, err)
			defer db.Close()
			registered := func(app string) int {
				var n int
				require.NoError(t, db.DB().QueryRow("SELECT COUNT(*) FROM executor_registry WHERE app_name = ?", app).Scan(&n))
				return n
			}

			group := func(body map[string]any) int64 {
				code, g := s.call("POST", "/api/v1/groups", body, nil)
				require.Equal(t, 201, code, "%v", g)
				return num(g["id"])
			}
			job := func(gid int64, name, handler string, extra map[string]any) int64 {
				body := map[string]any{"group_id": gid, "name": name, "handler": handler, "schedule_type": "none", "time_zone": "UTC", "timeout_sec": 30}
				for k, v := range extra {
					body[k] = v
				}
				code, j := s.call("POST", "/api/v1/jobs", body, nil)
				require.Equal(t, 201, code, "%v", j)
				return num(j["id"])
			}
			trigger := func(jobID int64, params string) int64 {
				code, r := s.call("POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", jobID), map[string]any{"params": params}, nil)
				require.Equal(t, 201, code, "%v", r)
				return num(r["id"])
			}
			runOf := func(id int64) map[string]any {
				code, r := s.call("GET", fmt.Sprintf("/api/v1/runs/%d", id), nil, nil)
				require.Equal(t, 200, code, "%v", r)
				return r
			}
			waitRun := func(id int64, states ...string) map[string]any {
				var r map[string]any
				require.Eventually(t, func() bool {
					r = runOf(id)
					for _, st := range states {
						if r["state"] == st {
							return true
						}
					}
					return false
				}, 20*time.Second, 50*time.Millisecond, "run %d never reached %v", id, states)
				return r
			}

			ordersID := group(map[string]any{"app_name": "orders", "executor_token": trustOrdersToken, "protocol": "3.5"})
			legacyID := group(map[string]any{"app_name": "legacy"})
			payrollID := group(map[string]any{"app_name": "payroll", "members": []string{"local://env", "local://nap"}})

			// A real executor of orders (our SDK, 3.5 style) with the group's token.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			ordersAddr := "http://" + ln.Addr().String()
			release := make(chan struct{})
			ex, err := executor.New(executor.WithAdminAddresses(s.base), executor.WithAccessToken(trustOrdersToken), executor.WithAppName("orders"),
				executor.WithLogDir(t.TempDir()), executor.WithAddress(ordersAddr+"/"), executor.WithShutdownGrace(200*time.Millisecond))
			require.NoError(t, err)
			ex.Register("wait", func(ctx context.Context, job *executor.Job) error {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil
			})
			ectx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = ex.Serve(ectx, ln) }()
			defer func() { cancel(); <-done }()
			require.Eventually(t, func() bool { return registered("orders") == 1 }, 10*time.Second, 20*time.Millisecond, "the orders executor registers with its group token")

			t.Run("registration under another group's app name is refused", func(t *testing.T) {
				// The header names a group the token fits; the body's registryKey decides.
				code, msg := xxlPost(t, s.base, "/api/registry", beat("orders", "http://127.0.0.1:1"),
					map[string]string{"XXL-JOB-ACCESS-TOKEN": trustGlobalToken, "XXL-JOB-APPNAME": "legacy"})
				require.Equal(t, 500, code)
				require.Equal(t, "The access token is wrong.", msg)
				require.Equal(t, 1, registered("orders"))
				// The log line and the reply are written by different goroutines.
				require.Eventually(t, func() bool { return strings.Contains(s.logs(), `executor registration refused`) },
					5*time.Second, 20*time.Millisecond, "the refusal is logged")
			})
			t.Run("registration into a local-only group is refused", func(t *testing.T) {
				code, msg := xxlPost(t, s.base, "/xxl-job-admin/api/registry", beat("payroll", "http://127.0.0.1:1/"), token(trustGlobalToken))
				require.Equal(t, 500, code)
				require.Contains(t, msg, "does not accept registered executors")
				require.Zero(t, registered("payroll"))
			})
			t.Run("registration of denied addresses is refused", func(t *testing.T) {
				for _, addr := range []string{"http://169.254.169.254/", "http://[fd00:ec2::254]:80", fmt.Sprintf("http://127.0.0.1:%d", port)} {
					code, msg := xxlPost(t, s.base, "/api/registry", beat("legacy", addr), token(trustGlobalToken))
					require.Equal(t, 500, code, addr)
					require.Contains(t, msg, "outbound policy", addr)
				}
				require.Zero(t, registered("legacy"))
			})
			t.Run("Java, Go and Python style registrations with the right token work", func(t *testing.T) {
				code, msg := xxlPost(t, s.base, "/xxl-job-admin/api/registry", beat("legacy", "http://127.0.0.1:9901/"), token(trustGlobalToken)) // Java 2.x-3.4
				require.Equal(t, 200, code, msg)
				code, msg = xxlPost(t, s.base, "/api/registry", beat("legacy", "http://127.0.0.1:9902"), token(trustGlobalToken)) // Go client
				require.Equal(t, 200, code, msg)
				code, msg = xxlPost(t, s.base, "/api/registry", beat("legacy", "http://127.0.0.1:9903"), map[string]string{ // Python client
					"XXL-JOB-ACCESS-TOKEN": trustGlobalToken, "Content-Type": "application/json"})
				require.Equal(t, 200, code, msg)
				code, msg = xxlPost(t, s.base, "/xxl-job-admin/api/registry", beat("orders", "http://127.0.0.1:9904/"), // Java 3.5
					map[string]string{"XXL-JOB-ACCESS-TOKEN": trustOrdersToken, "XXL-JOB-APPNAME": "orders"})
				require.Equal(t, 200, code, msg)
				require.Equal(t, 3, registered("legacy"))
				require.Equal(t, 2, registered("orders"))
				code, msg = xxlPost(t, s.base, "/api/registryRemove", beat("orders", "http://127.0.0.1:9904/"), token(trustOrdersToken))
				require.Equal(t, 200, code, msg)
			})

			ordersJob := job(ordersID, "orders-wait", "wait", map[string]any{"pinned_targets": []string{ordersAddr}})
			ordersRun := trigger(ordersJob, "db-password=hunter2")
			waitRun(ordersRun, "running")

			t.Run("a callback for another group's run is refused", func(t *testing.T) {
				code, msg := xxlPost(t, s.base, "/api/callback", []map[string]any{{"logId": ordersRun, "logDateTim": 0, "handleCode": 200, "handleMsg": "forged"}}, token(trustGlobalToken))
				require.Equal(t, 500, code)
				require.Contains(t, msg, fmt.Sprintf("%d (other_group)", ordersRun))
				r := runOf(ordersRun)
				require.Equal(t, "running", r["state"])
				require.NotEqual(t, "forged", r["message"])
			})
			t.Run("a callback for a local run is refused", func(t *testing.T) {
				napJob := job(payrollID, "nap", "", map[string]any{"pinned_targets": []string{"local://nap"}, "child_job_ids": []int64{}})
				napRun := trigger(napJob, "")
				waitRun(napRun, "running")
				code, msg := xxlPost(t, s.base, "/api/callback", map[string]any{"callbackList": []map[string]any{{"logId": napRun, "handleCode": 200, "handleMsg": "forged"}}}, token(trustGlobalToken))
				require.Equal(t, 500, code)
				require.Contains(t, msg, fmt.Sprintf("%d (not_an_http_run)", napRun))
				require.Equal(t, "running", runOf(napRun)["state"])
				r := waitRun(napRun, "succeeded", "failed")
				require.Equal(t, "succeeded", r["state"], "the process's own exit decides")
				require.NotEqual(t, "forged", r["message"])
			})
			t.Run("the group's own executor reports its run", func(t *testing.T) {
				close(release)
				r := waitRun(ordersRun, "succeeded", "failed")
				require.Equal(t, "succeeded", r["state"])
			})

			t.Run("a redirecting executor fails the attempt and is not followed", func(t *testing.T) {
				var internalHits atomic.Int32
				internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					internalHits.Add(1)
					_, _ = w.Write([]byte(`{"code":200,"msg":"internal-secret"}`))
				}))
				defer internal.Close()
				redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, internal.URL+"/latest/meta-data/", http.StatusFound)
				}))
				defer redirector.Close()
				gid := group(map[string]any{"app_name": "redirected", "members": []string{redirector.URL}})
				r := waitRun(trigger(job(gid, "redirected", "h", nil), "p"), "failed")
				require.Contains(t, r["message"], "redirect")
				require.NotContains(t, r["message"], "internal-secret")
				require.Zero(t, internalHits.Load())
			})
			t.Run("a static member on a denied address is refused when saved", func(t *testing.T) {
				code, body := s.call("POST", "/api/v1/groups", map[string]any{"app_name": "metadata", "members": []string{"http://169.254.169.254/"}}, nil)
				require.Equal(t, 400, code, "%v", body)
				require.Contains(t, fmt.Sprint(body), "members[0]")
			})
			t.Run("params never become options of a local command", func(t *testing.T) {
				envJob := job(payrollID, "env", "", map[string]any{"pinned_targets": []string{"local://env"}})
				id := trigger(envJob, `-S/bin/sh -c "id"`)
				waitRun(id, "succeeded", "failed")
				_, lg := s.call("GET", fmt.Sprintf("/api/v1/runs/%d/log?from_line=1", id), nil, nil)
				require.NotContains(t, lg["content"], "uid=")
			})
			t.Run("a Lambda function outside the allow-list is refused when saved", func(t *testing.T) {
				code, body := s.call("POST", "/api/v1/groups", map[string]any{"app_name": "stolen-fn", "members": []string{"arn:aws:lambda:us-east-1:999999999999:function:billing-close"}}, nil)
				require.Equal(t, 400, code, "%v", body)
				require.Contains(t, fmt.Sprint(body), "members[0]")
				require.Contains(t, fmt.Sprint(body), "allowed_functions")
				code, body = s.call("POST", "/api/v1/jobs", map[string]any{"group_id": legacyID, "name": "pinned-fn", "schedule_type": "none", "time_zone": "UTC",
					"pinned_targets": []string{"lambda://us-east-1/payroll-export"}}, nil)
				require.Equal(t, 400, code, "%v", body)
				require.Contains(t, fmt.Sprint(body), "pinned_targets[0]")
				fnGroup := group(map[string]any{"app_name": "billing-fns", "members": []string{"lambda://us-east-1/billing-close"}})
				code, g := s.call("GET", fmt.Sprintf("/api/v1/groups/%d", fnGroup), nil, nil)
				require.Equal(t, 200, code)
				require.Equal(t, false, g["accept_registrations"], "a Lambda-only group takes no registrations by default")
			})
			t.Run("secrets and files at rest", func(t *testing.T) {
				var stored, runSecret string
				require.NoError(t, db.DB().QueryRow("SELECT access_token FROM job_groups WHERE id = ?", ordersID).Scan(&stored))
				require.NotContains(t, stored, trustOrdersToken)
				require.True(t, strings.HasPrefix(stored, "rjenc:v1:"), stored)
				require.NoError(t, db.DB().QueryRow("SELECT value FROM settings WHERE name = 'run_token_secret'").Scan(&runSecret))
				require.True(t, strings.HasPrefix(runSecret, "rjenc:v1:"), runSecret)
				if sqlitePath != "" {
					for _, p := range []string{sqlitePath, sqlitePath + "-wal"} {
						fi, err := os.Stat(p)
						require.NoError(t, err)
						require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), p)
					}
				}
			})
			t.Run("metrics count the refusals", func(t *testing.T) {
				resp, err := http.Get(s.base + "/metrics")
				require.NoError(t, err)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.Contains(t, string(body), `ringjob_executor_requests_refused_total{endpoint="callback",reason="other_group"} 1`)
				require.Contains(t, string(body), `ringjob_executor_requests_refused_total{endpoint="registry",reason="registrations_closed"} 1`)
			})

			// Replacing api.admin_token revokes the old one at the next start.
			s.stop()
			s2 := startServerWith(t, dbURL, trustAdminToken2, port, extra)
			code, _ := s2.call("GET", "/api/v1/groups", nil, nil)
			require.Equal(t, 200, code, "the new configured token works")
			s2.token = trustAdminToken
			code, _ = s2.call("GET", "/api/v1/groups", nil, nil)
			require.Equal(t, 401, code, "the replaced token is revoked")
			s2.stop()
		})
	}
}

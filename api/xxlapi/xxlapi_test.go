package xxlapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/api/xxlapi"
	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
	httptarget "github.com/ringjob/ringjob/targets/http"
)

func TestMain(m *testing.M) { dbtest.Main(m, dbtest.IgnoreFasthttp...) }

type bundle struct {
	st  *store.Store
	app *fiber.App
	ex  *service.Executors
	job store.Job
}

func setup(t *testing.T, dialect string) *bundle {
	t.Helper()
	return setupWith(t, dialect, nil)
}

// setupWith is setup with the executor service's options changed by opts.
func setupWith(t *testing.T, dialect string, opts func(*service.ExecutorsOptions)) *bundle {
	t.Helper()
	ctx := context.Background()
	st := storetest.Open(t, dialect)
	drivers := targets.NewRegistry()
	httpDriver := httptarget.New(httptarget.Config{})
	drivers.Register("http", httpDriver)
	drivers.Register("https", httpDriver)
	sched, err := scheduler.New(scheduler.Options{Store: st, Drivers: drivers})
	require.NoError(t, err)
	log := logrus.New()
	log.SetOutput(io.Discard)
	eo := service.ExecutorsOptions{Store: st, Sink: sched.Sink(), Drivers: drivers, Log: logrus.NewEntry(log)}
	if opts != nil {
		opts(&eo)
	}
	ex := service.NewExecutors(eo)
	_, _, err = ex.EnsureToken(ctx, "global-token-0123456789")
	require.NoError(t, err)
	require.NoError(t, ex.EnsureRunSecret(ctx))
	app := fiber.New()
	xxlapi.Mount(app, ex, logrus.NewEntry(log))
	g, err := st.GroupCreate(ctx, store.GroupCreateParams{AppName: "xxl-job-executor-sample", GroupExecutorSettings: store.GroupExecutorSettings{AcceptRegistrations: true}, NowMs: 1})
	require.NoError(t, err)
	j, err := st.JobCreate(ctx, store.JobCreateParams{JobFields: store.JobFields{GroupID: g.ID, Name: "j", ScheduleType: "none", TimeZone: "UTC", ShardCount: 1}, NowMs: 1})
	require.NoError(t, err)
	return &bundle{st: st, app: app, ex: ex, job: j}
}

// post sends a request the way executors do and decodes the envelope.
func (b *bundle) post(t *testing.T, path, body string, headers map[string]string) map[string]any {
	t.Helper()
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json;charset=UTF-8")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := b.app.Test(req, -1)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, "XXL-JOB answers inside HTTP 200")
	raw, _ := io.ReadAll(resp.Body)
	var env map[string]any
	require.NoError(t, json.Unmarshal(raw, &env), "%s", raw)
	require.Contains(t, env, "content", "2.x executors read content")
	require.Contains(t, env, "data", "3.x executors read data")
	return env
}

func (b *bundle) runningRun(t *testing.T) store.Run {
	t.Helper()
	ctx := context.Background()
	r, _, err := b.st.RunCreate(ctx, store.RunCreateParams{JobID: b.job.ID, GroupID: b.job.GroupID, ScheduledMs: 1000, TriggerType: kind.TriggerManual, Owner: "n", CreatedMs: 1})
	require.NoError(t, err)
	claimed, err := b.st.RunClaimBatch(ctx, store.RunClaimParams{IDs: []int64{r.ID}, Owner: "n", NowMs: 1000})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	_, err = b.st.RunUpdateBatch(ctx, store.RunUpdateBatchParams{FromStates: []kind.RunState{kind.RunDispatching}, Updates: []store.RunUpdate{{ID: r.ID, State: kind.RunRunning, Target: "http://10.0.0.5:9999"}}})
	require.NoError(t, err)
	return r
}

var token = map[string]string{"XXL-JOB-ACCESS-TOKEN": "global-token-0123456789"}

func TestRegistryWireFormat(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect)
			ctx := context.Background()
			// Java 2.x–3.4: registryValue with a trailing slash, under /xxl-job-admin.
			env := b.post(t, "/xxl-job-admin/api/registry", `{"registryGroup":"EXECUTOR","registryKey":"xxl-job-executor-sample","registryValue":"http://10.0.0.5:9999/"}`, token)
			require.EqualValues(t, 200, env["code"], "%v", env)
			// The Go client: no trailing slash, admin without the context path.
			env = b.post(t, "/api/registry", `{"registryGroup":"EXECUTOR","registryKey":"xxl-job-executor-sample","registryValue":"http://10.0.0.4:9999"}`, token)
			require.EqualValues(t, 200, env["code"])
			live, err := b.ex.List(ctx, "xxl-job-executor-sample", 90_000)
			require.NoError(t, err)
			require.Len(t, live, 2)
			require.Equal(t, "http://10.0.0.4:9999", live[0].Address, "sorted, trailing slash dropped")
			require.Equal(t, "http://10.0.0.5:9999", live[1].Address)

			env = b.post(t, "/api/registryRemove", `{"registryGroup":"EXECUTOR","registryKey":"xxl-job-executor-sample","registryValue":"http://10.0.0.5:9999/"}`, token)
			require.EqualValues(t, 200, env["code"])
			live, _ = b.ex.List(ctx, "", 90_000)
			require.Len(t, live, 1)

			for _, bad := range []string{
				`{"registryGroup":"EXECUTOR","registryKey":"","registryValue":"http://x:1"}`,
				`{"registryGroup":"EXECUTOR","registryKey":"a","registryValue":"javascript:alert(1)"}`,
				`{"registryGroup":"EXECUTOR","registryKey":"a'; DROP TABLE executor_registry; --","registryValue":"ftp://x"}`,
				`not json`,
			} {
				env = b.post(t, "/api/registry", bad, token)
				require.EqualValues(t, 500, env["code"], bad)
				require.Contains(t, env["msg"], "Illegal Argument.", bad)
			}
			live, _ = b.ex.List(ctx, "", 90_000)
			require.Len(t, live, 1, "bad beats change nothing")
		})
	}
}

func TestTokenChecks(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite")
	body := `{"registryGroup":"EXECUTOR","registryKey":"app","registryValue":"http://x:1"}`
	for name, hdr := range map[string]map[string]string{
		"missing": nil,
		"wrong":   {"XXL-JOB-ACCESS-TOKEN": "default_token"},
	} {
		env := b.post(t, "/api/registry", body, hdr)
		require.EqualValues(t, 500, env["code"], name)
		require.Equal(t, "The access token is wrong.", env["msg"], name)
	}
	env := b.post(t, "/api/registry", "", token)
	require.Equal(t, "invalid request, requestBody empty.", env["msg"])

	// XXL-JOB 3.5: a group with its own token; the app name header selects it.
	ctx := context.Background()
	g, err := b.st.GroupCreate(ctx, store.GroupCreateParams{AppName: "orders", NowMs: 1})
	require.NoError(t, err)
	require.NoError(t, b.st.GroupSetExecutorSettings(ctx, g.ID, store.GroupExecutorSettings{AccessToken: "orders-token", Protocol: "3.5", AcceptRegistrations: true}))
	env = b.post(t, "/api/registry", `{"registryGroup":"EXECUTOR","registryKey":"orders","registryValue":"http://o:1"}`,
		map[string]string{"XXL-JOB-APPNAME": "orders", "XXL-JOB-ACCESS-TOKEN": "orders-token"})
	require.EqualValues(t, 200, env["code"], "%v", env)
	env = b.post(t, "/api/registry", `{"registryGroup":"EXECUTOR","registryKey":"orders","registryValue":"http://o:1"}`,
		map[string]string{"XXL-JOB-APPNAME": "orders", "XXL-JOB-ACCESS-TOKEN": "global-token-0123456789"})
	require.Equal(t, "The access token is wrong.", env["msg"], "the group's own token is required")
	appName, tok, v35, err := b.ex.Auth(targets.WithGroup(ctx, g.ID), "http://o:1/")
	require.NoError(t, err)
	require.Equal(t, "orders", appName)
	require.Equal(t, "orders-token", tok)
	require.True(t, v35)
}

func TestCallbackWireFormats(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect)
			ctx := context.Background()
			cases := []struct {
				name, body string
				state      kind.RunState
			}{
				// Java 2.x–3.4: a plain array, logDateTim spelled without the e.
				{"java-2.x", `[{"logId":%d,"logDateTim":1780315205000,"handleCode":200,"handleMsg":null}]`, kind.RunSucceeded},
				// xxl-job-executor-go: the extra executeResult object.
				{"go-client", `[{"logId":%d,"logDateTim":1780315205000,"executeResult":{"code":500,"msg":"boom"},"handleCode":500,"handleMsg":"task panic:boom"}]`, kind.RunFailed},
				// 3.5: {"callbackList": [...]} with logDateTime.
				{"java-3.5", `{"callbackList":[{"logId":%d,"logDateTime":1780315205000,"handleCode":502,"handleMsg":"job execute timeout "}]}`, kind.RunTimedOut},
				// The message is never read: a 500 that says "killed" is a
				// failure, as XXL-JOB records it; only a kill the server sent
				// and the executor accepted makes a run killed.
				{"killed in the message", `[{"logId":%d,"logDateTim":0,"handleCode":500,"handleMsg":"scheduling center kill job. [job running, killed]"}]`, kind.RunFailed},
				{"OOM killer in the message", `[{"logId":%d,"logDateTim":0,"handleCode":500,"handleMsg":"child process was killed by the OOM killer"}]`, kind.RunFailed},
				// Codes other than 200 and 502 are failures, as in XXL-JOB.
				{"other code", `[{"logId":%d,"logDateTim":0,"handleCode":404,"handleMsg":"killed"}]`, kind.RunFailed},
			}
			for _, tc := range cases {
				r := b.runningRun(t)
				env := b.post(t, "/api/callback", fmt.Sprintf(tc.body, r.ID), token)
				require.EqualValues(t, 200, env["code"], "%s: %v", tc.name, env)
				got, err := b.st.RunGet(ctx, r.ID)
				require.NoError(t, err)
				require.Equal(t, tc.state, got.State, tc.name)
			}

			// The first callback wins.
			r := b.runningRun(t)
			b.post(t, "/api/callback", fmt.Sprintf(`[{"logId":%d,"handleCode":200,"handleMsg":"first"}]`, r.ID), token)
			env := b.post(t, "/api/callback", fmt.Sprintf(`[{"logId":%d,"handleCode":500,"handleMsg":"second"}]`, r.ID), token)
			require.EqualValues(t, 200, env["code"])
			got, _ := b.st.RunGet(ctx, r.ID)
			require.Equal(t, kind.RunSucceeded, got.State)
			require.Equal(t, "first", got.Message)

			// Unknown runs are ignored; a wrong token records nothing.
			env = b.post(t, "/api/callback", `[{"logId":999999,"handleCode":200}]`, token)
			require.EqualValues(t, 200, env["code"])
			r = b.runningRun(t)
			env = b.post(t, "/api/callback", fmt.Sprintf(`[{"logId":%d,"handleCode":200}]`, r.ID), map[string]string{"XXL-JOB-ACCESS-TOKEN": "nope"})
			require.EqualValues(t, 500, env["code"])
			got, _ = b.st.RunGet(ctx, r.ID)
			require.Equal(t, kind.RunRunning, got.State)
		})
	}
}

func TestRunTokenCallback(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite")
	ctx := context.Background()
	r := b.runningRun(t)
	other := b.runningRun(t)
	body := fmt.Sprintf(`{"callbackList":[{"logId":%d,"logDateTime":1,"handleCode":200,"handleMsg":"from lambda"}]}`, r.ID)
	env := b.post(t, "/api/callback", body, map[string]string{xxlapi.RunTokenHeader: b.ex.RunToken(other.ID)})
	require.EqualValues(t, 500, env["code"], "another run's token does not fit")
	require.Contains(t, env["msg"], fmt.Sprintf("%d (wrong_run_token)", r.ID))
	env = b.post(t, "/api/callback", body, map[string]string{xxlapi.RunTokenHeader: b.ex.RunToken(r.ID)})
	require.EqualValues(t, 200, env["code"], "%v", env)
	got, err := b.st.RunGet(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, kind.RunSucceeded, got.State)
	require.Equal(t, "from lambda", got.Message)
}

// TestRegistryTrust registers as an attacker would, holding only the global
// executor token, and checks that groups that did not ask for it are not
// joined.
func TestRegistryTrust(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect)
			ctx := context.Background()
			_, err := b.st.GroupCreate(ctx, store.GroupCreateParams{AppName: "payroll", Members: []string{"local://pay"}, NowMs: 1})
			require.NoError(t, err)
			_, err = b.st.GroupCreate(ctx, store.GroupCreateParams{AppName: "orders", NowMs: 1,
				GroupExecutorSettings: store.GroupExecutorSettings{AccessToken: "orders-token-0123456789", Protocol: "3.5", AcceptRegistrations: true}})
			require.NoError(t, err)
			beat := func(app string) string {
				return fmt.Sprintf(`{"registryGroup":"EXECUTOR","registryKey":%q,"registryValue":"http://10.9.9.9:9999/"}`, app)
			}
			for _, tc := range []struct {
				name, body string
				hdr        map[string]string
				msg        string
			}{
				{"a group that does not accept registrations", beat("payroll"), token, "does not accept registered executors"},
				{"a group with its own token, with the global token", beat("orders"), token, "The access token is wrong."},
				{"the body's app name, not the header's, is checked", beat("orders"),
					map[string]string{"XXL-JOB-APPNAME": "xxl-job-executor-sample", "XXL-JOB-ACCESS-TOKEN": "global-token-0123456789"}, "The access token is wrong."},
				{"an app name without a group", beat("nobody-here"), token, "no group has this app_name"},
			} {
				env := b.post(t, "/api/registry", tc.body, tc.hdr)
				require.EqualValues(t, 500, env["code"], tc.name)
				require.Contains(t, env["msg"], tc.msg, tc.name)
			}
			live, err := b.ex.List(ctx, "", 90_000)
			require.NoError(t, err)
			require.Empty(t, live, "nothing registered")

			// The legitimate executor of orders registers with its group's token;
			// the global token cannot remove it.
			env := b.post(t, "/api/registry", beat("orders"), map[string]string{"XXL-JOB-APPNAME": "orders", "XXL-JOB-ACCESS-TOKEN": "orders-token-0123456789"})
			require.EqualValues(t, 200, env["code"], "%v", env)
			env = b.post(t, "/api/registryRemove", beat("orders"), token)
			require.EqualValues(t, 500, env["code"])
			live, err = b.ex.List(ctx, "orders", 90_000)
			require.NoError(t, err)
			require.Len(t, live, 1, "still registered")
		})
	}
}

// TestCallbackTrust reports results with the global executor token for runs
// it may not report.
func TestCallbackTrust(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect)
			ctx := context.Background()
			withTarget := func(target string) store.Run {
				r := b.runningRun(t)
				_, err := b.st.RunUpdateBatch(ctx, store.RunUpdateBatchParams{FromStates: []kind.RunState{kind.RunRunning}, Updates: []store.RunUpdate{{ID: r.ID, State: kind.RunRunning, Target: target}}})
				require.NoError(t, err)
				return r
			}
			local := withTarget("local://sleep30")
			fn := withTarget("lambda://us-east-1/billing")
			// A run of a group with its own token.
			g, err := b.st.GroupCreate(ctx, store.GroupCreateParams{AppName: "orders", NowMs: 1,
				GroupExecutorSettings: store.GroupExecutorSettings{AccessToken: "orders-token-0123456789", AcceptRegistrations: true}})
			require.NoError(t, err)
			oj, err := b.st.JobCreate(ctx, store.JobCreateParams{JobFields: store.JobFields{GroupID: g.ID, Name: "o", ScheduleType: "none", TimeZone: "UTC", ShardCount: 1}, NowMs: 1})
			require.NoError(t, err)
			orders := b.runningRun(t)
			_, err = b.st.RunUpdateBatch(ctx, store.RunUpdateBatchParams{FromStates: []kind.RunState{kind.RunRunning}, Updates: []store.RunUpdate{{ID: orders.ID, State: kind.RunRunning, Target: "http://10.0.0.7:9999"}}})
			require.NoError(t, err)
			b.job = oj
			mine := b.runningRun(t) // a run of orders, reported with orders' token below

			for _, tc := range []struct {
				name   string
				run    store.Run
				hdr    map[string]string
				reason string
			}{
				{"a local run takes no callbacks", local, token, service.RefusedNotHTTP},
				{"a Lambda run takes only its run token", fn, token, service.RefusedNotHTTP},
				{"another group's run", mine, token, service.RefusedOtherGroup},
				{"a group token for a run of the global token's group", orders, map[string]string{"XXL-JOB-ACCESS-TOKEN": "orders-token-0123456789"}, service.RefusedOtherGroup},
			} {
				env := b.post(t, "/api/callback", fmt.Sprintf(`[{"logId":%d,"handleCode":200,"handleMsg":"forged"}]`, tc.run.ID), tc.hdr)
				require.EqualValues(t, 500, env["code"], tc.name)
				require.Contains(t, env["msg"], fmt.Sprintf("%d (%s)", tc.run.ID, tc.reason), tc.name)
				got, err := b.st.RunGet(ctx, tc.run.ID)
				require.NoError(t, err)
				require.Equal(t, kind.RunRunning, got.State, tc.name)
				require.Empty(t, got.Message, tc.name)
			}

			// The right credentials still report, and a mixed batch records only
			// what the caller may report.
			env := b.post(t, "/api/callback", fmt.Sprintf(`[{"logId":%d,"handleCode":200},{"logId":%d,"handleCode":200}]`, mine.ID, local.ID),
				map[string]string{"XXL-JOB-ACCESS-TOKEN": "orders-token-0123456789"})
			require.EqualValues(t, 500, env["code"])
			got, _ := b.st.RunGet(ctx, mine.ID)
			require.Equal(t, kind.RunSucceeded, got.State)
			got, _ = b.st.RunGet(ctx, local.ID)
			require.Equal(t, kind.RunRunning, got.State)
			env = b.post(t, "/api/callback", fmt.Sprintf(`[{"logId":%d,"handleCode":200}]`, orders.ID), token)
			require.EqualValues(t, 200, env["code"], "%v", env)
		})
	}
}

// TestCallbackBeforeTheTargetIsRecorded: a fast executor may call back
// before the dispatcher has written where the run went; the callback waits
// for that record instead of trusting the caller.
func TestCallbackBeforeTheTargetIsRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite")
	ctx := context.Background()
	r, _, err := b.st.RunCreate(ctx, store.RunCreateParams{JobID: b.job.ID, GroupID: b.job.GroupID, ScheduledMs: 1000, TriggerType: kind.TriggerManual, Owner: "n", CreatedMs: 1})
	require.NoError(t, err)
	_, err = b.st.RunClaimBatch(ctx, store.RunClaimParams{IDs: []int64{r.ID}, Owner: "n", NowMs: 1000})
	require.NoError(t, err)
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = b.st.RunAcceptBatch(context.Background(), []store.RunAccept{{ID: r.ID, Target: "http://10.0.0.5:9999", Message: "accepted"}})
	}()
	env := b.post(t, "/api/callback", fmt.Sprintf(`[{"logId":%d,"handleCode":200,"handleMsg":"fast"}]`, r.ID), token)
	require.EqualValues(t, 200, env["code"], "%v", env)
	got, err := b.st.RunGet(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, kind.RunSucceeded, got.State)
}

// TestAddressBelongsToOneGroup: a holder of one group's credential cannot
// register an address another group's executor holds (the server would
// then send that executor the wrong group's jobs and token).
func TestAddressBelongsToOneGroup(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite")
	ctx := context.Background()
	orders, err := b.st.GroupCreate(ctx, store.GroupCreateParams{AppName: "orders", NowMs: 1,
		GroupExecutorSettings: store.GroupExecutorSettings{AccessToken: "orders-token-0123456789", AcceptRegistrations: true}})
	require.NoError(t, err)
	env := b.post(t, "/api/registry", `{"registryGroup":"EXECUTOR","registryKey":"orders","registryValue":"http://10.0.0.8:9999"}`,
		map[string]string{"XXL-JOB-ACCESS-TOKEN": "orders-token-0123456789"})
	require.EqualValues(t, 200, env["code"], "%v", env)
	env = b.post(t, "/api/registry", `{"registryGroup":"EXECUTOR","registryKey":"xxl-job-executor-sample","registryValue":"http://10.0.0.8:9999/"}`, token)
	require.EqualValues(t, 500, env["code"])
	require.Contains(t, env["msg"], `registered by group "orders"`)
	live, err := b.ex.List(ctx, "xxl-job-executor-sample", 90_000)
	require.NoError(t, err)
	require.Empty(t, live)
	appName, tok, _, err := b.ex.Auth(targets.WithGroup(ctx, orders.ID), "http://10.0.0.8:9999")
	require.NoError(t, err)
	require.Equal(t, "orders", appName)
	require.Equal(t, "orders-token-0123456789", tok)
}

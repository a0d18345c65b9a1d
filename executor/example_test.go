package executor_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/ringjob/ringjob/executor"
)

// fakeAdmin stands in for the Ringjob server: it accepts every call and
// passes callback bodies to got.
func fakeAdmin(got chan<- string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/api/callback" && got != nil {
			got <- string(body)
		}
		io.WriteString(w, `{"code":200,"msg":null}`)
	}))
}

// post sends what the admin sends to an executor.
func post(url, body string) string {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set(executor.HeaderAccessToken, "token-from-the-admin")
	req.Close = true
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// Mount the executor in an existing router, under a prefix, next to the
// service's own routes. The admin then calls {address}run, {address}beat ...
func Example_mount() {
	admin := fakeAdmin(nil)
	defer admin.Close()
	logDir, _ := os.MkdirTemp("", "executor-example")
	defer os.RemoveAll(logDir)

	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()

	e, err := executor.New(
		executor.WithAdminAddresses(admin.URL), // e.g. http://ringjob:8080
		executor.WithAccessToken("token-from-the-admin"),
		executor.WithAppName("billing"),
		executor.WithAddress(srv.URL+"/xxl/"), // what the admin calls, prefix included
		executor.WithLogDir(logDir),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	mux.Handle("/xxl/", http.StripPrefix("/xxl", e.Handler()))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

	ctx := context.Background()
	if err := e.Start(ctx); err != nil { // heartbeat, callbacks, log retention
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx) // leave the registry, drain the runs, report them

	fmt.Println(post(srv.URL+"/xxl/beat", ""))
	fmt.Println(post(srv.URL+"/xxl/idleBeat", `{"jobId":1}`))
	// Output:
	// {"code":200,"msg":"Success","content":null,"data":null}
	// {"code":200,"msg":"Success","content":null,"data":null}
}

// Register a handler by name; a BEAN job whose JobHandler is that name runs
// it. The result goes back to the admin as a callback.
func Example_handler() {
	callbacks := make(chan string, 1)
	admin := fakeAdmin(callbacks)
	defer admin.Close()
	logDir, _ := os.MkdirTemp("", "executor-example")
	defer os.RemoveAll(logDir)

	e, err := executor.New(
		executor.WithAdminAddresses(admin.URL),
		executor.WithAccessToken("token-from-the-admin"),
		executor.WithAppName("billing"),
		executor.WithAddress("http://127.0.0.1:9999/"),
		executor.WithLogDir(logDir),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	e.Register("close-day", func(ctx context.Context, job *executor.Job) error {
		// Lines go to the run's log file, which the admin reads through /log.
		job.Log("closing %s, shard %d of %d", job.Params, job.ShardIndex, job.ShardTotal)
		if job.Params == "" {
			return fmt.Errorf("no day given") // handle code 500
		}
		return ctx.Err() // nil: handle code 200
	})
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	fmt.Println(post(srv.URL+"/run", `{"jobId":1,"executorHandler":"close-day","executorParams":"2024-03-10",
		"executorBlockStrategy":"SERIAL_EXECUTION","executorTimeout":60,"logId":42,"logDateTime":1710068400000,
		"glueType":"BEAN","broadcastIndex":0,"broadcastTotal":1}`))
	fmt.Println(<-callbacks)
	// Output:
	// {"code":200,"msg":"Success","content":null,"data":null}
	// [{"logId":42,"logDateTim":1710068400000,"logDateTime":1710068400000,"handleCode":200,"handleMsg":null}]
}

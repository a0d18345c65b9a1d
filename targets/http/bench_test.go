package httptarget_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ringjob/ringjob/targets"
	httptarget "github.com/ringjob/ringjob/targets/http"
)

// BenchmarkRun sends triggers to a local executor that answers at once, over
// the driver's own client and over net/http (as the driver set it up
// before): the send path's CPU and allocations per fire.
func BenchmarkRun(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		_, _ = w.Write([]byte(`{"code":200,"msg":null}`))
	}))
	b.Cleanup(srv.Close)
	dialer := &net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}
	netHTTP := &http.Client{Transport: httptarget.NewTransport(dialer, 10*time.Second, 0), Timeout: 10 * time.Second}
	for name, d := range map[string]*httptarget.Driver{
		"plain":    httptarget.New(httptarget.Config{AccessToken: "tok"}),
		"net-http": httptarget.New(httptarget.Config{AccessToken: "tok", Client: netHTTP}),
	} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var id int64
				for pb.Next() {
					id++
					ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					_, err := d.Run(ctx, targets.Request{Target: srv.URL, RunID: id, JobID: 7, Handler: "noop", ScheduledAt: time.UnixMilli(1_700_000_000_000)})
					cancel()
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

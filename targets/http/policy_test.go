package httptarget_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/egress"
	"github.com/ringjob/ringjob/targets"
	httptarget "github.com/ringjob/ringjob/targets/http"
)

// TestOutboundPolicy dispatches as the server does, through the outbound
// policy: to a redirecting executor, to one on an address the policy
// denies, to one that answers with terminal escapes, and to a plain one on
// an allowed address.
func TestOutboundPolicy(t *testing.T) {
	t.Parallel()
	var internalHits atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internalHits.Add(1)
		_, _ = w.Write([]byte(`{"code":200,"msg":"secret-internal-answer"}`))
	}))
	defer internal.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/latest/meta-data/", http.StatusFound)
	}))
	defer redirecting.Close()
	escapes := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"code":500,"msg":"no\u001b[2J\u001b]0;pwned\u0007 such handler\r"}`))
	}))
	defer escapes.Close()
	good := &rawExecutor{t: t, token: "tok-0123456789abcdef", dialect: "3.x"}
	goodSrv := httptest.NewServer(good)
	defer goodSrv.Close()

	_, internalPort, _ := net.SplitHostPort(internal.Listener.Addr().String())
	p, err := egress.New(egress.Config{DeniedCIDRs: []string{"127.0.0.2/32"}}, "127.0.0.1:"+internalPort)
	require.NoError(t, err)
	d := httptarget.New(httptarget.Config{AccessToken: "tok-0123456789abcdef", Policy: p, RequestTimeout: 3 * time.Second})
	ctx := context.Background()
	run := func(target string) (targets.Dispatch, error) {
		return d.Run(ctx, targets.Request{RunID: 7, JobID: 1, Target: target, Handler: "h", ShardTotal: 1})
	}

	t.Run("a redirecting executor fails the attempt and the redirect is not followed", func(t *testing.T) {
		_, err := run(redirecting.URL)
		require.ErrorIs(t, err, egress.ErrRedirect)
		require.Contains(t, err.Error(), "HTTP 302 redirect to")
		require.NotContains(t, err.Error(), "secret-internal-answer")
		require.Zero(t, internalHits.Load())
	})
	t.Run("an executor on a denied address is refused when saved and when dialed", func(t *testing.T) {
		_, port, _ := net.SplitHostPort(goodSrv.Listener.Addr().String())
		target := "http://127.0.0.2:" + port
		require.ErrorContains(t, d.ValidateTarget(target), "127.0.0.2/32")
		_, err := run(target)
		require.ErrorIs(t, err, egress.ErrDenied)
		require.ErrorContains(t, d.ValidateTarget("http://169.254.169.254/"), "denied range")
		require.ErrorContains(t, d.ValidateTarget(internal.URL), "own listener")
	})
	t.Run("an executor's message loses its control characters", func(t *testing.T) {
		_, err := run(escapes.URL)
		require.Error(t, err)
		require.Contains(t, err.Error(), "no[2J]0;pwned such handler")
		require.NotContains(t, err.Error(), "\x1b")
	})
	t.Run("an executor on an allowed address runs", func(t *testing.T) {
		require.NoError(t, d.ValidateTarget(goodSrv.URL))
		res, err := run(goodSrv.URL)
		require.NoError(t, err)
		require.Nil(t, res.Done)
		require.Len(t, good.requests, 1)
	})
}

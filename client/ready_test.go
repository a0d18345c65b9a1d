package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/client"
)

func TestWaitReady(t *testing.T) {
	t.Parallel()
	t.Run("waits until the server is ready", func(t *testing.T) {
		t.Parallel()
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			require.Equal(t, "/readyz", r.URL.Path)
			if calls.Add(1) < 3 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		}))
		defer srv.Close()
		require.NoError(t, client.New(srv.URL, "t", nil).WaitReady(context.Background(), time.Millisecond))
		require.EqualValues(t, 3, calls.Load())
	})
	t.Run("gives up with what it last saw", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		defer srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := client.New(srv.URL, "t", nil).WaitReady(ctx, time.Millisecond)
		require.ErrorContains(t, err, "was not ready in time")
		require.ErrorContains(t, err, "503")
	})
}

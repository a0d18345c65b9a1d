package egress_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/alarm"
	"github.com/ringjob/ringjob/internal/egress"
	"github.com/ringjob/ringjob/internal/kind"
)

// TestAlarmWebhooksGoThroughThePolicy: the server builds its alarm senders
// on the policy's transport; a webhook whose host resolves to a metadata
// address is never connected to, and a redirecting webhook is not followed.
func TestAlarmWebhooksGoThroughThePolicy(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	dns := startDNS(t, map[string][]string{"hooks.attacker.test": {"169.254.169.254"}})
	p := policy(t, egress.Config{}, "", dns)
	senders, err := alarm.BuildWith(alarm.Config{Channels: map[string]alarm.ChannelConfig{
		"metadata": {Type: kind.AlarmChannel("webhook"), URL: "http://hooks.attacker.test:" + port + "/hook"},
		"redirect": {Type: kind.AlarmChannel("webhook"), URL: redirector.URL + "/hook"},
	}}, alarm.Deps{HTTPClient: &http.Client{Transport: p.Transport(nil, nil)}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range senders {
		err := s.Send(ctx, alarm.Event{Kind: kind.AlarmFailure, JobID: 1, JobName: "j", RunID: 2})
		require.Error(t, err, s.Name())
		if s.Name() == "metadata" {
			require.ErrorContains(t, err, "169.254.169.254")
		}
	}
	require.Zero(t, hits.Load(), "nothing reached the addresses behind the policy")
}

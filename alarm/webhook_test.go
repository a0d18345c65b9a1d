package alarm

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
)

func TestWebhook(t *testing.T) {
	t.Parallel()

	newWebhook := func(t *testing.T, sink *httpSink, secret string) *Webhook {
		t.Helper()
		w, err := NewWebhook(WebhookConfig{
			Name:    "pager",
			URL:     sink.url("/hooks/ringjob?token=" + webhookToken),
			Headers: map[string]string{"Authorization": bearerToken, "X-Team": "billing"},
			Secret:  secret,
		}, sink.deps(clockwork.NewFakeClockAt(testStart)))
		require.NoError(t, err)
		return w
	}

	t.Run("posts the event as snake_case JSON with RFC 3339 times", func(t *testing.T) {
		t.Parallel()
		sink := newHTTPSink(t)
		sink.answer(204, "")
		w := newWebhook(t, sink, "")
		require.NoError(t, w.Send(ctxT(t), failureEvent()))

		req := sink.last(t)
		require.Equal(t, "POST", req.Method)
		require.Equal(t, "/hooks/ringjob", req.Path)
		require.Equal(t, "token="+webhookToken, req.Query)
		want := `{"kind":"failure","job_id":42,"job_name":"billing-close","group_name":"billing","run_id":9001,` +
			`"state":"failed","code":500,"message":"shard 17: upstream ledger returned 503","attempt":4,` +
			`"scheduled_at":"2026-03-29T02:00:00+02:00","finished_at":"2026-03-29T02:10:00+02:00",` +
			`"console_url":"https://ringjob.example.com/runs/9001","subject":"[Ringjob] job billing-close failed",` +
			`"text":"Ringjob job billing-close failed: run #9001 ended in state failed.\n\nGroup:         billing\n` +
			`Job:           #42 billing-close\nRun:           #9001\nState:         failed\nCode:          500\n` +
			`Attempt:       4\nScheduled at:  2026-03-29T02:00:00+02:00\nFinished at:   2026-03-29T02:10:00+02:00\n` +
			`Link:          https://ringjob.example.com/runs/9001\n\nMessage:\nshard 17: upstream ledger returned 503\n"}`
		require.Equal(t, want, string(req.Body), "exact body")

		require.Equal(t, "application/json; charset=utf-8", req.Header.Get("Content-Type"))
		require.Equal(t, bearerToken, req.Header.Get("Authorization"))
		require.Equal(t, "billing", req.Header.Get("X-Team"))
		require.Equal(t, "failure", req.Header.Get("X-Ringjob-Event"))
		require.Equal(t, "ringjob-alarm-42-9001-failure", req.Header.Get("Idempotency-Key"))
		require.Equal(t, "Ringjob-Alarm/1", req.Header.Get("User-Agent"))
		require.Empty(t, req.Header.Get(SignatureHeader), "no secret, no signature")
	})

	t.Run("signs the body with the secret", func(t *testing.T) {
		t.Parallel()
		sink := newHTTPSink(t)
		w := newWebhook(t, sink, webhookSecret)
		require.NoError(t, w.Send(ctxT(t), recoveryEvent()))

		req := sink.last(t)
		mac := hmac.New(sha256.New, []byte(webhookSecret))
		mac.Write(req.Body)
		require.Equal(t, "sha256="+hex.EncodeToString(mac.Sum(nil)), req.Header.Get(SignatureHeader))
		require.Equal(t, "recovery", req.Header.Get("X-Ringjob-Event"))
		body := decodeJSON(t, req.Body)
		require.Equal(t, "recovery", body["kind"])
		require.Equal(t, "[Ringjob] job billing-close recovered", body["subject"])
	})

	t.Run("unknown times are left out", func(t *testing.T) {
		t.Parallel()
		sink := newHTTPSink(t)
		w := newWebhook(t, sink, "")
		require.NoError(t, w.Send(ctxT(t), Event{Kind: kind.AlarmFailure, JobID: 1, RunID: 2}))
		body := decodeJSON(t, sink.last(t).Body)
		require.NotContains(t, body, "scheduled_at")
		require.NotContains(t, body, "finished_at")
		require.NotContains(t, body, "console_url")
	})

	t.Run("a 5xx is a failure worth retrying", func(t *testing.T) {
		t.Parallel()
		sink := newHTTPSink(t)
		sink.answer(503, "upstream busy; you sent token="+webhookToken)
		w := newWebhook(t, sink, webhookSecret)
		err := w.Send(ctxT(t), failureEvent())
		require.Error(t, err)
		require.False(t, IsPermanent(err))
		require.ErrorContains(t, err, `webhook channel "pager": POST http://127.0.0.1:`)
		require.ErrorContains(t, err, "HTTP 503: upstream busy; you sent …efgh")
		requireNoSecret(t, err.Error())
	})

	t.Run("429 and 408 are retried, other 4xx are permanent", func(t *testing.T) {
		t.Parallel()
		for status, permanent := range map[int]bool{400: true, 401: true, 404: true, 408: false, 429: false, 500: false} {
			sink := newHTTPSink(t)
			sink.answer(status, "nope")
			err := newWebhook(t, sink, "").Send(ctxT(t), failureEvent())
			var herr *HTTPError
			require.True(t, errors.As(err, &herr))
			require.Equal(t, status, herr.Status)
			require.Equal(t, permanent, IsPermanent(err), "status %d", status)
		}
	})

	t.Run("redirects are not followed", func(t *testing.T) {
		t.Parallel()
		target := newHTTPSink(t)
		sink := newHTTPSink(t)
		sink.srv.Config.Handler = http.RedirectHandler(target.url("/elsewhere"), http.StatusTemporaryRedirect)
		err := newWebhook(t, sink, "").Send(ctxT(t), failureEvent())
		require.ErrorContains(t, err, "HTTP 307: redirects are not followed; configure the final URL.")
		require.True(t, IsPermanent(err))
		require.Zero(t, target.count(), "the alarm (and its headers) went nowhere else")
	})

	t.Run("a connection error names the redacted URL only", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close()) // nothing listens there now
		w, err := NewWebhook(WebhookConfig{URL: "http://" + addr + "/hooks/" + webhookToken + "?token=" + webhookToken}, Deps{})
		require.NoError(t, err)
		err = w.Send(ctxT(t), failureEvent())
		require.Error(t, err)
		require.ErrorContains(t, err, `Post "http://`+addr+`/…efgh"`)
		require.ErrorContains(t, err, "connection refused")
		requireNoSecret(t, err.Error())
		var opErr *net.OpError
		require.True(t, errors.As(err, &opErr), "the cause stays inspectable")
	})
}

func TestWebhookConfigValidate(t *testing.T) {
	t.Parallel()
	ok := WebhookConfig{URL: "https://example.com/hook"}
	tests := []struct {
		name string
		mod  func(*WebhookConfig)
		want string
	}{
		{"missing url", func(c *WebhookConfig) { c.URL = "" }, "webhook.url is required"},
		{"not http", func(c *WebhookConfig) { c.URL = "ftp://example.com/" + webhookToken }, `webhook.url must be an http:// or https:// URL, got "ftp://example.com/…efgh"`},
		{"bad header name", func(c *WebhookConfig) { c.Headers = map[string]string{"Bad Header": "x"} }, `webhook.headers: "Bad Header" is not a valid header name`},
		{"reserved header", func(c *WebhookConfig) { c.Headers = map[string]string{"x-ringjob-signature": "x"} }, "webhook.headers: X-Ringjob-Signature is set by Ringjob"},
		{"header injection", func(c *WebhookConfig) { c.Headers = map[string]string{"X-A": "a\r\nX-B: b"} }, "webhook.headers.X-A must be one line"},
		{"negative timeout", func(c *WebhookConfig) { c.Timeout = -1 }, "webhook.timeout must not be negative"},
	}
	require.NoError(t, ok.Validate())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			err := c.Validate()
			require.ErrorIs(t, err, ErrInvalidConfig)
			require.ErrorContains(t, err, tt.want)
			requireNoSecret(t, err.Error())
		})
	}
}

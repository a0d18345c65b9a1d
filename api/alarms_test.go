package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/alarm"
)

// hookReceiver is a real HTTP server on a socket that records the alarms
// posted to it and answers with status and body.
type hookReceiver struct {
	srv    *httptest.Server
	status int
	body   string

	mu   sync.Mutex
	got  []*http.Request
	seen [][]byte
}

func newHookReceiver(t *testing.T, status int, body string) *hookReceiver {
	h := &hookReceiver{status: status, body: body}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got = append(h.got, r)
		h.seen = append(h.seen, raw)
		h.mu.Unlock()
		w.WriteHeader(h.status)
		_, _ = io.WriteString(w, h.body)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) requests() ([]*http.Request, [][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*http.Request(nil), h.got...), append([][]byte(nil), h.seen...)
}

// The secrets of the channels below: none may appear in any answer or log.
const (
	hookPathToken = "T0KEN-in-the-path-0123456789abcdef"
	hookQueryKey  = "query-key-0123456789abcdef"
	hookHeader    = "Bearer header-secret-0123456789abcdef"
	hookSignKey   = "signing-secret-0123456789abcdef"
	brokenToken   = "broken-path-token-0123456789abcdef"
)

// alarmChannels builds the server's alarm channels: "pager", a webhook to
// a receiver that accepts, and "broken", one to a receiver that refuses.
func alarmChannels(t *testing.T) (*alarm.Dispatcher, *hookReceiver, *hookReceiver) {
	ok := newHookReceiver(t, 200, "ok")
	bad := newHookReceiver(t, 500, "mailbox full, try later")
	senders, err := alarm.Build(alarm.Config{Channels: map[string]alarm.ChannelConfig{
		"pager": {Type: "webhook", URL: ok.srv.URL + "/hook/" + hookPathToken + "?key=" + hookQueryKey,
			Headers: map[string]string{"Authorization": hookHeader}, Secret: hookSignKey},
		"broken": {Type: "webhook", URL: bad.srv.URL + "/hook/" + brokenToken},
	}})
	require.NoError(t, err)
	d, err := alarm.NewDispatcher(alarm.Options{Senders: senders})
	require.NoError(t, err)
	return d, ok, bad
}

func requireNoHookSecret(t *testing.T, what string, text string) {
	t.Helper()
	for _, s := range []string{hookPathToken, hookQueryKey, "header-secret", hookSignKey, brokenToken} {
		require.NotContains(t, text, s, "%s shows a channel secret", what)
	}
}

// An admin lists the alarm channels (where they send, not their secrets)
// and sends a test alarm through each: the receiver gets one labelled test
// alarm; a refusing channel's error comes back readable; both are audited.
// Owners see the names (for the job form) but not where they send, and may
// not send tests; an unknown channel is a 404 that lists the known ones.
func TestAlarmChannelsListAndTest(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			d, ok, bad := alarmChannels(t)
			b := setup(t, dialect, setupOpts{noSched: true, alarms: d})

			list := b.call("GET", "/api/v1/alarm-channels", nil)
			require.Equal(t, 200, list.Status, "%s", list.Body)
			requireNoHookSecret(t, "GET /alarm-channels", string(list.Body))
			var chans struct {
				Items []struct {
					Name        string  `json:"name"`
					Kind        string  `json:"kind"`
					Destination *string `json:"destination"`
				} `json:"items"`
			}
			require.NoError(t, json.Unmarshal(list.Body, &chans))
			require.Len(t, chans.Items, 2)
			require.Equal(t, "broken", chans.Items[0].Name)
			require.Equal(t, "pager", chans.Items[1].Name)
			require.Equal(t, "webhook", chans.Items[1].Kind)
			require.NotNil(t, chans.Items[1].Destination)
			require.Equal(t, ok.srv.URL, *chans.Items[1].Destination, "the scheme and host only")
			require.Equal(t, bad.srv.URL, *chans.Items[0].Destination)

			// A test alarm that is delivered.
			res := b.call("POST", "/api/v1/alarm-channels/pager/test", nil)
			require.Equal(t, 200, res.Status, "%s", res.Body)
			requireNoHookSecret(t, "the test answer", string(res.Body))
			m := res.JSON(t)
			require.Equal(t, "sent", m["status"])
			require.Nil(t, m["error"])
			require.Equal(t, "pager", m["name"])
			require.NotEmpty(t, m["sent_at"])

			reqs, bodies := ok.requests()
			require.Len(t, reqs, 1, "one attempt reached the receiver")
			require.Equal(t, "/hook/"+hookPathToken, reqs[0].URL.Path)
			require.Equal(t, hookHeader, reqs[0].Header.Get("Authorization"), "the configured header is sent")
			require.Equal(t, "test", reqs[0].Header.Get("X-Ringjob-Event"))
			require.Equal(t, alarm.WebhookSign(hookSignKey, bodies[0]), reqs[0].Header.Get(alarm.SignatureHeader), "signed like a real alarm")
			var payload alarm.WebhookPayload
			require.NoError(t, json.Unmarshal(bodies[0], &payload))
			require.Equal(t, "test", string(payload.Kind))
			require.Equal(t, "[Ringjob] TEST alarm (no job failed)", payload.Subject)
			require.Contains(t, payload.Message, "test alarm sent by token:initial-admin")
			require.Contains(t, payload.Message, `"pager"`)
			require.Contains(t, payload.Text, "No job failed")

			// A channel that refuses: the answer says how, without secrets.
			res = b.call("POST", "/api/v1/alarm-channels/broken/test", nil)
			require.Equal(t, 200, res.Status, "%s", res.Body)
			requireNoHookSecret(t, "the failed test answer", string(res.Body))
			m = res.JSON(t)
			require.Equal(t, "failed", m["status"])
			require.Contains(t, m["error"], "HTTP 500")
			require.Contains(t, m["error"], "mailbox full, try later")
			breqs, _ := bad.requests()
			require.Len(t, breqs, 1, "one attempt, no retries")

			// Unknown channel.
			res = b.call("POST", "/api/v1/alarm-channels/nope/test", nil)
			require.Equal(t, 404, res.Status, "%s", res.Body)
			code, _, msg := res.errCode(t)
			require.Equal(t, "not_found", code)
			require.Contains(t, msg, `alarm channel "nope" does not exist`)
			require.Contains(t, msg, "broken, pager")

			// The audit log has both tests, with their outcome.
			audit := b.must(200, "GET", "/api/v1/audit?action=alarm_channel.test", nil)
			items := audit["items"].([]any)
			require.Len(t, items, 2)
			requireNoHookSecret(t, "the audit log", string(mustJSON(t, audit)))
			newest := items[0].(map[string]any)
			require.Equal(t, "broken", newest["object_id"])
			require.Equal(t, "alarm_channel", newest["object_type"])
			require.Equal(t, "token:initial-admin", newest["principal"])
			changes := newest["changes"].(map[string]any)
			require.Equal(t, false, changes["sent"])
			require.Contains(t, changes["error"], "HTTP 500")
			require.Equal(t, true, items[1].(map[string]any)["changes"].(map[string]any)["sent"])

			// An owner of a group sees the names, not the destinations, and
			// may not send a test; a viewer may not list them.
			gid := b.group("alarm-owners", "local://echo")
			owner := principalToken(t, b, "alarm-owner", "owner", gid)
			viewer := principalToken(t, b, "alarm-viewer", "viewer", gid)
			res = b.call("GET", "/api/v1/alarm-channels", nil, "Authorization", "Bearer "+owner)
			require.Equal(t, 200, res.Status, "%s", res.Body)
			for _, it := range res.JSON(t)["items"].([]any) {
				require.Nil(t, it.(map[string]any)["destination"], "only admins see where a channel sends")
			}
			res = b.call("POST", "/api/v1/alarm-channels/pager/test", nil, "Authorization", "Bearer "+owner)
			require.Equal(t, 403, res.Status, "%s", res.Body)
			code, _, _ = res.errCode(t)
			require.Equal(t, "permission_denied", code)
			res = b.call("GET", "/api/v1/alarm-channels", nil, "Authorization", "Bearer "+viewer)
			require.Equal(t, 403, res.Status, "%s", res.Body)
			reqs, _ = ok.requests()
			require.Len(t, reqs, 1, "the refused test sent nothing")

			requireNoHookSecret(t, "the server log", b.logs.String())
		})
	}
}

// principalToken creates a service account bound to role on group and
// returns a token of it.
func principalToken(t *testing.T, b *bundle, name, role string, group int64) string {
	t.Helper()
	sa := b.must(201, "POST", "/api/v1/service-accounts", map[string]any{"name": name})
	b.must(201, "POST", "/api/v1/role-bindings", map[string]any{"role": role, "group_id": group, "principal_id": id(sa)})
	tok := b.must(201, "POST", "/api/v1/tokens", map[string]any{"name": name, "principal_id": id(sa)})
	return tok["token"].(string)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return raw
}

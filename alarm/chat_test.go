package alarm

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
)

// chatSetup is what the chat robot tests need.
type chatSetup struct {
	sink  *httpSink
	clock *clockwork.FakeClock
}

func setupChat(t *testing.T) chatSetup {
	t.Helper()
	return chatSetup{sink: newHTTPSink(t), clock: clockwork.NewFakeClockAt(testStart)}
}

// decodeJSON decodes a request body strictly as a generic document.
func decodeJSON(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), "body: %s", body)
	return m
}

func TestSlack(t *testing.T) {
	t.Parallel()

	t.Run("posts the text message", func(t *testing.T) {
		t.Parallel()
		b := setupChat(t)
		b.sink.answer(200, "ok")
		s, err := NewSlack(SlackConfig{URL: b.sink.url("/services/T000/B000/" + slackToken)}, b.sink.deps(b.clock))
		require.NoError(t, err)
		require.Equal(t, "slack", s.Name())

		require.NoError(t, s.Send(ctxT(t), failureEvent()))
		req := b.sink.last(t)
		require.Equal(t, "POST", req.Method)
		require.Equal(t, "/services/T000/B000/"+slackToken, req.Path)
		require.Equal(t, "application/json; charset=utf-8", req.Header.Get("Content-Type"))
		want := map[string]any{"text": ":rotating_light: *[Ringjob] job billing-close failed*\n" +
			"*Group:* billing\n*Job:* #42 billing-close\n*Run:* #9001\n*State:* failed\n*Code:* 500\n*Attempt:* 4\n" +
			"*Scheduled at:* 2026-03-29T02:00:00+02:00\n*Finished at:* 2026-03-29T02:10:00+02:00\n" +
			"```shard 17: upstream ledger returned 503```\n" +
			"<https://ringjob.example.com/runs/9001|Open run #9001>"}
		require.Equal(t, want, decodeJSON(t, req.Body))
	})

	t.Run("recovery", func(t *testing.T) {
		t.Parallel()
		b := setupChat(t)
		s, err := NewSlack(SlackConfig{URL: b.sink.url("/services/T000/B000/" + slackToken)}, b.sink.deps(b.clock))
		require.NoError(t, err)
		require.NoError(t, s.Send(ctxT(t), recoveryEvent()))
		text := decodeJSON(t, b.sink.last(t).Body)["text"].(string)
		require.True(t, strings.HasPrefix(text, ":white_check_mark: *[Ringjob] job billing-close recovered*\n"), text)
	})

	t.Run("an error status is a permanent failure with Slack's reason", func(t *testing.T) {
		t.Parallel()
		b := setupChat(t)
		b.sink.answer(404, "channel_not_found")
		s, err := NewSlack(SlackConfig{Name: "oncall-slack", URL: b.sink.url("/services/T000/B000/" + slackToken)}, b.sink.deps(b.clock))
		require.NoError(t, err)
		err = s.Send(ctxT(t), failureEvent())
		require.Error(t, err)
		require.True(t, IsPermanent(err))
		var herr *HTTPError
		require.True(t, errors.As(err, &herr))
		require.Equal(t, 404, herr.Status)
		require.Contains(t, err.Error(), `slack channel "oncall-slack": POST http://127.0.0.1:`)
		require.Contains(t, err.Error(), "HTTP 404: channel_not_found")
		requireNoSecret(t, err.Error())
	})
}

func TestDingTalk(t *testing.T) {
	t.Parallel()

	t.Run("posts markdown signed with timestamp and sign", func(t *testing.T) {
		t.Parallel()
		b := setupChat(t)
		d, err := NewDingTalk(DingTalkConfig{URL: b.sink.url("/robot/send?access_token=" + dingToken), Secret: dingSecret}, b.sink.deps(b.clock))
		require.NoError(t, err)
		require.Equal(t, "dingtalk", d.Name())

		require.NoError(t, d.Send(ctxT(t), failureEvent()))
		req := b.sink.last(t)
		require.Equal(t, "/robot/send", req.Path)
		q, err := url.ParseQuery(req.Query)
		require.NoError(t, err)
		require.Equal(t, dingToken, q.Get("access_token"))
		ts := q.Get("timestamp")
		require.Equal(t, strconv.FormatInt(testStart.UnixMilli(), 10), ts, "milliseconds from the injected clock")
		// Recompute as DingTalk documents it: HmacSHA256 keyed by the secret
		// over timestamp+"\n"+secret, Base64, then URL-encoded.
		mac := hmac.New(sha256.New, []byte(dingSecret))
		mac.Write([]byte(ts + "\n" + dingSecret))
		wantSign := base64.StdEncoding.EncodeToString(mac.Sum(nil))
		require.Equal(t, wantSign, q.Get("sign"))
		require.Contains(t, req.Query, "sign="+url.QueryEscape(wantSign), "the signature is URL-encoded in the query")

		want := map[string]any{
			"msgtype": "markdown",
			"markdown": map[string]any{
				"title": "[Ringjob] job billing-close failed",
				"text": "### [Ringjob] job billing-close failed\n\n" +
					"**Group:** billing  \n**Job:** #42 billing-close  \n**Run:** #9001  \n**State:** failed  \n" +
					"**Code:** 500  \n**Attempt:** 4  \n**Scheduled at:** 2026-03-29T02:00:00+02:00  \n" +
					"**Finished at:** 2026-03-29T02:10:00+02:00  \n\n" +
					"> shard 17: upstream ledger returned 503\n\n" +
					"[Open run #9001](https://ringjob.example.com/runs/9001)\n",
			},
		}
		require.Equal(t, want, decodeJSON(t, req.Body))
	})

	t.Run("no secret, no signature", func(t *testing.T) {
		t.Parallel()
		b := setupChat(t)
		d, err := NewDingTalk(DingTalkConfig{URL: b.sink.url("/robot/send?access_token=" + dingToken)}, b.sink.deps(b.clock))
		require.NoError(t, err)
		require.NoError(t, d.Send(ctxT(t), recoveryEvent()))
		req := b.sink.last(t)
		require.Equal(t, "access_token="+dingToken, req.Query)
		md := decodeJSON(t, req.Body)["markdown"].(map[string]any)
		require.Equal(t, "[Ringjob] job billing-close recovered", md["title"])
	})

	t.Run("a nonzero errcode is a failure", func(t *testing.T) {
		t.Parallel()
		b := setupChat(t)
		b.sink.answer(200, `{"errcode":310000,"errmsg":"sign not match, more: [https://ding-doc.dingtalk.com/doc#/serverapi2/qf2nxq]"}`)
		d, err := NewDingTalk(DingTalkConfig{Name: "ops-ding", URL: b.sink.url("/robot/send?access_token=" + dingToken), Secret: dingSecret}, b.sink.deps(b.clock))
		require.NoError(t, err)
		err = d.Send(ctxT(t), failureEvent())
		require.Error(t, err)
		require.False(t, IsPermanent(err), "errcodes such as 130101 (too fast) pass")
		var herr *HTTPError
		require.True(t, errors.As(err, &herr))
		require.Equal(t, 310000, herr.Code)
		require.Contains(t, err.Error(), `dingtalk channel "ops-ding"`)
		require.Contains(t, err.Error(), "HTTP 200 but the robot refused the message: code 310000: {\"errcode\":310000,\"errmsg\":\"sign not match")
		requireNoSecret(t, err.Error())
	})

	t.Run("an answer that is not DingTalk's JSON is a failure", func(t *testing.T) {
		t.Parallel()
		b := setupChat(t)
		b.sink.answer(200, "<html>captive portal</html>")
		d, err := NewDingTalk(DingTalkConfig{URL: b.sink.url("/robot/send?access_token=" + dingToken)}, b.sink.deps(b.clock))
		require.NoError(t, err)
		err = d.Send(ctxT(t), failureEvent())
		require.ErrorContains(t, err, "unexpected body")
		require.ErrorContains(t, err, "captive portal")
		requireNoSecret(t, err.Error())
	})
}

func TestWeCom(t *testing.T) {
	t.Parallel()

	t.Run("posts markdown content", func(t *testing.T) {
		t.Parallel()
		b := setupChat(t)
		w, err := NewWeCom(WeComConfig{URL: b.sink.url("/cgi-bin/webhook/send?key=" + wecomKey)}, b.sink.deps(b.clock))
		require.NoError(t, err)
		require.Equal(t, "wecom", w.Name())

		require.NoError(t, w.Send(ctxT(t), failureEvent()))
		req := b.sink.last(t)
		require.Equal(t, "/cgi-bin/webhook/send", req.Path)
		require.Equal(t, "key="+wecomKey, req.Query)
		want := map[string]any{
			"msgtype": "markdown",
			"markdown": map[string]any{
				"content": "### [Ringjob] job billing-close <font color=\"warning\">failed</font>\n\n" +
					"**Group:** billing  \n**Job:** #42 billing-close  \n**Run:** #9001  \n**State:** failed  \n" +
					"**Code:** 500  \n**Attempt:** 4  \n**Scheduled at:** 2026-03-29T02:00:00+02:00  \n" +
					"**Finished at:** 2026-03-29T02:10:00+02:00  \n\n" +
					"> shard 17: upstream ledger returned 503\n\n" +
					"[Open run #9001](https://ringjob.example.com/runs/9001)\n",
			},
		}
		require.Equal(t, want, decodeJSON(t, req.Body))
	})

	t.Run("recovery is green and content stays within 4096 bytes", func(t *testing.T) {
		t.Parallel()
		b := setupChat(t)
		w, err := NewWeCom(WeComConfig{URL: b.sink.url("/cgi-bin/webhook/send?key=" + wecomKey)}, b.sink.deps(b.clock))
		require.NoError(t, err)
		ev := recoveryEvent()
		ev.Message = strings.Repeat("日本語\n", 3000)
		require.NoError(t, w.Send(ctxT(t), ev))
		content := decodeJSON(t, b.sink.last(t).Body)["markdown"].(map[string]any)["content"].(string)
		require.Contains(t, content, `<font color="info">recovered</font>`)
		require.LessOrEqual(t, len(content), 4096)
	})

	t.Run("a nonzero errcode is a failure", func(t *testing.T) {
		t.Parallel()
		b := setupChat(t)
		b.sink.answer(200, `{"errcode":93000,"errmsg":"invalid webhook url, hint: [1690000000_1_abc], key: `+wecomKey+`"}`)
		w, err := NewWeCom(WeComConfig{URL: b.sink.url("/cgi-bin/webhook/send?key=" + wecomKey)}, b.sink.deps(b.clock))
		require.NoError(t, err)
		err = w.Send(ctxT(t), failureEvent())
		require.ErrorContains(t, err, "code 93000")
		require.ErrorContains(t, err, "invalid webhook url")
		requireNoSecret(t, err.Error()) // WeCom echoing the key is scrubbed
	})
}

func TestFeishu(t *testing.T) {
	t.Parallel()

	t.Run("posts a signed text message", func(t *testing.T) {
		t.Parallel()
		b := setupChat(t)
		b.sink.answer(200, `{"code":0,"data":{},"msg":"success"}`)
		f, err := NewFeishu(FeishuConfig{URL: b.sink.url("/open-apis/bot/v2/hook/" + feishuHook), Secret: feishuSecret}, b.sink.deps(b.clock))
		require.NoError(t, err)
		require.Equal(t, "feishu", f.Name())

		require.NoError(t, f.Send(ctxT(t), failureEvent()))
		req := b.sink.last(t)
		require.Equal(t, "/open-apis/bot/v2/hook/"+feishuHook, req.Path)
		body := decodeJSON(t, req.Body)
		ts := strconv.FormatInt(testStart.Unix(), 10)
		// Recompute as Feishu documents it: HmacSHA256 keyed by
		// timestamp+"\n"+secret over an empty message, Base64.
		mac := hmac.New(sha256.New, []byte(ts+"\n"+feishuSecret))
		want := map[string]any{
			"timestamp": ts,
			"sign":      base64.StdEncoding.EncodeToString(mac.Sum(nil)),
			"msg_type":  "text",
			"content":   map[string]any{"text": PlainText(failureEvent(), MaxChatMessageRunes)},
		}
		require.Equal(t, want, body)
		require.Contains(t, body["content"].(map[string]any)["text"], "Ringjob job billing-close failed: run #9001")
	})

	t.Run("no secret, no timestamp or sign", func(t *testing.T) {
		t.Parallel()
		b := setupChat(t)
		b.sink.answer(200, `{"Extra":null,"StatusCode":0,"StatusMessage":"success"}`) // older answer
		f, err := NewFeishu(FeishuConfig{URL: b.sink.url("/open-apis/bot/v2/hook/" + feishuHook)}, b.sink.deps(b.clock))
		require.NoError(t, err)
		require.NoError(t, f.Send(ctxT(t), recoveryEvent()))
		body := decodeJSON(t, b.sink.last(t).Body)
		require.NotContains(t, body, "timestamp")
		require.NotContains(t, body, "sign")
		require.Equal(t, "text", body["msg_type"])
	})

	for name, answer := range map[string]string{
		"code":       `{"code":19021,"data":{},"msg":"sign match fail or timestamp is not within one hour from current time"}`,
		"StatusCode": `{"Extra":null,"StatusCode":9499,"StatusMessage":"Bad Request"}`,
	} {
		t.Run("a nonzero "+name+" is a failure", func(t *testing.T) {
			t.Parallel()
			b := setupChat(t)
			b.sink.answer(200, answer)
			f, err := NewFeishu(FeishuConfig{URL: b.sink.url("/open-apis/bot/v2/hook/" + feishuHook), Secret: feishuSecret}, b.sink.deps(b.clock))
			require.NoError(t, err)
			err = f.Send(ctxT(t), failureEvent())
			var herr *HTTPError
			require.True(t, errors.As(err, &herr), "%v", err)
			require.NotZero(t, herr.Code)
			require.ErrorContains(t, err, "the robot refused the message")
			requireNoSecret(t, err.Error())
		})
	}

	t.Run("Feishu's 400 answer is a permanent failure", func(t *testing.T) {
		t.Parallel()
		b := setupChat(t)
		b.sink.answer(400, `{"code":9499,"msg":"Bad Request","data":{}}`)
		f, err := NewFeishu(FeishuConfig{URL: b.sink.url("/open-apis/bot/v2/hook/" + feishuHook)}, b.sink.deps(b.clock))
		require.NoError(t, err)
		err = f.Send(ctxT(t), failureEvent())
		require.True(t, IsPermanent(err))
		require.ErrorContains(t, err, "HTTP 400")
	})
}

func TestSignatures(t *testing.T) {
	t.Parallel()
	// Vectors computed outside Go with the vendors' published Python snippets:
	//   DingTalk: base64(hmac.new(secret, f"{ts}\n{secret}", sha256)), then quote_plus
	//   Feishu:   base64(hmac.new(f"{ts}\n{secret}", b"", sha256))
	//   webhook:  "sha256=" + hmac.new(secret, body, sha256).hexdigest()
	require.Equal(t, "sSFWELbV2YwjdDQhWZwTcWlX5BWUx5J6TPpsZmuPii0=", DingTalkSign("this is secret", "1700000000000"))
	require.Equal(t, "sSFWELbV2YwjdDQhWZwTcWlX5BWUx5J6TPpsZmuPii0%3D", url.QueryEscape(DingTalkSign("this is secret", "1700000000000")))
	require.Equal(t, "OfGzRzoUICBOoc8wVra1e4A1hPfbZ9zqXozA8CWVUuY=", FeishuSign("this is secret", "1700000000"))
	require.Equal(t, "sha256=19373ef0e8c66f206e49d251e4402291615bbce6ef00922e94a47a213fb76ee1", WebhookSign("whsec", []byte(`{"a":1}`)))
}

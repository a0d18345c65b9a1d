package xxlwire_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/xxlwire"
)

func TestDecodeCallbacks(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		body string
		want []xxlwire.CallbackItem
	}{
		"classic array with logDateTim": {
			body: `[{"logId":7,"logDateTim":1700000000000,"handleCode":500,"handleMsg":"boom"}]`,
			want: []xxlwire.CallbackItem{{LogID: 7, LogDateTim: 1700000000000, HandleCode: 500, HandleMsg: "boom"}},
		},
		"3.5 callbackList with logDateTime": {
			body: ` {"callbackList":[{"logId":8,"logDateTime":1700000000001,"handleCode":200,"handleMsg":null}]}`,
			want: []xxlwire.CallbackItem{{LogID: 8, LogDateTime: 1700000000001, HandleCode: 200}},
		},
		"go client's extra executeResult is ignored": {
			body: `[{"logId":9,"logDateTim":1,"handleCode":200,"handleMsg":"ok","executeResult":{"code":200}}]`,
			want: []xxlwire.CallbackItem{{LogID: 9, LogDateTim: 1, HandleCode: 200, HandleMsg: "ok"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := xxlwire.DecodeCallbacks([]byte(tc.body))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.NotZero(t, got[0].DateMillis(), "the date is read from either spelling")
		})
	}
	t.Run("empty and malformed bodies are errors", func(t *testing.T) {
		t.Parallel()
		_, err := xxlwire.DecodeCallbacks([]byte("  "))
		require.ErrorIs(t, err, xxlwire.ErrEmptyBody)
		_, err = xxlwire.DecodeCallbacks([]byte(`{"callbackList":3}`))
		require.Error(t, err)
	})
}

func TestCallbackItemJSON(t *testing.T) {
	t.Parallel()
	t.Run("a plain success has a null handleMsg and both date spellings", func(t *testing.T) {
		b, err := json.Marshal([]xxlwire.CallbackItem{xxlwire.NewCallbackItem(42, 1710068400000, xxlwire.CodeSuccess, "")})
		require.NoError(t, err)
		require.JSONEq(t, `[{"logId":42,"logDateTim":1710068400000,"logDateTime":1710068400000,"handleCode":200,"handleMsg":null}]`, string(b))
	})
	t.Run("a message and log lines round-trip", func(t *testing.T) {
		item := xxlwire.NewCallbackItem(5, 1, xxlwire.CodeFail, "broken")
		item.Log = []string{"a", "b"}
		b, err := json.Marshal(xxlwire.CallbackList{CallbackList: []xxlwire.CallbackItem{item}})
		require.NoError(t, err)
		got, err := xxlwire.DecodeCallbacks(b)
		require.NoError(t, err)
		require.Equal(t, []xxlwire.CallbackItem{item}, got)
	})
}

func TestEnvelope(t *testing.T) {
	t.Parallel()
	t.Run("reply carries the payload under content and data", func(t *testing.T) {
		env, err := xxlwire.Reply(xxlwire.CodeSuccess, xxlwire.MsgSuccess, xxlwire.LogResult{FromLineNum: 1, IsEnd: true})
		require.NoError(t, err)
		b, err := json.Marshal(env)
		require.NoError(t, err)
		require.JSONEq(t, `{"code":200,"msg":"Success",
			"content":{"fromLineNum":1,"toLineNum":0,"logContent":"","isEnd":true},
			"data":{"fromLineNum":1,"toLineNum":0,"logContent":"","isEnd":true}}`, string(b))
	})
	t.Run("no payload is null under both keys", func(t *testing.T) {
		env, err := xxlwire.Reply(xxlwire.CodeFail, "no", nil)
		require.NoError(t, err)
		b, err := json.Marshal(env)
		require.NoError(t, err)
		require.JSONEq(t, `{"code":500,"msg":"no","content":null,"data":null}`, string(b))
	})
	for name, body := range map[string]string{
		"2.x content": `{"code":200,"msg":null,"content":{"toLineNum":3,"isEnd":true}}`,
		"3.3+ data":   `{"code":200,"msg":"Success","data":{"toLineNum":3,"isEnd":true}}`,
	} {
		t.Run("payload is read from "+name, func(t *testing.T) {
			var env xxlwire.Envelope
			require.NoError(t, json.Unmarshal([]byte(body), &env))
			var lr xxlwire.LogResult
			require.NoError(t, json.Unmarshal(env.Payload(), &lr))
			require.Equal(t, xxlwire.LogResult{ToLineNum: 3, IsEnd: true}, lr)
		})
	}
}

func TestLogRequest(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(xxlwire.NewLogRequest(77, 1700000000000, 2))
	require.NoError(t, err)
	require.JSONEq(t, `{"logId":77,"logDateTim":1700000000000,"logDateTime":1700000000000,"fromLineNum":2}`, string(b))
	var classic, v35 xxlwire.LogRequest
	require.NoError(t, json.Unmarshal([]byte(`{"logDateTim":5,"logId":1,"fromLineNum":1}`), &classic))
	require.NoError(t, json.Unmarshal([]byte(`{"logDateTime":6,"logId":1,"fromLineNum":1}`), &v35))
	require.Equal(t, int64(5), classic.DateMillis())
	require.Equal(t, int64(6), v35.DateMillis())
	require.Equal(t, xxlwire.PathTrigger, xxlwire.TriggerPath(true))
	require.Equal(t, xxlwire.PathRun, xxlwire.TriggerPath(false))
}

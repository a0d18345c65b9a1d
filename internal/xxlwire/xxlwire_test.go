package xxlwire_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
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

// The hand-written trigger encoder writes exactly what json.Marshal writes,
// for plain values and for strings json escapes (quotes, control
// characters, HTML characters, invalid UTF-8, U+2028/U+2029).
func TestTriggerRequestAppendJSON(t *testing.T) {
	t.Parallel()
	strs := []string{"", "noop", `a"b\c`, "line\nfeed\r\ttab\b\f\x00\x01\x1f\x7f", "<script>&amp;</script>", "ünïcödé 日本 🎉",
		"bad \xff\xfe utf8 \xc3", "sep\u2028and\u2029", `{"json":[1,2]}`, strings.Repeat("x", 3000)}
	ints := []int64{0, 1, -1, 42, 1 << 40, -(1 << 62), 9223372036854775807}
	check := func(tr xxlwire.TriggerRequest) {
		want, err := json.Marshal(tr)
		require.NoError(t, err)
		require.Equal(t, string(want), string(tr.AppendJSON(nil)))
		require.Equal(t, "prefix"+string(want), string(tr.AppendJSON([]byte("prefix"))), "appends")
	}
	for i, s := range strs {
		n := ints[i%len(ints)]
		check(xxlwire.TriggerRequest{JobID: n, ExecutorHandler: s, ExecutorParams: strs[(i+1)%len(strs)], ExecutorBlockStrategy: s,
			ExecutorTimeout: ints[(i+2)%len(ints)], LogID: n, LogDateTime: ints[(i+3)%len(ints)], GlueType: xxlwire.GlueBean, GlueSource: s,
			GlueUpdatetime: n, BroadcastIndex: int(n % 1000), BroadcastTotal: i})
	}
	check(xxlwire.TriggerRequest{})
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 { // random bytes, mostly near the characters that are escaped
		b := make([]byte, rng.IntN(20))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		check(xxlwire.TriggerRequest{ExecutorParams: string(b), LogID: rng.Int64()})
	}
}

func FuzzTriggerRequestAppendJSON(f *testing.F) {
	f.Add("h", "p", int64(1))
	f.Add("<&>", "\xff\u2028", int64(-5))
	f.Fuzz(func(t *testing.T, handler, params string, id int64) {
		tr := xxlwire.TriggerRequest{JobID: id, ExecutorHandler: handler, ExecutorParams: params, LogID: id}
		want, err := json.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
}

package xxlwire_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/xxlwire"
)

// envelopeBodies are answers executors send and near misses of the fast
// path: each must decode as json.Unmarshal decodes it.
var envelopeBodies = []string{
	`{"code":200,"msg":null}`,
	`{"code":200}`,
	`{"code":500,"msg":"The access token is wrong."}`,
	`{"msg":"job thread is running or has trigger queue.","code":500}`,
	` { "code" : 200 , "msg" : "" } ` + "\n",
	"{\t\"code\":\r\n200}",
	`{}`,
	`{"code":-1,"msg":"x"}`,
	`{"code":-0}`,
	`{"code":200,"msg":"a","msg":null}`,
	`{"code":200,"code":502}`,
	`{"code":200,"content":{"fromLineNum":1,"toLineNum":0,"logContent":"","isEnd":true}}`,
	`{"code":200,"msg":null,"content":null}`,
	`{"code":200,"data":[1,2]}`,
	`{"Code":200,"MSG":"upper case keys match too"}`,
	`{"code":200,"msg":"caf\u00e9 \"quoted\""}`,
	`{"code":200,"msg":"café"}`,
	"{\"code\":200,\"msg\":\"bad \xff utf-8\"}",
	"{\"code\":200,\"msg\":\"tab\there\"}",
	`{"code":200,"extra":true}`,
	`{"code":200.0}`,
	`{"code":2e2}`,
	`{"code":0200}`,
	`{"code":+200}`,
	`{"code":1234567890}`,
	`{"code":99999999999999999999}`,
	`{"code":"200"}`,
	`{"code":null,"msg":null}`,
	`{"code":200,}`,
	`{"code":200 "msg":null}`,
	`{"code":200}x`,
	`{"code":200}{}`,
	`{"code":200`,
	`{"msg":nul}`,
	`{"msg":nullx}`,
	`{"code":-}`,
	`[]`,
	`null`,
	``,
	`   `,
	`{"code"200}`,
	`{code:200}`,
}

func TestDecodeEnvelopeMatchesJSON(t *testing.T) {
	for _, body := range envelopeBodies {
		checkEnvelopeMatchesJSON(t, []byte(body))
	}
}

func checkEnvelopeMatchesJSON(t *testing.T, body []byte) {
	t.Helper()
	got, err := xxlwire.DecodeEnvelope(body)
	var want xxlwire.Envelope
	wantErr := json.Unmarshal(body, &want)
	if wantErr != nil {
		require.Error(t, err, "%q: encoding/json refuses it", body)
		require.Equal(t, xxlwire.Envelope{}, got, "%q", body)
		return
	}
	require.NoError(t, err, "%q", body)
	require.Equal(t, want, got, "%q", body)
}

func FuzzDecodeEnvelope(f *testing.F) {
	for _, body := range envelopeBodies {
		f.Add([]byte(body))
	}
	f.Fuzz(checkEnvelopeMatchesJSON)
}

// The common answers take the path without reflection: no allocation for
// a null message, the message's own string otherwise.
func TestDecodeEnvelopeCommonAnswersSkipReflection(t *testing.T) {
	for body, allocs := range map[string]float64{
		`{"code":200,"msg":null}`: 0,
		`{"code":200}`:            0,
		`{"code":500,"msg":"The access token is wrong."}`: 1,
	} {
		b := []byte(body)
		var env xxlwire.Envelope
		got := testing.AllocsPerRun(100, func() { env, _ = xxlwire.DecodeEnvelope(b) })
		require.Equal(t, allocs, got, "%s: allocations", body)
		require.NotZero(t, env.Code, "%s", body)
	}
}

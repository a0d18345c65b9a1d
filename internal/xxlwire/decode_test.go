package xxlwire_test

import (
	"bytes"
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
	requireSameAsJSON(t, body, got, err, want, wantErr)
	if err != nil {
		require.Equal(t, xxlwire.Envelope{}, got, "%q: nothing half-read", body)
	}
}

// requireSameAsJSON checks a reader's result on body against
// encoding/json's: refused both, or read alike.
func requireSameAsJSON[T any](t *testing.T, body []byte, got T, err error, want T, wantErr error) {
	t.Helper()
	if wantErr != nil {
		require.Error(t, err, "%q: encoding/json refuses it", body)
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

// callbackBodies are callback bodies executors send and near misses of
// the path without reflection.
var callbackBodies = []string{
	`[{"logId":1,"logDateTim":1764000000000,"handleCode":200,"handleMsg":null}]`,
	`[{"logId":1,"logDateTim":1764000000000,"handleCode":200}]`,
	`[{"logId":1,"logDateTim":1764000000000,"handleCode":200,"handleMsg":""},{"logId":2,"logDateTime":1764000000001,"handleCode":500,"handleMsg":"failed"}]`,
	`{"callbackList":[{"logId":3,"logDateTime":1764000000000,"handleCode":502,"handleMsg":"timeout"}]}`,
	` [ { "logId" : 4 , "handleCode" : 200 } , { } ] `,
	`[]`,
	`{"callbackList":[]}`,
	`{}`,
	`{"callbackList":null}`,
	`{"callbackList":[{"logId":1,"handleMsg":"a"}],"callbackList":[{"logId":2}]}`,
	`[{"logId":1,"handleCode":200,"handleMsg":"a","handleMsg":null}]`,
	`[{"logId":1,"handleCode":null}]`,
	`[{"logId":1,"executeResult":{"code":200,"msg":null}}]`,
	`[{"logId":1,"log":["line 1","line 2"]}]`,
	`[{"LogId":1}]`,
	`[{"logId":"1"}]`,
	`[{"logId":1.5}]`,
	`[{"logId":123456789012345678901}]`,
	`[{"logId":1,"handleMsg":"caf\u00e9"}]`,
	`[{"logId":1,"handleMsg":"{not an object}"}]`,
	`[{"logId":1},]`,
	`[{"logId":1}`,
	`[{"logId":1}]]`,
	`[1,2]`,
	`[null]`,
	`{"callbackList":[{"logId":1}],"other":1}`,
	`{"callbackList":[{"logId":1}]`,
	`"text"`,
}

// decodeCallbacksWithJSON is DecodeCallbacks as encoding/json alone reads
// a body (trimmed, not empty): the reference the plain reader must match.
func decodeCallbacksWithJSON(body []byte) ([]xxlwire.CallbackItem, error) {
	if body[0] == '[' {
		var items []xxlwire.CallbackItem
		err := json.Unmarshal(body, &items)
		return items, err
	}
	var wrapped xxlwire.CallbackList
	err := json.Unmarshal(body, &wrapped)
	return wrapped.CallbackList, err
}

func TestDecodeCallbacksMatchesJSON(t *testing.T) {
	for _, body := range callbackBodies {
		checkCallbacksMatchJSON(t, []byte(body))
	}
}

func checkCallbacksMatchJSON(t *testing.T, body []byte) {
	t.Helper()
	trimmed := bytes.TrimSpace(body)
	got, err := xxlwire.DecodeCallbacks(body)
	if len(trimmed) == 0 {
		require.ErrorIs(t, err, xxlwire.ErrEmptyBody)
		return
	}
	want, wantErr := decodeCallbacksWithJSON(trimmed)
	requireSameAsJSON(t, body, got, err, want, wantErr)
}

func FuzzDecodeCallbacks(f *testing.F) {
	for _, body := range callbackBodies {
		f.Add([]byte(body))
	}
	f.Fuzz(checkCallbacksMatchJSON)
}

// A batch of plain callbacks is read without reflection: one allocation
// for the items, one per message that is not null.
func TestDecodeCallbacksPlainBatchSkipsReflection(t *testing.T) {
	b := []byte(`[{"logId":1,"logDateTim":1764000000000,"handleCode":200,"handleMsg":null},{"logId":2,"logDateTim":1764000000000,"handleCode":500,"handleMsg":"failed"}]`)
	var items []xxlwire.CallbackItem
	allocs := testing.AllocsPerRun(100, func() { items, _ = xxlwire.DecodeCallbacks(b) })
	require.Equal(t, 2.0, allocs)
	require.Equal(t, []xxlwire.CallbackItem{
		{LogID: 1, LogDateTim: 1764000000000, HandleCode: 200},
		{LogID: 2, LogDateTim: 1764000000000, HandleCode: 500, HandleMsg: "failed"},
	}, items)
}

package xxlwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Handle codes (XXL-JOB's HANDLE_CODE_*), also the envelope codes: success
// and failure always travel inside an HTTP 200.
const (
	CodeSuccess = 200 // the run (or request) succeeded
	CodeFail    = 500 // the run failed, was killed or was never executed; the request was refused
	CodeTimeout = 502 // the run passed its executorTimeout
)

// Header names of the protocol.
const (
	HeaderAccessToken = "XXL-JOB-ACCESS-TOKEN"
	HeaderAppName     = "XXL-JOB-APPNAME" // required by 3.5, sent by every Ringjob client
	// HeaderRunToken is a Ringjob extension: a per-run callback token
	// (functions in Event mode) sent instead of the executor token.
	HeaderRunToken = "X-Ringjob-Run-Token"
)

// Content types. Executors answer JSON labelled text/html, as the Java
// executor does.
const (
	RequestContentType  = "application/json;charset=UTF-8"
	ResponseContentType = "text/html;charset=UTF-8"
)

// Executor paths (admin → executor).
const (
	PathBeat     = "/beat"
	PathIdleBeat = "/idleBeat"
	PathRun      = "/run"     // 2.x – 3.4
	PathTrigger  = "/trigger" // 3.5
	PathKill     = "/kill"
	PathLog      = "/log"
)

// Admin paths (executor → admin), under the admin's address. Ringjob also
// serves them under /xxl-job-admin so that executors need only the host.
const (
	PathRegistry       = "/api/registry"
	PathRegistryRemove = "/api/registryRemove"
	PathCallback       = "/api/callback"
)

// Protocol35 is the executor group setting for XXL-JOB 3.5 executors
// (/trigger, XXL-JOB-APPNAME, per-group tokens); the empty string means
// 2.x – 3.4.
const Protocol35 = "3.5"

// TriggerPath is the path a run is sent to.
func TriggerPath(protocol35 bool) string {
	if protocol35 {
		return PathTrigger
	}
	return PathRun
}

// RegistryGroupExecutor is the registryGroup every executor registers under.
const RegistryGroupExecutor = "EXECUTOR"

// GlueBean is the only glue type Ringjob sends and its executor runs.
const GlueBean = "BEAN"

// GlueScriptTypes are XXL-JOB's GlueTypeEnum names other than BEAN: known,
// but not run by Ringjob's executor ("not supported" rather than "not valid").
var GlueScriptTypes = map[string]bool{
	"GLUE_GROOVY": true, "GLUE_SHELL": true, "GLUE_PYTHON": true, "GLUE_PYTHON2": true,
	"GLUE_NODEJS": true, "GLUE_POWERSHELL": true, "GLUE_PHP": true,
}

// Messages both sides know; admins show them and some executors match them.
const (
	MsgSuccess         = "Success"
	MsgTokenWrong      = "The access token is wrong."
	MsgBodyEmpty       = "invalid request, requestBody empty."
	MsgIllegalArgument = "Illegal Argument."
)

// Envelope is every answer (XXL-JOB's ReturnT / Response): code and msg,
// with the payload under both "content" (2.x – 3.2) and "data" (3.3+).
// A nil payload is written as null.
type Envelope struct {
	Code    int             `json:"code"`
	Msg     string          `json:"msg"`
	Content json.RawMessage `json:"content"`
	Data    json.RawMessage `json:"data"`
}

// DecodeEnvelope reads an envelope: what json.Unmarshal gives, or its
// error (TestDecodeEnvelopeMatchesJSON). Every fire's answer is one, and
// nearly all are a code and a short message ({"code":200,"msg":null}):
// those are read without reflection, anything else by encoding/json.
func DecodeEnvelope(data []byte) (Envelope, error) {
	if env, ok := decodeCodeAndMsg(data); ok {
		return env, nil
	}
	var env Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return Envelope{}, err
	}
	return env, nil
}

// decodeCodeAndMsg reads an object of "code" and "msg" whose values are
// plain (see plainObject), false for anything else.
func decodeCodeAndMsg(b []byte) (env Envelope, ok bool) {
	i, ok := plainObject(b, skipJSONSpace(b, 0), func(key []byte, i int) (int, bool) {
		switch string(key) {
		case "code":
			return plainInt(b, i, &env.Code)
		case "msg":
			return plainString(b, i, &env.Msg)
		}
		return i, false
	})
	return env, ok && skipJSONSpace(b, i) == len(b)
}

// The protocol's hot messages (an executor's answer to a trigger, its
// callbacks) are objects of integers and short ASCII strings. The plain
// readers below read that subset of JSON without reflection and say ok
// only when what they read is what encoding/json would decode: keys are
// matched exactly (encoding/json also matches them ignoring case), numbers
// are integers of at most 18 digits, strings have printable ASCII and no
// escapes, and null leaves a value as it is. Anything else is ok=false,
// and the caller decodes the whole message with encoding/json instead.

// plainObject reads the object at b[i:], calling value with each key and
// the index of its value; value reads the value and returns the index
// after it. It returns the index after the object.
func plainObject(b []byte, i int, value func(key []byte, i int) (int, bool)) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return i, false
	}
	i = skipJSONSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		key, j, ok := plainJSONString(b, i)
		if !ok {
			return i, false
		}
		i = skipJSONSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		if i, ok = value(key, skipJSONSpace(b, i+1)); !ok {
			return i, false
		}
		i = skipJSONSpace(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case '}':
			return i + 1, true
		case ',':
			i = skipJSONSpace(b, i+1)
		default:
			return i, false
		}
	}
}

func isJSONNull(b []byte, i int) bool { return bytes.HasPrefix(b[i:], []byte("null")) }

// plainInt reads an integer or null at b[i:] into dst.
func plainInt[T int | int64](b []byte, i int, dst *T) (int, bool) {
	if isJSONNull(b, i) {
		return i + 4, true
	}
	n, next, ok := plainJSONInt(b, i)
	if ok {
		*dst = T(n)
	}
	return next, ok
}

// plainString reads a plain string or null at b[i:] into dst.
func plainString(b []byte, i int, dst *string) (int, bool) {
	if isJSONNull(b, i) {
		return i + 4, true
	}
	s, next, ok := plainJSONString(b, i)
	if ok {
		*dst = string(s)
	}
	return next, ok
}

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainJSONString reads the string at b[i:] when it has only printable
// ASCII and no escapes; it returns its contents and the index after it.
func plainJSONString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, i, false
		}
	}
	return nil, i, false
}

// plainJSONInt reads the integer at b[i:] (JSON's grammar: no leading
// zeros, no plus sign) of at most 18 digits; a fraction or an exponent
// after it is left for the caller to refuse.
func plainJSONInt(b []byte, i int) (n int64, next int, ok bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > 18 || (digits > 1 && b[start] == '0') {
		return 0, i, false
	}
	if neg {
		n = -n
	}
	return n, i, true
}

// Reply builds an envelope with payload (nil for none) under both keys.
func Reply(code int, msg string, payload any) (Envelope, error) {
	env := Envelope{Code: code, Msg: msg}
	if payload == nil {
		return env, nil
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return Envelope{}, fmt.Errorf("encode %T payload: %w", payload, err)
	}
	env.Content, env.Data = raw, raw
	return env, nil
}

// Payload is the payload whichever key carries it: data (3.3+), else content.
func (e Envelope) Payload() json.RawMessage {
	if len(e.Data) > 0 && string(e.Data) != "null" {
		return e.Data
	}
	return e.Content
}

// TriggerRequest is XXL-JOB's TriggerParam / TriggerRequest (POST /run or
// /trigger); the field names are the same in every version.
type TriggerRequest struct {
	JobID                 int64  `json:"jobId"`
	ExecutorHandler       string `json:"executorHandler"`
	ExecutorParams        string `json:"executorParams"`
	ExecutorBlockStrategy string `json:"executorBlockStrategy"`
	ExecutorTimeout       int64  `json:"executorTimeout"` // seconds; 0 = none
	LogID                 int64  `json:"logId"`
	LogDateTime           int64  `json:"logDateTime"` // epoch ms: the log file's date
	GlueType              string `json:"glueType"`
	GlueSource            string `json:"glueSource"`
	GlueUpdatetime        int64  `json:"glueUpdatetime"`
	BroadcastIndex        int    `json:"broadcastIndex"`
	BroadcastTotal        int    `json:"broadcastTotal"`
}

// JobIDRequest is the body of /idleBeat and /kill.
type JobIDRequest struct {
	JobID int64 `json:"jobId"`
}

// LogRequest is the body of /log. The date is written under both spellings
// ("logDateTim" up to 3.4, "logDateTime" in 3.5); DateMillis reads either.
type LogRequest struct {
	LogDateTim  int64 `json:"logDateTim"`
	LogDateTime int64 `json:"logDateTime"`
	LogID       int64 `json:"logId"`
	FromLineNum int   `json:"fromLineNum"`
}

// NewLogRequest asks for run logID's log (dated dateMillis) from a line.
func NewLogRequest(logID, dateMillis int64, fromLine int) LogRequest {
	return LogRequest{LogDateTim: dateMillis, LogDateTime: dateMillis, LogID: logID, FromLineNum: fromLine}
}

// DateMillis is the log date, whichever spelling carried it.
func (r LogRequest) DateMillis() int64 {
	if r.LogDateTime != 0 {
		return r.LogDateTime
	}
	return r.LogDateTim
}

// LogResult is XXL-JOB's LogResult, the payload of a /log answer.
type LogResult struct {
	FromLineNum int    `json:"fromLineNum"`
	ToLineNum   int    `json:"toLineNum"`
	LogContent  string `json:"logContent"`
	IsEnd       bool   `json:"isEnd"`
}

// CallbackItem is one run result (XXL-JOB's HandleCallbackParam /
// CallbackRequest / CallbackData). The log date is written under both
// spellings and read from either (DateMillis); an empty HandleMsg is written
// as null, as the Java executor sends a plain success. Unknown fields (the
// Go client's executeResult) are ignored when read.
type CallbackItem struct {
	LogID       int64  `json:"logId"`
	LogDateTim  int64  `json:"logDateTim"`
	LogDateTime int64  `json:"logDateTime"`
	HandleCode  int    `json:"handleCode"`
	HandleMsg   string `json:"handleMsg"`
	// Log is a Ringjob extension: the run's collected log lines (functions),
	// which the server appends to the run's log. XXL-JOB admins ignore it.
	Log []string `json:"log,omitempty"`
}

// NewCallbackItem reports run logID (dated dateMillis) with code and msg.
func NewCallbackItem(logID, dateMillis int64, code int, msg string) CallbackItem {
	return CallbackItem{LogID: logID, LogDateTim: dateMillis, LogDateTime: dateMillis, HandleCode: code, HandleMsg: msg}
}

// DateMillis is the log date, whichever spelling carried it.
func (c CallbackItem) DateMillis() int64 {
	if c.LogDateTime != 0 {
		return c.LogDateTime
	}
	return c.LogDateTim
}

// MarshalJSON writes an empty HandleMsg as null.
func (c CallbackItem) MarshalJSON() ([]byte, error) {
	type fields CallbackItem // the same fields without this method
	out := struct {
		fields
		HandleMsg *string `json:"handleMsg"` // shadows fields.HandleMsg
	}{fields: fields(c)}
	if c.HandleMsg != "" {
		out.HandleMsg = &c.HandleMsg
	}
	return json.Marshal(out)
}

// CallbackList is the 3.5 callback body; 2.x – 3.4 send the bare array.
type CallbackList struct {
	CallbackList []CallbackItem `json:"callbackList"`
}

// ErrEmptyBody is a request without a body. Its text is XXL-JOB's own
// message, which executors and their logs see.
//
//lint:ignore ST1005 the wire text, punctuation included
var ErrEmptyBody = errors.New(MsgBodyEmpty)

// DecodeCallbacks reads a callback body in either shape: a JSON array
// (2.x – 3.4) or {"callbackList":[...]} (3.5).
func DecodeCallbacks(body []byte) ([]CallbackItem, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, ErrEmptyBody
	}
	if items, ok := decodePlainCallbacks(body); ok {
		return items, nil // the common case, without reflection
	}
	if body[0] == '[' {
		var items []CallbackItem
		if err := json.Unmarshal(body, &items); err != nil {
			return nil, fmt.Errorf("callback array: %w", err)
		}
		return items, nil
	}
	var wrapped CallbackList
	if err := json.Unmarshal(body, &wrapped); err != nil {
		return nil, fmt.Errorf("callback object: %w", err)
	}
	return wrapped.CallbackList, nil
}

// decodePlainCallbacks reads a callback body (either shape) whose items
// have only the XXL-JOB fields, with plain values (see plainObject): false
// for anything else (the Go client's executeResult, Ringjob's log lines,
// a repeated callbackList).
func decodePlainCallbacks(b []byte) (items []CallbackItem, ok bool) {
	var i int
	if b[0] == '[' {
		items, i, ok = plainCallbackArray(b, 0)
	} else {
		seen := false
		i, ok = plainObject(b, 0, func(key []byte, i int) (int, bool) {
			if string(key) != "callbackList" || seen {
				return i, false
			}
			seen = true
			var next int
			var ok bool
			items, next, ok = plainCallbackArray(b, i)
			return next, ok
		})
	}
	return items, ok && skipJSONSpace(b, i) == len(b)
}

// plainCallbackArray reads an array of plain callback items at b[i:].
func plainCallbackArray(b []byte, i int) ([]CallbackItem, int, bool) {
	if i >= len(b) || b[i] != '[' {
		return nil, i, false
	}
	items := make([]CallbackItem, 0, bytes.Count(b[i:], []byte("{")))
	i = skipJSONSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return items, i + 1, true
	}
	for {
		var it CallbackItem
		var ok bool
		i, ok = plainObject(b, i, func(key []byte, i int) (int, bool) {
			switch string(key) {
			case "logId":
				return plainInt(b, i, &it.LogID)
			case "logDateTim":
				return plainInt(b, i, &it.LogDateTim)
			case "logDateTime":
				return plainInt(b, i, &it.LogDateTime)
			case "handleCode":
				return plainInt(b, i, &it.HandleCode)
			case "handleMsg":
				return plainString(b, i, &it.HandleMsg)
			}
			return i, false
		})
		if !ok {
			return nil, i, false
		}
		items = append(items, it)
		i = skipJSONSpace(b, i)
		if i >= len(b) {
			return nil, i, false
		}
		switch b[i] {
		case ']':
			return items, i + 1, true
		case ',':
			i = skipJSONSpace(b, i+1)
		default:
			return nil, i, false
		}
	}
}

// RegistryRequest is an executor's registry beat or goodbye (XXL-JOB's
// RegistryParam), the body of /api/registry and /api/registryRemove.
type RegistryRequest struct {
	RegistryGroup string `json:"registryGroup"`
	RegistryKey   string `json:"registryKey"`   // the app name
	RegistryValue string `json:"registryValue"` // the executor's base URL
}

// AppendJSON appends the request as encoding/json writes it (the same
// bytes as json.Marshal; TestTriggerRequestAppendJSON), without reflection:
// every fire is one of these.
func (t TriggerRequest) AppendJSON(b []byte) []byte {
	b = append(b, `{"jobId":`...)
	b = strconv.AppendInt(b, t.JobID, 10)
	b = append(b, `,"executorHandler":`...)
	b = appendJSONString(b, t.ExecutorHandler)
	b = append(b, `,"executorParams":`...)
	b = appendJSONString(b, t.ExecutorParams)
	b = append(b, `,"executorBlockStrategy":`...)
	b = appendJSONString(b, t.ExecutorBlockStrategy)
	b = append(b, `,"executorTimeout":`...)
	b = strconv.AppendInt(b, t.ExecutorTimeout, 10)
	b = append(b, `,"logId":`...)
	b = strconv.AppendInt(b, t.LogID, 10)
	b = append(b, `,"logDateTime":`...)
	b = strconv.AppendInt(b, t.LogDateTime, 10)
	b = append(b, `,"glueType":`...)
	b = appendJSONString(b, t.GlueType)
	b = append(b, `,"glueSource":`...)
	b = appendJSONString(b, t.GlueSource)
	b = append(b, `,"glueUpdatetime":`...)
	b = strconv.AppendInt(b, t.GlueUpdatetime, 10)
	b = append(b, `,"broadcastIndex":`...)
	b = strconv.AppendInt(b, int64(t.BroadcastIndex), 10)
	b = append(b, `,"broadcastTotal":`...)
	b = strconv.AppendInt(b, int64(t.BroadcastTotal), 10)
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does by default: HTML
// characters (<, >, &) escaped, invalid UTF-8 replaced by U+FFFD, U+2028
// and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

package executor

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/ringjob/ringjob/internal/xxlwire"
)

// serveHTTP is the executor API (XXL-JOB EmbedServer): POST only, exact
// paths, the token checked first, and every answer an HTTP 200 carrying the
// envelope, failures included, as XXL-JOB admins expect.
func (e *Executor) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		reply(w, CodeFail, msgMethodNotAllowed, nil)
		return
	}
	if e.cfg.token != "" &&
		subtle.ConstantTimeCompare([]byte(r.Header.Get(HeaderAccessToken)), []byte(e.cfg.token)) != 1 {
		reply(w, CodeFail, xxlwire.MsgTokenWrong, nil)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		reply(w, CodeFail, "request error: read body: "+err.Error(), nil)
		return
	}
	switch path := r.URL.Path; path {
	case xxlwire.PathBeat:
		reply(w, CodeSuccess, xxlwire.MsgSuccess, nil)
	case xxlwire.PathIdleBeat:
		var req xxlwire.JobIDRequest
		if !decode(w, path, body, &req) {
			return
		}
		if e.idle(req.JobID) {
			reply(w, CodeSuccess, xxlwire.MsgSuccess, nil)
		} else {
			reply(w, CodeFail, msgIdleBusy, nil)
		}
	case xxlwire.PathRun, xxlwire.PathTrigger:
		var req xxlwire.TriggerRequest
		if !decode(w, path, body, &req) {
			return
		}
		code, msg := e.trigger(req)
		reply(w, code, msg, nil)
	case xxlwire.PathKill:
		var req xxlwire.JobIDRequest
		if !decode(w, path, body, &req) {
			return
		}
		if e.kill(req.JobID) {
			reply(w, CodeSuccess, xxlwire.MsgSuccess, nil)
		} else {
			// 2.x admins read msg, 3.5 admins read data.
			reply(w, CodeSuccess, msgAlreadyKilled, msgAlreadyKilled)
		}
	case xxlwire.PathLog:
		var req xxlwire.LogRequest
		if !decode(w, path, body, &req) {
			return
		}
		reply(w, CodeSuccess, xxlwire.MsgSuccess, e.readLog(req))
	default:
		reply(w, CodeFail, fmt.Sprintf("invalid request, uri-mapping(%s) not found.", path), nil)
	}
}

func decode(w http.ResponseWriter, path string, body []byte, v any) bool {
	if err := json.Unmarshal(body, v); err != nil {
		reply(w, CodeFail, fmt.Sprintf("request error: %s body is not valid JSON: %v", path, err), nil)
		return false
	}
	return true
}

func reply(w http.ResponseWriter, code int, msg string, payload any) {
	env, err := xxlwire.Reply(code, msg, payload)
	if err != nil {
		panic(err) // only our own plain structs are payloads
	}
	w.Header().Set("Content-Type", xxlwire.ResponseContentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(mustJSON(env))
}

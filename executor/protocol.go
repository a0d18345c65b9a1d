package executor

import (
	"encoding/json"

	"github.com/ringjob/ringjob/internal/xxlwire"
)

// The XXL-JOB wire format itself (bodies, codes, headers, paths) is declared
// once in internal/xxlwire; this file re-exports what users of the SDK need
// and holds the messages only an executor sends.

// Handle codes, as XXL-JOB's HANDLE_CODE_*.
const (
	CodeSuccess = xxlwire.CodeSuccess // the run succeeded
	CodeFail    = xxlwire.CodeFail    // the run failed, was killed or was never executed
	CodeTimeout = xxlwire.CodeTimeout // the run passed its executorTimeout
)

// Header names of the protocol.
const (
	HeaderAccessToken = xxlwire.HeaderAccessToken
	HeaderAppName     = xxlwire.HeaderAppName
)

const (
	maxRequestBody    = 5 << 20 // Netty's limit in the Java executor
	maxHandleMsg      = 50000   // runes; XXL-JOB truncates handleMsg here
	callbackBatchSize = 50
)

// Block strategies (ExecutorBlockStrategyEnum). An empty or unknown strategy
// means SERIAL_EXECUTION.
const (
	SerialExecution = "SERIAL_EXECUTION"
	DiscardLater    = "DISCARD_LATER"
	CoverEarly      = "COVER_EARLY"
)

// Messages an executor sends; the admin shows them, and some admins match them.
const (
	msgMethodNotAllowed = "invalid request, HttpMethod not support."
	msgDiscardLater     = "block strategy effect：Discard Later"
	reasonCoverEarly    = "block strategy effect：Cover Early"
	reasonHandlerChange = "change jobhandler or glue type, and terminate the old job thread."
	reasonKill          = "scheduling center kill job."
	reasonStop          = "executor is stopping, kill the job."
	msgTimeout          = "job execute timeout "
	msgIdleBusy         = "job thread is running or has trigger queue."
	msgAlreadyKilled    = "job thread already killed."
	msgLogNotExists     = "readLog fail, logFile not exists"
	msgLogNotKept       = "the run was received; its log file is no longer kept"
	suffixRunningKilled = " [job running, killed]"
	suffixQueuedKilled  = " [job not executed, in the job queue, killed.]"
)

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own plain structs are marshalled
	}
	return b
}

package executor

import "encoding/json"

// This file holds the XXL-JOB wire format: request and response bodies, codes,
// header names and the messages XXL-JOB admins (and Ringjob) know.

// Handle codes, as XXL-JOB's HANDLE_CODE_*.
const (
	CodeSuccess = 200 // the run succeeded
	CodeFail    = 500 // the run failed, was killed or was never executed
	CodeTimeout = 502 // the run passed its executorTimeout
)

// Header names of the protocol.
const (
	HeaderAccessToken = "XXL-JOB-ACCESS-TOKEN"
	HeaderAppName     = "XXL-JOB-APPNAME"
)

const (
	requestContentType  = "application/json;charset=UTF-8"
	responseContentType = "text/html;charset=UTF-8" // what XXL-JOB executors send, JSON body
	maxRequestBody      = 5 << 20                   // Netty's limit in the Java executor
	maxHandleMsg        = 50000                     // runes; XXL-JOB truncates handleMsg here
	callbackBatchSize   = 50
)

// Block strategies (ExecutorBlockStrategyEnum). An empty or unknown strategy
// means SERIAL_EXECUTION.
const (
	SerialExecution = "SERIAL_EXECUTION"
	DiscardLater    = "DISCARD_LATER"
	CoverEarly      = "COVER_EARLY"
)

// Messages of the protocol; the admin shows them, and some admins match them.
const (
	msgSuccess          = "Success"
	msgTokenWrong       = "The access token is wrong."
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
	suffixRunningKilled = " [job running, killed]"
	suffixQueuedKilled  = " [job not executed, in the job queue, killed.]"
)

// envelope is every executor reply: code and msg, with the payload under both
// "content" (2.x – 3.2 admins) and "data" (3.3+ admins).
type envelope struct {
	Code    int    `json:"code"`
	Msg     string `json:"msg"`
	Content any    `json:"content"`
	Data    any    `json:"data"`
}

// adminReply is what an admin answers to registry and callback calls. Only
// code matters (200 = accepted).
type adminReply struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

// triggerRequest is XXL-JOB's TriggerParam (POST /run, /trigger).
type triggerRequest struct {
	JobID                 int64  `json:"jobId"`
	ExecutorHandler       string `json:"executorHandler"`
	ExecutorParams        string `json:"executorParams"`
	ExecutorBlockStrategy string `json:"executorBlockStrategy"`
	ExecutorTimeout       int64  `json:"executorTimeout"`
	LogID                 int64  `json:"logId"`
	LogDateTime           int64  `json:"logDateTime"`
	GlueType              string `json:"glueType"`
	GlueSource            string `json:"glueSource"`
	GlueUpdatetime        int64  `json:"glueUpdatetime"`
	BroadcastIndex        int    `json:"broadcastIndex"`
	BroadcastTotal        int    `json:"broadcastTotal"`
}

// jobIDRequest is the body of /idleBeat and /kill.
type jobIDRequest struct {
	JobID int64 `json:"jobId"`
}

// logRequest is the body of /log. Admins up to 3.4 spell the date field
// "logDateTim", 3.5 spells it "logDateTime"; both are read.
type logRequest struct {
	LogDateTim  int64 `json:"logDateTim"`
	LogDateTime int64 `json:"logDateTime"`
	LogID       int64 `json:"logId"`
	FromLineNum int   `json:"fromLineNum"`
}

func (r logRequest) dateMillis() int64 {
	if r.LogDateTime != 0 {
		return r.LogDateTime
	}
	return r.LogDateTim
}

// logResult is XXL-JOB's LogResult.
type logResult struct {
	FromLineNum int    `json:"fromLineNum"`
	ToLineNum   int    `json:"toLineNum"`
	LogContent  string `json:"logContent"`
	IsEnd       bool   `json:"isEnd"`
}

// callbackItem is one run result in POST {admin}/api/callback. The body is a
// JSON array of these (2.x – 3.4 shape). The date is sent under both spellings;
// admins ignore the one they do not know. An empty handleMsg is sent as null,
// as the Java executor does for a plain success.
type callbackItem struct {
	LogID       int64   `json:"logId"`
	LogDateTim  int64   `json:"logDateTim"`
	LogDateTime int64   `json:"logDateTime"`
	HandleCode  int     `json:"handleCode"`
	HandleMsg   *string `json:"handleMsg"`
}

// registryRequest is the body of POST {admin}/api/registry and registryRemove.
type registryRequest struct {
	RegistryGroup string `json:"registryGroup"`
	RegistryKey   string `json:"registryKey"`
	RegistryValue string `json:"registryValue"`
}

// glueTypes are XXL-JOB's GlueTypeEnum names other than BEAN. This executor
// runs BEAN handlers only; these get "not supported", other names "not valid".
var glueTypes = map[string]bool{
	"GLUE_GROOVY": true, "GLUE_SHELL": true, "GLUE_PYTHON": true, "GLUE_PYTHON2": true,
	"GLUE_NODEJS": true, "GLUE_POWERSHELL": true, "GLUE_PHP": true,
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own plain structs are marshalled
	}
	return b
}

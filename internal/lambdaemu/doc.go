// Package lambdaemu emulates AWS Lambda on one machine, speaking Lambda's
// real wire formats, so that tests (and `make run`) can invoke real function
// binaries through the unmodified AWS SDK without AWS, LocalStack or the
// runtime interface emulator.
//
// # Invoke API (what SDK clients talk to)
//
//	POST /2015-03-31/functions/{FunctionName}/invocations[?Qualifier=Q]
//	GET  /2015-03-31/functions/{FunctionName}[?Qualifier=Q]            (GetFunction)
//	GET  /2015-03-31/functions/{FunctionName}/configuration            (GetFunctionConfiguration)
//
// FunctionName is a name, name:qualifier, a partial ARN or a full ARN.
// Qualifiers are $LATEST and Function.Aliases; every one runs the same code
// and answers X-Amz-Executed-Version: $LATEST. Invoke honours
// X-Amz-Invocation-Type (RequestResponse, the default; Event: 202 and the
// invocation runs in the background from a bounded queue; DryRun: 204) and
// X-Amz-Log-Type: Tail (X-Amz-Log-Result is the base64 of the last 4 KB of
// the invocation's log: START, the process's stdout and stderr, END,
// REPORT). A function error is HTTP 200 with X-Amz-Function-Error: Unhandled
// and the error JSON as the runtime posted it. API errors carry
// X-Amzn-ErrorType, which the SDKs map onto their types:
//
//	unknown function or qualifier   404 ResourceNotFoundException {"Type":"User","Message":"Function not found: arn:..."}
//	no free process, queue full     429 TooManyRequestsException (Reason ReservedFunctionConcurrentInvocationLimitExceeded)
//	payload not JSON                400 InvalidRequestContentException
//	payload over 6 MB (1 MB Event)  413 RequestTooLargeException
//	emulator shutting down          500 ServiceException
//
// # Runtime API (what functions talk to)
//
// Each function process is started with AWS_LAMBDA_RUNTIME_API pointing at
// a listener of its own (aws-lambda-go reads only host:port from it), plus
// the variables Lambda sets (AWS_LAMBDA_FUNCTION_NAME, _VERSION,
// _MEMORY_SIZE, AWS_LAMBDA_LOG_GROUP_NAME, _LOG_STREAM_NAME, AWS_REGION,
// _HANDLER, LAMBDA_TASK_ROOT, ...) and Function.Env. It serves
// GET /2018-06-01/runtime/invocation/next (blocks; Lambda-Runtime-Aws-Request-Id,
// -Deadline-Ms, -Invoked-Function-Arn, -Trace-Id), POST .../invocation/{id}/response,
// POST .../invocation/{id}/error and POST /2018-06-01/runtime/init/error.
//
// # Processes
//
// A function runs at most MaxConcurrency invocations at once, one process
// each; warm idle processes are reused. A synchronous invocation that finds
// all busy waits in a queue of QueueSize (default 0: throttled at once, as
// AWS), else gets 429. Event invocations wait in a queue of EventQueueSize
// and run as processes free up; they are not retried when they fail.
// An invocation still running at the function's Timeout fails with
// {"errorMessage":"<time> <request id> Task timed out after N.NN seconds"}
// and its process (group) is killed; a process that exits mid-invocation
// fails it with Runtime.ExitError. Either way the next invocation starts a
// new process. A new process must ask for its first invocation within
// InitTimeout. A process's stdout and stderr go to a file that is emptied
// at each invocation, so the log tail holds exactly what was written before
// the answer.
//
// # Lifecycle
//
// New, then Start (returns at once), URL for the endpoint, Close: kills
// every process, ends in-flight invocations with ServiceException, and
// waits for every goroutine the emulator started.
package lambdaemu

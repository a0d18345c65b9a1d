// Package lambda is the target driver for AWS Lambda functions:
//
//	lambda://REGION/FUNCTION[?qualifier=ALIAS][&mode=event|sync]
//	arn:aws:lambda:REGION:ACCOUNT:function:NAME[:ALIAS][?mode=event|sync]
//
// It calls Lambda's Invoke API with aws-sdk-go-v2 (default credential chain
// unless Config.Credentials is set; region from the target; endpoint from
// Config.Endpoint for the emulator in internal/lambdaemu or LocalStack).
// The payload is the run's trigger as JSON (Payload; docs/lambda.md), which
// functions built with functions/jobfn decode.
//
// # Modes
//
// The mode is per target: ?mode=event or ?mode=sync on the target, else
// Config.Mode (default sync). A group may hold the same function twice, once
// per mode.
//
// Sync (RequestResponse, LogType Tail). Run checks that the function exists
// (GetFunction, cached BeatTTL), returns Dispatch{} at once, and a goroutine
// of the driver waits for the invoke, so trigger pool workers are never held
// for the minutes a function may run. When it returns, the decoded log tail
// (the last 4 KB of the invocation's log) is appended to the run's log and
// the outcome is reported through Sink.Complete:
//
//	answer without a function error   succeeded, 200, the result (jobfn's "result", else the payload), truncated
//	function error                    failed, 500, "function error (Unhandled): TYPE: MESSAGE"
//	"Task timed out" function error   timed_out, 502 (the function's own Lambda timeout)
//	no answer within Request.Timeout  timed_out, 502 (Ringjob stopped waiting; MaxWait without a timeout)
//	Kill                              killed, 500
//	invoke error after the retries    failed, 500
//
// Event (asynchronous). Run invokes with InvocationType Event inside the
// dispatch and returns Dispatch{} once Lambda has queued the event (202).
// The payload carries callback_url (Config.CallbackURL) and callback_token
// (Config.RunToken of the run); the function reports its outcome there as an
// XXL-JOB callback, which the server records. The driver watches the run: if
// no outcome has been recorded when Request.Timeout + EventGrace has passed
// (EventMaxAge without a timeout), it records timed_out. The watch lives in
// this driver's memory; after a restart the callback alone reports the run.
//
// # Errors and retries
//
// Throttling (429 TooManyRequestsException), 409 (function being updated),
// 5xx and failed connections are retried within the invoke, MaxAttempts
// times with exponential backoff and jitter (Retry-After honoured). A
// function that does not exist (ResourceNotFoundException, from GetFunction
// or Invoke) is an error wrapping targets.ErrUnknownTarget: Run fails, so
// failover routing moves on. In sync mode only that check can fail the
// dispatch; later invoke errors are outcomes.
//
// # Beat, IdleBeat, Kill, Log
//
// Beat is GetFunction, cached BeatTTL (found and not found alike; other
// errors are not cached): the role needs lambda:GetFunction besides
// lambda:InvokeFunction. IdleBeat answers targets.ErrBusy while this driver
// has a run of the job in flight (a sync invoke, or an Event run without an
// outcome yet), else as Beat: functions scale out, so busy means only that
// the job itself runs.
//
// A running Lambda invocation cannot be stopped. Kill marks the run killed
// ("a running Lambda invocation cannot be stopped; Ringjob stopped waiting")
// and stops waiting for it; the function runs on until it returns or hits
// its own timeout, which is what really bounds it. Log reads the run's log
// from the sink.
//
// # Lifecycle
//
// Every goroutine (one per sync invoke in flight, at most MaxInFlight, and
// one watchdog for Event runs) belongs to the driver; Close waits for them,
// and once its context ends it abandons the sync invokes, reporting each
// failed.
package lambda

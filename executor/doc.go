// Package executor turns a Go service into an HTTP executor for Ringjob, or
// for any XXL-JOB admin from 2.4 to 3.4 (and 3.5 for triggers and logs). It
// needs only net/http, so any router can mount it.
//
// # Usage
//
//	e, err := executor.New(
//		executor.WithAdminAddresses("http://ringjob:8080"),
//		executor.WithAccessToken(os.Getenv("RINGJOB_EXECUTOR_TOKEN")),
//		executor.WithAppName("billing"),
//		executor.WithAddress("http://10.0.0.5:8081/xxl/"),
//	)
//	e.Register("close-day", func(ctx context.Context, job *executor.Job) error {
//		job.Log("closing %s, shard %d of %d", job.Params, job.ShardIndex, job.ShardTotal)
//		return closeDay(ctx, job.Params)
//	})
//	mux.Handle("/xxl/", http.StripPrefix("/xxl", e.Handler()))
//	err = e.Start(ctx)   // heartbeat, callbacks, retries, log retention
//	...
//	err = e.Stop(ctx)    // leave the registry, drain, cancel, report
//
// or, with a listener of its own, e.ListenAndServe(ctx, ":9999"), which runs
// Start and Stop itself and stops when ctx ends.
//
// On the admin, create an executor group whose AppName is the app name, then
// a BEAN job whose JobHandler is the registered name.
//
// # What it does
//
//   - Serves POST /run (/trigger for 3.5 admins), /beat, /idleBeat, /kill and
//     /log, with the XXL-JOB messages, always as HTTP 200 with the
//     {"code","msg","content","data"} envelope (both payload keys, so 2.x and
//     3.x admins read it). XXL-JOB-ACCESS-TOKEN is checked on every request.
//   - One worker goroutine per job id runs its triggers in order from a FIFO
//     queue; block strategies SERIAL_EXECUTION (queue), DISCARD_LATER
//     (reject while busy) and COVER_EARLY (kill the running handler and the
//     queue, then run the new trigger). Triggers are deduplicated by logId,
//     also after they have finished (the last 10 000). A worker ends after
//     90 s without work.
//   - executorTimeout cancels the handler's context and reports 502 at the
//     deadline, even if the handler ignores its context. /kill cancels the
//     running handler and reports it killed at once, and reports the queued
//     triggers as not executed. Handlers learn why with context.Cause:
//     ErrKilled, ErrTimeout or ErrStopping.
//   - Each run logs to {dir}/{yyyy-MM-dd}/{logId}.log (Job.Log, Job.Logger);
//     /log serves it from a line number, and sets isEnd once the run has
//     ended and every line was read.
//   - Results are called back in batches of up to 50 to {admin}/api/callback,
//     trying each admin in order; a batch no admin takes is written to
//     {dir}/callbacklogs/ and resent every 30 s until one does, across
//     restarts.
//   - Registers every 30 s (registry), removes itself on Stop
//     (registryRemove), sending XXL-JOB-ACCESS-TOKEN and XXL-JOB-APPNAME.
//   - Deletes run-log date directories older than the retention (30 days).
//   - All timers use the injected clock (WithClock), so tests drive them with
//     a fake one.
//
// # Differences from xxl-job-executor-go
//
// github.com/xxl-job/xxl-job-executor-go v1.2.0 is the usual Go executor.
// This package fixes what it gets wrong:
//
//  1. SERIAL_EXECUTION queues triggers; there it rejected them like
//     DISCARD_LATER.
//  2. Errors are answered as the {code,msg} envelope; there /run errors came
//     back in the callback-array shape, which admins call invalid.
//  3. Each trigger has its own Job and context; there one shared task per
//     handler name was overwritten by the next trigger, so a COVER_EARLY run
//     reported the new run's logId.
//  4. Handlers return an error for failure; timeouts report 502 and kills
//     500, and a handler's late result after either is dropped. There a
//     handler could only fail by panicking, and a killed or timed-out run
//     that returned later was reported as a success.
//  5. /kill answers 200 when nothing runs and /idleBeat answers with XXL's
//     message, as the Java executor.
//  6. Run logs are written to files and served by /log by line, under both
//     "content" and "data", so admins 3.3 and later show them; there there
//     were no log files and /log returned a placeholder.
//  7. The incoming access token is checked, and XXL-JOB-APPNAME is sent;
//     there neither was.
//  8. Callbacks are batched, retried over the admin list and saved to retry
//     files; there each was sent once, to one admin, with no retry.
//  9. It registers every 30 s with the trailing-slash URL, stops its
//     heartbeat on Stop and removes itself; there the heartbeat never stopped.
//  10. Admin calls have a timeout (3 s) and it has no package-level state, so
//     two executors can live in one process.
//
// # Protocol notes
//
// Callbacks use the 2.x – 3.4 shape, a JSON array of {logId, logDateTim,
// handleCode, handleMsg}, with logDateTime added for 3.5 readers; Ringjob
// reads this shape. XXL-JOB 3.5 admins expect {"callbackList":[...]} instead.
// GLUE (script) jobs are not supported: such triggers are rejected with
// XXL-JOB's "not supported" message.
package executor

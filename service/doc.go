// Package service is Ringjob's service layer over groups, jobs, runs,
// executors, alarms and the audit log. The REST API (api/), the web console
// and the CLI all call it; none of them reaches into the store for these
// resources. Accounts, API tokens, sessions, role bindings and logins are
// the job of auth/identity, which does not depend on this package; the two
// share internal/servicekit (typed errors, pages, the audit writer).
//
// # What it adds to the store
//
//   - Validation. Every input is checked before anything is written, and a
//     refused input changes nothing. Each refusal is a *ValidationError whose
//     Field is the input field in its API spelling ("schedule_conf",
//     "members[1]", "Idempotency-Key") and whose Message says what was wrong
//     and how to fix it. Schedules are compiled with schedule.Parse (its
//     ParseError.Field names the field); group members are checked with the
//     target drivers (targets.Registry.Validate), so an undeclared
//     local://NAME or an unknown scheme is refused when saved, not when fired.
//   - Scheduling state. Starting a job computes its first fire from the
//     schedule and the clock; a job with schedule_type none cannot start
//     (XXL-JOB's rule). An edit that keeps the schedule leaves the next fire
//     time to the scheduler; one that changes it recomputes it.
//   - Manual triggers go through the scheduler (Triggerer), with an optional
//     idempotency key: a key the job has seen returns the earlier run.
//   - Run control goes through the driver of the run's target: logs are read
//     with Driver.Log and runs are killed with Driver.Kill, which reports the
//     outcome through the scheduler's Sink. A run still scheduled is killed
//     in the ledger directly and never dispatched.
//   - Listings page with opaque cursors (Page.NextCursor).
//
// # Errors
//
// errors.go holds the typed errors the API maps to HTTP statuses:
// *ValidationError (400), *NotFoundError (404, matches store.ErrNotFound),
// *ConflictError (409, matches store.ErrConflict) and *PreconditionError
// (412) are servicekit's, under aliases; *TargetError (502: a target driver
// could not kill a run or read its log) and ErrNoScheduler (503) are this
// package's. Anything else is an internal error.
//
// All time comes from the injected clock.
package service

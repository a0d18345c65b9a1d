package executor

import "errors"

// Causes a handler's context is cancelled with; read them with context.Cause.
var (
	// ErrKilled: the admin sent /kill for the job, or a COVER_EARLY trigger
	// or a change of handler replaced the run.
	ErrKilled = errors.New("executor: run killed")
	// ErrTimeout: the run passed its executorTimeout.
	ErrTimeout = errors.New("executor: run timed out")
	// ErrStopping: the executor is stopping and the shutdown grace period has
	// passed.
	ErrStopping = errors.New("executor: executor is stopping")
)

// Lifecycle errors.
var (
	// ErrStarted is returned by Start and Serve when the executor was already
	// started.
	ErrStarted = errors.New("executor: already started")
	// ErrStopped is returned by Start and Serve after Stop.
	ErrStopped = errors.New("executor: stopped; build a new one with New")
	// ErrNoAddress is returned by Start when no registry address is known:
	// set WithAddress, or use ListenAndServe / Serve, which derive it from the
	// listener.
	ErrNoAddress = errors.New("executor: no address to register; set WithAddress to the URL the admin calls, e.g. http://10.0.0.5:9999/")
)

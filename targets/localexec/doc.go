// Package localexec is the target driver for local://NAME: a command the
// operator declared in the server config (Config.Commands), run as a process
// on the scheduler's host. A job can only name a declared command; nothing a
// user types becomes a command line, and nothing goes through a shell.
//
// # Running
//
// Run starts Command.Argv directly (exec, no shell) in a new process group and
// returns at once with Dispatch{Done: nil}; a goroutine owned by the driver
// supervises the process and reports the outcome through targets.Sink.Complete:
//
//	exit status 0             succeeded, code 200, its last stdout line (at most
//	                          4 KiB; a workflow node's output), or "exit status 0"
//	                          when it printed none
//	exit status N             failed, code N, "exit status N: <last stderr line>"
//	ended by a signal         failed, code 128+signal (not one the driver sent)
//	Kill / Close              killed, code 500
//	Request.Timeout passed    timed_out, code 502
//
// The run sees its trigger in the environment: RINGJOB_JOB_ID, RINGJOB_RUN_ID,
// RINGJOB_PARAMS, RINGJOB_SHARD_INDEX, RINGJOB_SHARD_TOTAL, RINGJOB_ATTEMPT and
// RINGJOB_SCHEDULED_AT (RFC 3339, empty for a zero time). Params are never a
// bare argument, which a program could read as options ("-S/bin/sh -c id" to
// /usr/bin/env): Command.ParamsAsArg also passes them after a "--" argument,
// Command.ParamsArg inside a declared template with a fixed prefix
// ("--message={params}"), Command.ParamsStdin on standard input. Params arrive
// byte for byte (shell metacharacters and newlines included); only a NUL byte
// is refused, since no process can receive one. Besides those, the process gets
// Command.Env and, unless Config.InheritEnv is set, only PATH, HOME, LANG and
// TZ from the scheduler.
//
// A run id that is already running is not started again (dispatch is
// idempotent by run id). Command.MaxConcurrency rejects runs over the limit at
// dispatch with an error wrapping ErrConcurrencyLimit and targets.ErrBusy.
//
// # Ending a run
//
// Kill, a timeout and Close end the whole process group, children and
// grandchildren included: SIGTERM to the group, then SIGKILL once
// Config.KillGrace has passed if any process of it still runs. When the
// leader exits by itself and leaves processes behind in its group, they are
// ended the same way. A run is reported only when its group is gone.
//
// Processes that are not the driver's children cannot be waited for, so the
// driver polls the group (kill(2) and, on Linux, /proc, where zombies do not
// count). Orphaned zombies are reaped by PID 1 or the nearest child
// subreaper; when that is the scheduler itself (it runs as PID 1 in a
// container, or set PR_SET_CHILD_SUBREAPER) the driver reaps those of its
// groups, so none pile up.
//
// # Output
//
// Stdout and stderr are read line by line into the run's central log
// (Sink.AppendLog), stderr lines prefixed with "[stderr] ", in batches every
// 200ms or 64 KiB and at exit; all output is in the log before the outcome is
// reported. A run keeps at most Config.LogCapBytes; past it the log gets the
// line "[ringjob: output truncated after N bytes]" and the rest is read and
// discarded, so the process never blocks on a full pipe. A process that
// leaves the group (setsid) but keeps the pipes open stops being read
// KillGrace after the group has ended, so it cannot hold a run open.
//
// # Lifecycle
//
// Every goroutine belongs to one run's supervisor, and Close waits for all of
// them. Beat checks that the command is declared and its program still
// executable; IdleBeat reports targets.ErrBusy while the job has a process
// running from this driver; Log reads the run's log from the sink.
//
// The driver needs process groups and is built on unix systems only.
package localexec

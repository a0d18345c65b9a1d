// Package targets defines how Ringjob reaches the things that run jobs.
//
// A target is a URI; a Driver per scheme runs it (local://, http://, lambda://).
// Every driver answers the same questions: run, alive (Beat), idle (IdleBeat),
// kill a run, and read a run's log from a line. Drivers that finish a run later
// report its outcome through the Sink the scheduler gives them, so a trigger
// pool worker is only busy for the dispatch itself, never for the whole run.
//
// The scheduler looks drivers up in a Registry by URI scheme. Subpackages hold
// the drivers; targettest holds the conformance suite every driver passes.
package targets

package targets

// Capabilities are what targets of one kind can do, declared by their
// driver, so that the scheduler and the service ask the target instead of
// testing its URI's prefix. The zero value is a target that declares
// nothing: it keeps its own queue per job, speaks no executor protocol and
// runs away from the replica that sent it.
type Capabilities struct {
	// Unqueued: every dispatch runs at once, with no queue per job at the
	// target (local processes, functions), so the scheduler applies the
	// job's block strategy itself. An HTTP executor queues and applies it,
	// as in XXL-JOB.
	Unqueued bool
	// ExecutorProtocol: targets register by heartbeat and report results
	// through the executor API (/api/registry, /api/callback) with their
	// group's executor token; a run whose executor left the registry will
	// not report.
	ExecutorProtocol bool
	// OnDispatchingNode: the run is a process of the replica that sent it,
	// so it ends with that replica, and only that replica can kill it
	// (other replicas leave a kill request in the database).
	OnDispatchingNode bool
	// KillsWholeJob: a kill stops every run of the job the target holds,
	// not only the one named (XXL-JOB's /kill is by job id), so the runs
	// queued behind it end killed too.
	KillsWholeJob bool
}

// CapabilityDeclarer is implemented by drivers whose targets differ from
// the zero Capabilities.
type CapabilityDeclarer interface {
	Capabilities() Capabilities
}

// Capabilities answers what the target can do, as its driver declares; a
// target with no driver, or whose driver declares nothing, has the zero
// value, and so does every target of a nil registry.
func (r *Registry) Capabilities(target string) Capabilities {
	if r == nil {
		return Capabilities{}
	}
	d, err := r.For(target)
	if err != nil {
		return Capabilities{}
	}
	if c, ok := d.(CapabilityDeclarer); ok {
		return c.Capabilities()
	}
	return Capabilities{}
}

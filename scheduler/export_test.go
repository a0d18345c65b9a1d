package scheduler

// DispatchSettled reports that every queued run that can reach its hand-off
// without the clock has done so (tests on a fake clock wait for it before
// advancing, so a worker's hand-off never races the clock).
func (s *Scheduler) DispatchSettled() bool { return s.disp.settled() }

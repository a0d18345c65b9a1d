package scheduler

// DispatchSettled reports that every queued run that can reach its hand-off
// without the clock has done so (tests on a fake clock wait for it before
// advancing, so a worker's hand-off never races the clock).
func (s *Scheduler) DispatchSettled() bool { return s.disp.settled() }

// ClockWaiters is how many goroutines of a running scheduler sleep on the
// clock between rounds: one per clock-driven service. A test on a fake clock
// waits for that many before advancing it, so the replica has finished the
// work of the current instant.
func (s *Scheduler) ClockWaiters() int { return len(s.clockDriven()) }

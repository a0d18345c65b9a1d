// Package reports keeps run_reports, the aggregate the dashboard and the
// stats endpoint read: per minute and per hour, for every job, every group
// and all runs together, the number of runs by outcome and their duration
// sum and maximum. A roll-up on one replica at a time (a lease) walks the
// runs table by id from a watermark; each step adds its counts and moves the
// watermark in one transaction with a compare-and-set, so every run is
// counted exactly once. A run not final yet when the walk passes it is noted
// in run_reports_pending and counted when it ends. Buckets outlive the runs
// (reports.keep, default 400 days; minute buckets reports.minute_keep,
// default 2 days); retention never deletes a run before it is counted.
package reports

// Package retention keeps the runs table and the run logs from growing
// without end: a background worker deletes finished runs and their logs
// older than the configured age (retention.runs, retention.logs, per group),
// in small batches with pauses so that scheduling is not slowed, on one
// replica at a time (a lease in the database), and never a run that is still
// needed (see store.RunsNeeded). With retention.partitioned on MySQL or
// PostgreSQL, whole day partitions are dropped instead (partitions.go).
//
// The walk follows the primary key from the oldest run: ids grow with
// creation time, so the runs old enough to go are at the start of the table,
// and every read is a cheap key range. The walk stops at the first run too
// young for the longest retention in force.
package retention

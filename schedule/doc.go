// Package schedule turns a job's schedule (type, conf and time zone) into a
// pure Schedule: parse once with Parse, then ask Next(after) for the first fire
// strictly after an instant. Nothing here reads a clock or has side effects, and
// every Schedule is safe for concurrent use. Fire times are whole seconds.
//
// # Types
//
//   - none: never fires (manual, API and child-job triggers only). conf must be empty.
//   - cron: a cron expression with seconds, read on the wall clock of the job's
//     time zone (below).
//   - fixed_rate: conf is a whole number of seconds, 1 to 31536000 (365 days).
//     Next(after) = after + N seconds, rounded up to a whole second, as XXL-JOB's
//     FIX_RATE. It counts elapsed time, so the time zone and DST do not matter.
//   - at: fires once. conf is RFC 3339 with an offset ("2026-12-01T02:00:00+01:00",
//     the offset wins over the time zone) or a local "2006-01-02 15:04:05" /
//     "2006-01-02T15:04:05" read in the job's time zone, with the DST rules below.
//     Fractions of a second round up. Next(after) returns the instant while it is
//     strictly after `after`, then false.
//
// # Cron dialect
//
// Six fields, seconds first, as Quartz and XXL-JOB:
//
//	sec  min  hour  day-of-month  month  day-of-week
//	0-59 0-59 0-23  1-31          1-12   0-6
//	                              JAN-DEC SUN-SAT
//
// Each field is a comma list of *, N, N-M, */S, N/S (from N to the end, every S)
// or N-M/S. Names are case-insensitive. ? means "any" and is allowed only in
// day-of-month and day-of-week. An optional seventh field (year) is accepted
// only as * and dropped. The shorthands @yearly, @annually, @monthly, @weekly,
// @daily, @midnight and @hourly are accepted. Expressions are compiled by
// github.com/robfig/cron/v3 after this package has validated them.
//
// Day-of-week numbers follow robfig and Vixie cron: 0=SUN, 1=MON ... 6=SAT.
// They are NOT Quartz's 1=SUN ... 7=SAT, so a Quartz "2-6" (Monday to Friday)
// is "1-5" here. 7 is rejected rather than guessed, because Quartz reads it as
// Saturday and Vixie cron as Sunday. Names (MON-FRI) mean the same everywhere;
// prefer them, especially when moving jobs from XXL-JOB.
//
// At most one of day-of-month and day-of-week may be restricted; the other must
// be * or ? (the Quartz rule; robfig's "either day matches" rule never applies).
//
// Rejected with an error that says how to fix it: five-field expressions
// (prefix "0 " for second 0), year values other than *, Quartz's L, W, LW and #,
// ranges that wrap (22-2; write 22-23,0-2), both day fields restricted, dates
// that never occur (30 February, 31 April), steps of 0 or longer than the
// field, TZ= prefixes (use the time zone field), and @every (use fixed_rate).
//
// # Time zones and DST
//
// The time zone is an IANA name such as "Europe/Berlin"; "" means UTC and
// "Local" is rejected so a schedule never depends on the machine. The tz
// database is embedded (time/tzdata).
//
// Cron expressions are matched on the zone's wall clock, where every day has 24
// hours; each matching wall time is then mapped to an instant:
//
//   - A wall time that occurs once fires at that instant.
//   - A wall time that does not occur (spring forward) fires once, at the instant
//     the gap ends. In Europe/Berlin on 2026-03-29 the clocks jump from 02:00 CET
//     to 03:00 CEST, so "0 30 2 * * ?" fires at 03:00 CEST (01:00 UTC). All wall
//     times in one gap map to that same instant and fire once in total: "0 * 2 * * ?"
//     fires once that day, and a 03:00 fire that coincides with the gap end is the
//     same fire.
//   - A wall time that occurs twice (fall back) fires once, at its first
//     occurrence. In Europe/Berlin on 2026-10-25 the clocks go back from 03:00 CEST
//     to 02:00 CET, so "0 30 2 * * ?" fires at 02:30 CEST (00:30 UTC) only, and
//     "0 */15 * * * ?" fires at 02:00-02:45 CEST, then not again until 03:00 CET:
//     a frequent schedule pauses for the repeated hour. Use fixed_rate for
//     intervals of elapsed time.
//
// So a daily job fires exactly once on the nights the clocks change, chained
// fires are strictly increasing, and Next(after) is the earliest such instant
// strictly after `after`, wherever `after` falls (even inside a repeated hour).
// Cron and at fires are returned in the job's zone; fixed_rate keeps the
// location of `after`.
//
// # Errors
//
// Parse returns a *ParseError whose Field is schedule_type, schedule_conf or
// time_zone and whose message names what was wrong and how to fix it, for
// example:
//
//	cron "0 0 25 * * ?": hour 25 is out of range 0-23 (fields: sec min hour day-of-month month day-of-week)
//
// Every such error matches ErrInvalid with errors.Is.
package schedule

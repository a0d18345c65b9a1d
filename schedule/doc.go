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
// Quartz's, as XXL-JOB and Amazon EventBridge use it: an expression moved
// from either fires on the same days here. Six fields, seconds first, and an
// optional year:
//
//	sec  min  hour  day-of-month  month    day-of-week  [year]
//	0-59 0-59 0-23  1-31          1-12     1-7          1970-2199
//	                L W           JAN-DEC  SUN-SAT L #
//
// Day-of-week counts 1=SUN, 2=MON ... 7=SAT (not Vixie cron's 0=SUN); 0 is
// rejected. Names are case-insensitive.
//
// Each field is a comma list of *, N, N-M, */S, N/S (from N to the end of
// the field, every S) or N-M/S. A range may overflow, as in Quartz: hours
// 22-2 are 22, 23, 0, 1, 2 and FRI-MON is Friday to Monday (not in the
// year). A step after a name (MON/2) is rejected because Quartz ignores such
// a step; write 2/2 or list the days. ? means "any" and is allowed only in
// day-of-month and day-of-week. At most one of the two may be restricted;
// the other must be * or ? (Quartz insists on ?; * is accepted here too).
//
// Day-of-month also takes, alone or in a list:
//
//   - L, the last day of the month; L-3, three days before it (0-30);
//   - 15W, the weekday (Monday to Friday) nearest the 15th, never leaving
//     the month: Saturday the 1st gives Monday the 3rd, Sunday the 31st gives
//     Friday the 29th; a day the month does not have (31W in April) gives no
//     fire that month;
//   - LW, the last weekday of the month; L-3W, the weekday nearest L-3.
//
// Day-of-week also takes, standing alone as in Quartz: L alone (Saturday,
// the last day of the week), 6L or FRIL (the last Friday of the month), and
// 6#3 or FRI#3 (the third Friday; #1 to #5, no fire in a month without a
// fifth).
//
// The year field takes the same items (no L, W or #); without it every year
// matches. An expression whose years have all passed parses but never fires
// again; one that can never fire at all (30 February, the fifth Monday of
// February 2027) is rejected.
//
// An EventBridge expression is accepted as written there, cron(minutes hours
// day-of-month month day-of-week year), e.g. cron(0 18 ? * MON-FRI *), and
// stored as the Quartz expression with second 0. Six bare fields that only
// make sense as EventBridge's are rejected with that hint. rate() and at()
// are not cron: use fixed_rate and at.
//
// The shorthands @yearly, @annually, @monthly, @weekly (Sunday midnight),
// @daily, @midnight and @hourly are accepted.
//
// Rejected with an error that says how to fix it: five-field expressions
// (prefix "0 " for second 0), both day fields restricted, dates that never
// occur, L or # in a day-of-week list, W on a range, steps of 0 or longer
// than the field, TZ= prefixes (use the time zone field), and @every (use
// fixed_rate).
//
// Expressions from Ringjob's first dialect (day-of-week 0=SUN ... 6=SAT) are
// rewritten once by the store's migration 0030 (UpgradeLegacyCron): numbers
// become names, so every job keeps firing on the same days.
//
// Evaluation is this package's own (robfig/cron, used before, has none of
// L, W, # or the year): the next matching wall time is found field by field,
// with the matching days of each month computed once, and mapped to an
// instant with the rules below.
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
// Repeated wall times fire once, at their first occurrence, as in Quartz and
// EventBridge Scheduler. For wall times in a gap the three differ: Quartz
// (and so XXL-JOB) fires them shifted by the gap (02:30 becomes 03:30),
// EventBridge Scheduler skips them, and Ringjob fires once at the gap end, so
// a daily job neither runs late nor misses its day.
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
//	cron "0 0 25 * * ?": hour 25 is out of range 0-23 (fields: sec min hour day-of-month month day-of-week [year])
//
// Every such error matches ErrInvalid with errors.Is.
package schedule

// Package importer turns the schedules of another scheduler into jobs as
// code (client/jobspec): `ringjob import xxl` reads an XXL-JOB admin
// database, `ringjob import eventbridge` reads the JSON of `aws scheduler
// get-schedule` / `list-schedules`. It only reads the source and builds a
// declaration to write as files; applying them is `ringjob apply`, so it
// needs no server.
//
// Nothing is dropped silently: whatever the source holds that a Ringjob job
// cannot express (XXL-JOB GLUE source code, an alarm e-mail with no alarm
// channel to map it to, an EventBridge target that is not a Lambda
// function...) becomes a Note. The command prints the notes as a table and
// writes each above its object in the files (jobspec.Comments).
//
// Imported jobs are stopped unless the caller asks to keep the source's
// state (Options.KeepEnabled): a migration runs the new jobs only once the
// old scheduler has stopped firing them.
package importer

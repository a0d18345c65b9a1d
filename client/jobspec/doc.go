// Package jobspec reads and writes jobs as code: YAML files that declare
// groups and jobs, to be kept in git, reviewed, diffed and applied with
// `ringjob apply` (docs/jobs-as-code.md has the format).
//
// A file holds one or more YAML documents; each document may have a
// `groups:` list and a `jobs:` list. A directory is every *.yaml / *.yml file
// under it, in name order. Jobs are named by identity (their group's app
// name and their name); children are named the same way ("app_name/name",
// or a bare name for a job of the same group), never by id.
//
// The reader works on yaml.v3 nodes, so every problem names the file, line
// and field (`jobs.yaml:14: schedule_conf: ...`), and it reports every
// problem it finds, not the first one. Checks that need the server (does a
// child job exist, may this token edit that group) are the server's
// (POST /api/v1/plan); Set.Locate turns the problems it answers back into
// file:line positions.
package jobspec

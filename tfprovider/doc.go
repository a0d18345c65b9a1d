// Package tfprovider is the Terraform provider of Ringjob
// (terraform-provider-ringjob): groups, jobs, service accounts, role
// bindings and API tokens as Terraform resources, and groups, jobs,
// executors and the next fire times of a schedule as data sources.
//
// It is a client of the public REST API through client/, like the CLI and
// the console, and never of the server's packages. Three choices shape it:
//
//   - Concurrent edits are refused, not overwritten. Every read keeps the
//     object's ETag in the resource's private state; updates and deletes
//     send it as If-Match, so an edit made in the console, the CLI or
//     `ringjob apply` after the plan makes the apply fail with a
//     diagnostic saying to plan again. A refresh reads the edit back, so
//     the next plan shows it as drift.
//   - Plan-time checks use what the server uses: enum attributes are
//     checked against the typed constants of internal/kind and schedule/,
//     and a job's schedule is checked by the server's own next-fires
//     endpoint while planning, so a bad cron expression fails the plan
//     with a diagnostic on the attribute at fault.
//   - Errors of the server that name a field (the REST API's error
//     envelope carries it) become diagnostics on that attribute.
package tfprovider

// Package access says who may do what in Ringjob: the roles, the
// permissions they grant, and the Principal a request acts as. It is pure
// (no database, no HTTP) so the API, the CLI and tests share one definition.
//
// # Roles
//
// admin is global and may do everything. owner, operator and viewer are held
// per group (a principal may hold different roles in different groups):
//
//	viewer    read the group, its jobs, runs and run logs
//	operator  viewer + trigger, start/stop jobs, kill runs
//	owner     operator + create, edit and delete jobs, edit the group
//	admin     everything: groups (create/delete), users, service accounts,
//	          tokens of others, role bindings, the audit log, system settings
//
// A role is granted by a binding, to a principal or to an SSO group claim
// ("everyone in IdP group billing-devs is operator of group billing").
//
// Permissions are the unit a route is checked against; a refusal names the
// missing one (for example "jobs.write on group 3").
package access

// Package servicekit holds what Ringjob's service layers share: the typed
// errors the REST API maps to HTTP statuses (*ValidationError 400,
// *NotFoundError 404, *ConflictError 409, *PreconditionError 412), opaque
// cursor paging (Page), the check of free-text input (CheckText) and the
// writing of audit events by the actor of a request (Actor, Audit).
//
// service (groups, jobs, runs) and auth/identity (accounts, credentials,
// sessions) both build on it, so that neither depends on the other and a
// client sees one vocabulary of errors and pages from both.
package servicekit

// Package api serves Ringjob's REST API (v1) with Fiber. Every handler goes
// through the service layer (package service); none touches the store.
//
// # Routes
//
//	GET  /healthz                       the process is up (no auth)
//	GET  /readyz                        database reachable, migrations applied, scheduler started (ringjob server); 503 with the reason otherwise (no auth)
//	GET  /metrics                       Prometheus metrics (no auth: do not expose it publicly;
//	                                    serve it on an internal network or block it at the load balancer)
//	GET  /api/v1/openapi.json           the OpenAPI 3.0 document (openapi.json, embedded)
//	POST|GET /api/v1/groups             GET|PUT|DELETE /api/v1/groups/{id}
//	POST|GET /api/v1/jobs               GET|PUT|PATCH|DELETE /api/v1/jobs/{id}
//	POST /api/v1/jobs/{id}/start|stop|trigger
//	GET|PUT|PATCH|DELETE /api/v1/groups/{app_name}/jobs/{name}   a job by its identity
//	POST /api/v1/groups/{app_name}/jobs/{name}/start|stop|trigger
//	GET  /api/v1/jobs/{id}/next-fires?n=5
//	POST /api/v1/next-fires             preview an unsaved schedule
//	GET  /api/v1/runs                   filters job_id, group_id, state, trigger_type, from, to
//	GET  /api/v1/runs/{id}              GET /api/v1/runs/{id}/log?from_line=1
//	POST /api/v1/runs/{id}/kill
//	POST|DELETE /api/v1/session        log in (username/password) / log out
//	GET  /api/v1/me                     who am I, what may I do (and the session's csrf_token)
//	/api/v1/users, /service-accounts, /tokens, /role-bindings, /audit
//
// # Every route has a permission rule (read this before adding a route)
//
// A /api/v1 route is registered through the routes helper with its rule, in
// the same line:
//
//	v1.get("/jobs/:id", onJob(access.PermJobsRead), s.getJob)
//	v1.post("/stats/rebuild", system(access.PermSystemManage), s.rebuildStats)
//
// The rule constructors (rules.go) are public() (no credentials),
// authenticated() (any principal), system(perm) (admins), onGroup(perm),
// onJob(perm), onRun(perm) (the permission on the group of the :id object),
// and checkedInHandler(perm) (the principal must hold perm on some group; the
// handler checks the group in the body with require(), and lists filter
// with visibleGroups()). The rule is stored as the route's name, so
// TestPermissionMatrix reads it back from the router itself: A NEW ROUTE
// WITHOUT A RULE, OR WITHOUT A ROW IN permissionMatrix (api/permissions_test.go),
// FAILS THE TEST. Add the row with the call to make, and regenerate
// docs/permissions.md (RINGJOB_UPDATE_DOCS=1 go test ./api -run TestPermissionMatrix).
// The XXL-JOB executor endpoints (package xxlapi) are outside /api/v1 and keep
// the executor token.
//
// # Conventions
//
//   - Credentials: "Authorization: Bearer <token>" (an API token), or the
//     rj_session cookie of a browser session (POST /api/v1/session or SSO;
//     HttpOnly, SameSite=Lax, Secure over TLS). A state-changing request on a
//     session must carry X-CSRF-Token (the csrf_token of the login answer or
//     GET /api/v1/me); token requests need none. No credentials, or bad ones,
//     is 401 unauthenticated; a missing permission is 403 permission_denied
//     with "permission" naming it; a missing CSRF token is 403 csrf_failed.
//     Credentials and passwords are never logged.
//   - Bodies are JSON objects with snake_case fields, decoded strictly:
//     malformed JSON, unknown fields, wrong types and trailing data are 400.
//     Bodies over Options.BodyLimit (default 1 MiB) are 413.
//   - Errors are {"error": {"code", "message", "field"}} with codes
//     invalid_argument (400), unauthenticated (401), permission_denied and
//     csrf_failed (403), not_found (404), too_many_requests (429),
//     conflict (409), payload_too_large (413), target_error (502),
//     unavailable (503) and internal (500, only for our own faults, with a
//     request_id to find the details in the log). Bad input is never a 500.
//   - Lists take limit (default 50, max 500) and cursor, and answer
//     {"items": [...], "next_cursor": "..."} ("" on the last page).
//   - Times are RFC 3339 strings in UTC; unset times are null.
//   - A job is identified by its group's app_name and its name, unique within
//     the group (409 conflict on a taken name); /groups/{app_name}/jobs/{name}
//     (URL-encoded) serves wherever /jobs/{id} does.
//   - A job's GET answers an ETag; PUT, PATCH and DELETE with If-Match are
//     refused with 412 precondition_failed when the job changed since.
//     PATCH takes a JSON merge patch (RFC 7386); PUT accepts the read-only
//     fields of the GET output and ignores them (id must be the job's own).
//   - POST /api/v1/jobs/{id}/trigger honours an Idempotency-Key header: 201
//     with the new run, or 200 with the run an earlier request with the same
//     key and body created; the same key with another body is 422
//     idempotency_key_reused.
//   - Each response carries X-Request-Id (the caller's, when it is plain and
//     short, or a new one).
package api

// Package identity is Ringjob's service layer over who may sign in and how:
// users and service accounts (principals), API tokens, sessions, role
// bindings, password and SSO logins, and the login limiter. The REST API
// (api/) authenticates every request with it and serves the account
// endpoints through it; `ringjob admin create-user` uses it too.
//
// It is built on its own (New, from the store, a clock, a logger and the
// AccessOptions) and does not depend on package service: the two share only
// internal/servicekit (typed errors, pages, the audit writer). Package
// service tells it when one of its own changes moved the auth version on
// (a job moved to another group) through AuthChanged.
//
// # Credentials
//
//   - API tokens: 32 random bytes shown once as "rj_" + base64url; only their
//     SHA-256 is stored. EnsureAdminToken provisions the first one (or the
//     configured one); AuthenticateToken checks a presented token.
//   - Sessions: a random cookie value, stored hashed, with an idle and an
//     absolute lifetime (AccessOptions.SessionIdle, SessionMax).
//   - Passwords: argon2id, checked in a bounded pool of hashing slots
//     (login_limit.go explains the pool and the limiter's keys).
//
// Each replica caches checked credentials, role bindings and the groups of
// jobs and runs; its AuthWatcher polls the database's auth version, which
// every change to credentials and bindings moves on, and drops the cache
// when it moves, so a revocation reaches every replica within one poll.
//
// # Errors
//
// Refusals are servicekit errors (*ValidationError, *NotFoundError,
// *ConflictError), ErrUnauthenticated and the errors matching it (a revoked
// or expired token, an expired session, a disabled principal),
// ErrLoginFailed, *ThrottledError (429) and *BusyError (503).
//
// All time comes from the injected clock.
package identity

// Package apitypes declares, once, the bodies of Ringjob's REST API (v1):
// what a client sends and what the server answers. The server (api,
// service) builds and reads them, the Go client (client, jobspec, the CLI)
// re-exports them, so a field added on one side is on the other, and the
// OpenAPI document is checked against them (client's contract test).
//
// Times are RFC 3339 strings in UTC, nil when unset. States and
// strategies are plain strings here, as on the wire, so a program outside
// this module can name every field; the server fills them from
// internal/kind's typed names.
package apitypes

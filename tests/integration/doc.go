// Package integration holds tests that run several parts of Ringjob
// together over real sockets: the scheduler, the executor-facing API and
// HTTP executors (our SDK and a raw one written from the protocol).
package integration

// Package faults is the fault-injection suite: several real `ringjob server`
// processes on a throwaway mariadbd, an XXL-JOB executor on a socket that
// records every arrival, and faults injected from outside (SIGKILL and
// SIGSTOP of replicas, mariadbd SIGTERM and SIGKILL with restart, the
// executor down). Every fire is counted at the executor, by job and
// scheduled time, and compared with the run ledger; the node runs of
// workflows (TestFaultsWorkflows) by run id, against their node attempts.
// The short forms run in `make test`, on mariadbd and then on a throwaway
// PostgreSQL server (with RINGJOB_POSTGRES_DSN set, as .ci/run sets it);
// `make test-faults` runs the long forms (docs/reliability.md).
package faults

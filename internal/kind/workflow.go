package kind

import (
	"fmt"
	"strings"
)

// TriggerWorkflow is the trigger type of a run started as a node of a
// workflow run. Such a run is not retried by its job's retries (the
// workflow engine retries the node) and triggers no child jobs.
const TriggerWorkflow Trigger = "workflow"

// WorkflowRunState is where a workflow run is. It moves queued -> running
// -> a final state; every change is a compare-and-set on the row.
type WorkflowRunState string

// Workflow run states.
const (
	WorkflowQueued    WorkflowRunState = "queued"    // created, waiting for its block strategy to let it run
	WorkflowRunning   WorkflowRunState = "running"   // its nodes are being started and followed
	WorkflowSucceeded WorkflowRunState = "succeeded" // every node ended, and no failure was left unhandled
	WorkflowFailed    WorkflowRunState = "failed"    // a node failed and no failure branch took it
	WorkflowCancelled WorkflowRunState = "cancelled" // cancelled by a user, covered by a newer run, or discarded
	WorkflowTimedOut  WorkflowRunState = "timed_out" // the workflow's timeout passed before it ended
)

// WorkflowRunStates lists the workflow run states.
var WorkflowRunStates = []WorkflowRunState{WorkflowQueued, WorkflowRunning, WorkflowSucceeded, WorkflowFailed, WorkflowCancelled, WorkflowTimedOut}

// Final reports whether a workflow run in this state is finished.
func (s WorkflowRunState) Final() bool {
	return s == WorkflowSucceeded || s == WorkflowFailed || s == WorkflowCancelled || s == WorkflowTimedOut
}

// Valid reports whether s is a known workflow run state.
func (s WorkflowRunState) Valid() bool { return inList(s, WorkflowRunStates) }

// NodeState is where one attempt of a node of a workflow run is.
type NodeState string

// Node states.
const (
	NodePending   NodeState = "pending"   // its start rule is met; its run is being created
	NodeRunning   NodeState = "running"   // its run exists and has no outcome yet
	NodeSucceeded NodeState = "succeeded" // its run succeeded (or a user marked it succeeded)
	NodeFailed    NodeState = "failed"    // its run failed, timed out, was lost or killed
	NodeSkipped   NodeState = "skipped"   // its start rule can no longer be met
	NodeCancelled NodeState = "cancelled" // the workflow run was cancelled or timed out first
)

// NodeStates lists the node states.
var NodeStates = []NodeState{NodePending, NodeRunning, NodeSucceeded, NodeFailed, NodeSkipped, NodeCancelled}

// Final reports whether a node in this state is finished.
func (s NodeState) Final() bool {
	return s == NodeSucceeded || s == NodeFailed || s == NodeSkipped || s == NodeCancelled
}

// StartRule says when a node starts, from the outcomes of its parents (in
// the spirit of Airflow's trigger rules). A node without parents starts
// with the workflow run.
type StartRule string

// Start rules.
const (
	StartAllSucceeded StartRule = "all_succeeded" // every parent succeeded (the default)
	StartAllFinished  StartRule = "all_finished"  // every parent ended, whatever its outcome
	StartAnySucceeded StartRule = "any_succeeded" // at least one parent succeeded
	StartAnyFailed    StartRule = "any_failed"    // at least one parent failed: a failure branch
)

// StartRules lists the start rules.
var StartRules = []StartRule{StartAllSucceeded, StartAllFinished, StartAnySucceeded, StartAnyFailed}

// Valid reports whether r is a known start rule.
func (r StartRule) Valid() bool { return inList(r, StartRules) }

// ParseStartRule maps a start rule name (case and spaces ignored) to its
// StartRule; "" is the default, StartAllSucceeded.
func ParseStartRule(name string) (StartRule, error) {
	n := StartRule(strings.ToLower(strings.TrimSpace(name)))
	if n == "" {
		return StartAllSucceeded, nil
	}
	if n.Valid() {
		return n, nil
	}
	return "", fmt.Errorf("unknown start rule %q: use one of %s", name, Join(StartRules))
}

func inList[T comparable](v T, vs []T) bool {
	for _, x := range vs {
		if v == x {
			return true
		}
	}
	return false
}

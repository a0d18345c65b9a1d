// Package workflow is the pure part of workflows: a definition (nodes that
// each run a job, and edges between them), its validation (names, limits,
// cycles, templates), the evaluation of start rules over the states of a
// workflow run's nodes, and the templates through which a node's params
// take the workflow's input and the outputs of the nodes before it.
//
// Nothing here touches the database or the clock: the workflow engine in
// scheduler/ reads a run's node rows, asks Evaluate what to start, skip or
// finish, and writes that with compare-and-sets and unique keys.
package workflow

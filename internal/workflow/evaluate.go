package workflow

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ringjob/ringjob/internal/kind"
)

// Plan is what a workflow run's next step is, given its nodes' states.
type Plan struct {
	// Start are the nodes whose start rule is now met.
	Start []string
	// Skip are the nodes whose start rule can no longer be met, with why.
	Skip map[string]string
	// Done is set when every node has ended: Outcome is the run's final
	// state (succeeded or failed) and Message says why.
	Done    bool
	Outcome kind.WorkflowRunState
	Message string
}

// Evaluate plans the next step of a workflow run from the current state
// of each node that has one (a node absent from states has not been
// decided yet). Skips propagate within the one call: a node skipped makes
// its children decidable at once.
func Evaluate(g Graph, states map[string]kind.NodeState) Plan {
	cur := make(map[string]kind.NodeState, len(g.Order))
	for k, v := range states {
		cur[k] = v
	}
	p := Plan{Skip: map[string]string{}}
	for changed := true; changed; {
		changed = false
		for _, n := range g.Order {
			if _, ok := cur[n]; ok {
				continue
			}
			met, impossible := ruleMet(g.Nodes[n].Rule(), g.Parents[n], cur)
			switch {
			case met:
				p.Start = append(p.Start, n)
				cur[n] = kind.NodePending
				changed = true
			case impossible:
				p.Skip[n] = fmt.Sprintf("start rule %s can no longer be met (%s)", g.Nodes[n].Rule(), parentStates(g.Parents[n], cur))
				cur[n] = kind.NodeSkipped
				changed = true
			}
		}
	}
	for _, n := range g.Order {
		if s, ok := cur[n]; !ok || !s.Final() {
			return p
		}
	}
	p.Done = true
	p.Outcome, p.Message = kind.WorkflowSucceeded, "every node ended"
	var unhandled []string
	for _, n := range g.Order {
		if cur[n] == kind.NodeFailed && !handled(g, n, cur) {
			unhandled = append(unhandled, n)
		}
	}
	if len(unhandled) > 0 {
		p.Outcome, p.Message = kind.WorkflowFailed, "failed without a failure branch: "+strings.Join(unhandled, ", ")
	}
	return p
}

// handled reports whether a failed node's failure was taken by a child
// that runs on failures (all_finished or any_failed) and was not skipped.
func handled(g Graph, n string, cur map[string]kind.NodeState) bool {
	for _, c := range g.Children[n] {
		r := g.Nodes[c].Rule()
		if (r == kind.StartAllFinished || r == kind.StartAnyFailed) && cur[c] != kind.NodeSkipped {
			return true
		}
	}
	return false
}

// ruleMet reports whether a start rule is met by the parents' states, or
// can no longer be.
func ruleMet(rule kind.StartRule, parents []string, cur map[string]kind.NodeState) (met, impossible bool) {
	if len(parents) == 0 {
		return true, false
	}
	var final, succeeded, failed int
	for _, p := range parents {
		s, ok := cur[p]
		if !ok || !s.Final() {
			continue
		}
		final++
		switch s {
		case kind.NodeSucceeded:
			succeeded++
		case kind.NodeFailed:
			failed++
		}
	}
	all := final == len(parents)
	switch rule {
	case kind.StartAllFinished:
		return all, false
	case kind.StartAnySucceeded:
		return succeeded > 0, all && succeeded == 0
	case kind.StartAnyFailed:
		return failed > 0, all && failed == 0
	default: // all_succeeded
		return succeeded == len(parents), final > succeeded
	}
}

func parentStates(parents []string, cur map[string]kind.NodeState) string {
	s := make([]string, 0, len(parents))
	for _, p := range parents {
		st := cur[p]
		if st == "" {
			st = "waiting"
		}
		s = append(s, p+" "+string(st))
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

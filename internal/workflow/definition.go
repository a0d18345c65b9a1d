package workflow

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/ringjob/ringjob/internal/kind"
)

// Limits on one definition: a workflow run reads and evaluates all its
// nodes at each look, so their number is bounded.
const (
	MaxNodes      = 100
	MaxEdges      = 500
	MaxParamsLen  = 64 << 10
	MaxRetries    = 10
	MaxTimeoutSec = 7 * 24 * 3600
	// MaxOutput bounds the output of a node kept for later nodes' params.
	MaxOutput = 16 << 10
	// MaxFanOut bounds the runs of one node that fans out (shards or
	// items of a list).
	MaxFanOut = 100
)

// Definition is what a workflow runs: its nodes and the edges between them.
type Definition struct {
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges,omitempty"`
}

// Node is one step of a workflow: a run of a job, with optional overrides.
type Node struct {
	// Name identifies the node in its workflow (edges, templates, the API).
	Name string `json:"name"`
	// JobID is the job the node runs (any target kind).
	JobID int64 `json:"job_id"`
	// Params, when set, replaces the job's params; it may hold templates
	// ({{ input.KEY }}, {{ nodes.NAME.output }}).
	Params *string `json:"params,omitempty"`
	// Retries is how many more attempts the node gets after a failure
	// (the job's own retry count does not apply inside a workflow).
	Retries int `json:"retries,omitempty"`
	// TimeoutSec, when > 0, fails an attempt still running after this
	// long (its run is asked to stop).
	TimeoutSec int `json:"timeout_sec,omitempty"`
	// StartRule says when the node starts; "" is all_succeeded.
	StartRule kind.StartRule `json:"start_rule,omitempty"`
	// Shards, when 2 or more, runs the node as that many runs of its job
	// (shard index 0..Shards-1 of Shards); the node succeeds when all do.
	Shards int `json:"shards,omitempty"`
	// ForEach, when set, is one template ({{ input.KEY }} or
	// {{ nodes.NAME.output }}) that gives a JSON array: the node runs once
	// per item (at most MaxFanOut), its params reading the item as
	// {{ item }}; it succeeds when all do.
	ForEach string `json:"for_each,omitempty"`
}

// FanOut reports whether the node runs as several runs.
func (n Node) FanOut() bool { return n.Shards > 1 || n.ForEach != "" }

// Edge makes To a child of From: To's start rule looks at From's outcome.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Rule returns the node's start rule, the default filled in.
func (n Node) Rule() kind.StartRule {
	if n.StartRule == "" {
		return kind.StartAllSucceeded
	}
	return n.StartRule
}

// FieldError is one problem of a definition, named by its field.
type FieldError struct {
	Field   string
	Message string
}

func (e FieldError) Error() string { return e.Field + ": " + e.Message }

// Errors are the problems of a definition, all of them.
type Errors []FieldError

func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "; ")
}

var nodeName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Validate checks a definition: node names, limits, overrides, edges,
// cycles (named: "a -> b -> a") and templates (a node may read the output
// of its ancestors only). jobExists reports the jobs that exist (nil: not
// checked); unknown jobs are named by field. It returns nil or Errors.
func (d Definition) Validate(jobExists func(ids []int64) (map[int64]bool, error)) error {
	var errs Errors
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if len(d.Nodes) == 0 {
		add("nodes", "a workflow needs at least one node")
	}
	if len(d.Nodes) > MaxNodes {
		add("nodes", "%d nodes: at most %d", len(d.Nodes), MaxNodes)
	}
	if len(d.Edges) > MaxEdges {
		add("edges", "%d edges: at most %d", len(d.Edges), MaxEdges)
	}
	index := map[string]int{}
	var ids []int64
	for i, n := range d.Nodes {
		f := fmt.Sprintf("nodes[%d]", i)
		switch {
		case !nodeName.MatchString(n.Name):
			add(f+".name", "%q: use 1 to 64 of a-z, 0-9, '_' and '-', starting with a letter or digit", n.Name)
		case index[n.Name] > 0:
			add(f+".name", "%q is also the name of nodes[%d]", n.Name, index[n.Name]-1)
		default:
			index[n.Name] = i + 1
		}
		if n.JobID <= 0 {
			add(f+".job_id", "a node runs a job: give its id")
		} else {
			ids = append(ids, n.JobID)
		}
		if n.Params != nil && len(*n.Params) > MaxParamsLen {
			add(f+".params", "%d bytes: at most %d", len(*n.Params), MaxParamsLen)
		}
		if n.Retries < 0 || n.Retries > MaxRetries {
			add(f+".retries", "%d: use 0 to %d", n.Retries, MaxRetries)
		}
		if n.TimeoutSec < 0 || n.TimeoutSec > MaxTimeoutSec {
			add(f+".timeout_sec", "%d: use 0 (none) to %d", n.TimeoutSec, MaxTimeoutSec)
		}
		if n.Shards < 0 || n.Shards > MaxFanOut {
			add(f+".shards", "%d: use 0 (one run) or 2 to %d", n.Shards, MaxFanOut)
		}
		if n.Shards > 1 && n.ForEach != "" {
			add(f+".for_each", "a node fans out by shards or by for_each, not both")
		}
		if n.StartRule != "" && !n.StartRule.Valid() {
			add(f+".start_rule", "unknown start rule %q: use one of %s", n.StartRule, kind.Join(kind.StartRules))
		}
	}
	seen := map[Edge]bool{}
	for i, e := range d.Edges {
		f := fmt.Sprintf("edges[%d]", i)
		if index[e.From] == 0 {
			add(f+".from", "no node is named %q", e.From)
		}
		if index[e.To] == 0 {
			add(f+".to", "no node is named %q", e.To)
		}
		if e.From == e.To && e.From != "" {
			add(f, "a node cannot be its own parent (%q)", e.From)
		}
		if seen[e] {
			add(f, "the edge %s -> %s is given twice", e.From, e.To)
		}
		seen[e] = true
	}
	if jobExists != nil && len(ids) > 0 {
		found, err := jobExists(ids)
		if err != nil {
			return fmt.Errorf("look up the jobs of the workflow's nodes: %w", err)
		}
		for i, n := range d.Nodes {
			if n.JobID > 0 && !found[n.JobID] {
				add(fmt.Sprintf("nodes[%d].job_id", i), "job %d does not exist (or you may not see it)", n.JobID)
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	g := d.Graph()
	if cycle := g.cycle(); cycle != nil {
		add("edges", "the edges make a cycle: %s", strings.Join(cycle, " -> "))
		return errs
	}
	for i, n := range d.Nodes {
		anc := g.Ancestors(n.Name)
		check := func(field, tmpl string) []ref {
			refs, err := parseTemplate(tmpl)
			if err != nil {
				add(field, "%v", err)
				return nil
			}
			for _, r := range refs {
				if r.node != "" && !anc[r.node] {
					add(field, "%s: node %q is not upstream of %q, so its output is not known when %q starts", r.text, r.node, n.Name, n.Name)
				}
				if r.item && n.ForEach == "" {
					add(field, "%s: only a node with for_each has an item", r.text)
				}
			}
			return refs
		}
		if n.Params != nil {
			check(fmt.Sprintf("nodes[%d].params", i), *n.Params)
		}
		if n.ForEach != "" {
			f := fmt.Sprintf("nodes[%d].for_each", i)
			refs := check(f, n.ForEach)
			if len(refs) != 1 || strings.TrimSpace(n.ForEach) != refs[0].text || refs[0].item {
				add(f, "%q: give one template, {{ input.KEY }} or {{ nodes.NAME.output }}, whose value is a JSON array", n.ForEach)
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Graph is a definition's edges by node.
type Graph struct {
	Order    []string // the nodes in definition order
	Parents  map[string][]string
	Children map[string][]string
	Nodes    map[string]Node
}

// Graph indexes the definition's edges.
func (d Definition) Graph() Graph {
	g := Graph{Parents: map[string][]string{}, Children: map[string][]string{}, Nodes: map[string]Node{}}
	for _, n := range d.Nodes {
		g.Order = append(g.Order, n.Name)
		g.Nodes[n.Name] = n
	}
	for _, e := range d.Edges {
		g.Parents[e.To] = append(g.Parents[e.To], e.From)
		g.Children[e.From] = append(g.Children[e.From], e.To)
	}
	for _, m := range []map[string][]string{g.Parents, g.Children} {
		for _, v := range m {
			sort.Strings(v)
		}
	}
	return g
}

// Ancestors returns the nodes upstream of name.
func (g Graph) Ancestors(name string) map[string]bool {
	out := map[string]bool{}
	stack := append([]string(nil), g.Parents[name]...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if out[n] {
			continue
		}
		out[n] = true
		stack = append(stack, g.Parents[n]...)
	}
	return out
}

// Descendants returns the nodes downstream of name.
func (g Graph) Descendants(name string) map[string]bool {
	out := map[string]bool{}
	stack := append([]string(nil), g.Children[name]...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if out[n] {
			continue
		}
		out[n] = true
		stack = append(stack, g.Children[n]...)
	}
	return out
}

// cycle returns one cycle of the graph as a path that ends where it
// starts, or nil.
func (g Graph) cycle() []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var path []string
	var found []string
	var visit func(n string) bool
	visit = func(n string) bool {
		color[n] = grey
		path = append(path, n)
		for _, c := range g.Children[n] {
			switch color[c] {
			case grey:
				for i, p := range path {
					if p == c {
						found = append(append([]string(nil), path[i:]...), c)
						return true
					}
				}
			case white:
				if visit(c) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		color[n] = black
		return false
	}
	for _, n := range g.Order {
		if color[n] == white && visit(n) {
			return found
		}
	}
	return nil
}

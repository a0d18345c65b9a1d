package jobspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/workflow"
)

// Workflow is a workflow as declared in the files: its group and node jobs
// by identity (app name, GROUP/NAME), never by id, so that the same file
// applies to any server.
type Workflow struct {
	Group         string         `yaml:"group" json:"group"`
	Name          string         `yaml:"name" json:"name"`
	Description   string         `yaml:"description,omitempty" json:"description"`
	Nodes         []WorkflowNode `yaml:"nodes" json:"nodes"`
	Edges         []WorkflowEdge `yaml:"edges,omitempty" json:"edges"`
	TimeoutSec    int            `yaml:"timeout_sec,omitempty" json:"timeout_sec"`
	ScheduleType  string         `yaml:"schedule_type,omitempty" json:"schedule_type"`
	ScheduleConf  string         `yaml:"schedule_conf,omitempty" json:"schedule_conf"`
	TimeZone      string         `yaml:"time_zone,omitempty" json:"time_zone"`
	MisfirePolicy string         `yaml:"misfire_policy,omitempty" json:"misfire_policy"`
	BlockStrategy string         `yaml:"block_strategy,omitempty" json:"block_strategy"`
	ActiveFrom    string         `yaml:"active_from,omitempty" json:"active_from"`
	ActiveUntil   string         `yaml:"active_until,omitempty" json:"active_until"`
	Enabled       bool           `yaml:"enabled,omitempty" json:"enabled"`
}

// WorkflowNode is one node: Job is GROUP/NAME, or a bare name for a job of
// the workflow's group.
type WorkflowNode struct {
	Name       string  `yaml:"name" json:"name"`
	Job        string  `yaml:"job" json:"job"`
	Params     *string `yaml:"params,omitempty" json:"params,omitempty"`
	Retries    int     `yaml:"retries,omitempty" json:"retries,omitempty"`
	TimeoutSec int     `yaml:"timeout_sec,omitempty" json:"timeout_sec,omitempty"`
	StartRule  string  `yaml:"start_rule,omitempty" json:"start_rule,omitempty"`
	Shards     int     `yaml:"shards,omitempty" json:"shards,omitempty"`
	ForEach    string  `yaml:"for_each,omitempty" json:"for_each,omitempty"`
}

// WorkflowEdge makes To a child of From.
type WorkflowEdge struct {
	From string `yaml:"from" json:"from"`
	To   string `yaml:"to" json:"to"`
}

// Ref is "app_name/name".
func (w Workflow) Ref() string { return w.Group + "/" + w.Name }

func workflowKey(app, name string) string { return "workflow " + app + "/" + name }

// nodeFields are a node's fields as read (Params is a *string, which
// decodeFields does not set).
type nodeFields struct {
	Name       string `yaml:"name"`
	Job        string `yaml:"job"`
	Params     string `yaml:"params"`
	Retries    int    `yaml:"retries"`
	TimeoutSec int    `yaml:"timeout_sec"`
	StartRule  string `yaml:"start_rule"`
	Shards     int    `yaml:"shards"`
	ForEach    string `yaml:"for_each"`
}

// workflowFields are a workflow's scalar fields; nodes and edges are read
// item by item.
type workflowFields struct {
	Group         string `yaml:"group"`
	Name          string `yaml:"name"`
	Description   string `yaml:"description"`
	TimeoutSec    int    `yaml:"timeout_sec"`
	ScheduleType  string `yaml:"schedule_type"`
	ScheduleConf  string `yaml:"schedule_conf"`
	TimeZone      string `yaml:"time_zone"`
	MisfirePolicy string `yaml:"misfire_policy"`
	BlockStrategy string `yaml:"block_strategy"`
	ActiveFrom    string `yaml:"active_from"`
	ActiveUntil   string `yaml:"active_until"`
	Enabled       bool   `yaml:"enabled"`
}

func (s *Set) readWorkflow(file string, n *yaml.Node) Problems {
	// Split off nodes and edges; decodeFields reads the rest.
	rest := &yaml.Node{Kind: yaml.MappingNode, Line: n.Line}
	var nodesN, edgesN *yaml.Node
	var nodesLine, edgesLine int // of the keys: a list's own line is its first item's
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch n.Content[i].Value {
		case "nodes":
			nodesN, nodesLine = n.Content[i+1], n.Content[i].Line
		case "edges":
			edgesN, edgesLine = n.Content[i+1], n.Content[i].Line
		default:
			rest.Content = append(rest.Content, n.Content[i], n.Content[i+1])
		}
	}
	var f workflowFields
	lines, probs := decodeFields(file, rest, &f, "workflow")
	switch {
	case f.Group == "":
		return append(probs, Problem{Pos: Pos{file, n.Line}, Field: "group", Msg: "is required: the app name of the workflow's group"})
	case f.Name == "":
		return append(probs, Problem{Pos: Pos{file, n.Line}, Field: "name", Msg: "is required: the workflow's name, unique within its group"})
	}
	key := workflowKey(f.Group, f.Name)
	if p, dup := s.pos[key]; dup {
		return append(probs, Problem{Pos: Pos{file, n.Line}, Field: "name", Msg: fmt.Sprintf("workflow %s/%s is declared twice (first at %s)", f.Group, f.Name, p)})
	}
	s.pos[key] = Pos{file, n.Line}
	for fl, l := range lines {
		s.pos[fieldKey(key, fl)] = Pos{file, l}
	}
	w := Workflow{Group: f.Group, Name: f.Name, Description: f.Description, TimeoutSec: f.TimeoutSec, ScheduleType: f.ScheduleType,
		ScheduleConf: f.ScheduleConf, TimeZone: f.TimeZone, MisfirePolicy: f.MisfirePolicy, BlockStrategy: f.BlockStrategy,
		ActiveFrom: f.ActiveFrom, ActiveUntil: f.ActiveUntil, Enabled: f.Enabled}
	bad := func(line int, field, format string, args ...any) {
		probs = append(probs, Problem{Pos: Pos{file, line}, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if nodesN == nil || len(nodesN.Content) == 0 {
		bad(n.Line, "nodes", "is required: a workflow needs at least one node")
	} else if nodesN.Kind != yaml.SequenceNode {
		bad(nodesN.Line, "nodes", "must be a list (each item starting with \"- \")")
	} else {
		s.pos[fieldKey(key, "nodes")] = Pos{file, nodesLine}
		for i, it := range nodesN.Content {
			field := fmt.Sprintf("nodes[%d]", i)
			if it.Kind != yaml.MappingNode {
				bad(it.Line, field, "each node must be a mapping of fields")
				continue
			}
			var nf nodeFields
			nl, np := decodeFields(file, it, &nf, "workflow node")
			for k := range np {
				np[k].Field = field + "." + np[k].Field
			}
			probs = append(probs, np...)
			s.pos[fieldKey(key, field)] = Pos{file, it.Line}
			for fl, l := range nl {
				s.pos[fieldKey(key, field+"."+fl)] = Pos{file, l}
			}
			node := WorkflowNode{Name: nf.Name, Job: nf.Job, Retries: nf.Retries, TimeoutSec: nf.TimeoutSec, StartRule: nf.StartRule, Shards: nf.Shards, ForEach: nf.ForEach}
			if _, given := nl["params"]; given {
				p := nf.Params
				node.Params = &p
			}
			if node.Name == "" {
				bad(it.Line, field+".name", "is required: the node's name, unique within the workflow")
			}
			if node.Job == "" {
				bad(it.Line, field+".job", "is required: the job the node runs, GROUP/NAME or the name of a job of the workflow's group")
			} else if !strings.Contains(node.Job, "/") {
				node.Job = w.Group + "/" + node.Job
				s.bareJobs[fieldKey(key, field+".job")] = true
			}
			w.Nodes = append(w.Nodes, node)
		}
		if edgesN != nil {
			s.pos[fieldKey(key, "edges")] = Pos{file, edgesLine}
		}
		if edgesN != nil && edgesN.Kind != yaml.SequenceNode && edgesN.Tag != "!!null" {
			bad(edgesN.Line, "edges", "must be a list of from:/to: mappings")
		} else if edgesN != nil {
			for i, it := range edgesN.Content {
				field := fmt.Sprintf("edges[%d]", i)
				var e WorkflowEdge
				if it.Kind != yaml.MappingNode {
					bad(it.Line, field, "each edge must be a mapping with from: and to:")
					continue
				}
				el, ep := decodeFields(file, it, &e, "workflow edge")
				for k := range ep {
					ep[k].Field = field + "." + ep[k].Field
				}
				probs = append(probs, ep...)
				s.pos[fieldKey(key, field)] = Pos{file, it.Line}
				for fl, l := range el {
					s.pos[fieldKey(key, field+"."+fl)] = Pos{file, l}
				}
				w.Edges = append(w.Edges, e)
			}
		}
	}
	if len(w.Nodes) > 0 {
		probs = append(probs, s.checkDefinition(key, w)...)
	}
	if _, err := kind.ParseBlock(w.BlockStrategy); err != nil {
		bad(s.Locate("workflow", w.Group, w.Name, "block_strategy").Line, "block_strategy", "%q is unknown; use SERIAL_EXECUTION, DISCARD_LATER or COVER_EARLY", w.BlockStrategy)
	}
	s.Workflows = append(s.Workflows, w)
	return probs
}

// checkDefinition runs the server's own checks of a definition that need
// no job (names, limits, edges, cycles, templates), each problem placed at
// its field's line, or the nearest enclosing one known.
func (s *Set) checkDefinition(key string, w Workflow) Problems {
	in := w.Input(0, func(string) int64 { return 1 }) // jobs are checked by name elsewhere
	err := in.Definition.Validate(nil)
	var errs workflow.Errors
	if !errors.As(err, &errs) {
		return nil
	}
	var probs Problems
	for _, e := range errs {
		if strings.HasSuffix(e.Field, ".job_id") {
			continue
		}
		at := s.pos[key]
		for f := e.Field; f != ""; {
			if p, ok := s.pos[fieldKey(key, f)]; ok {
				at = p
				break
			}
			i := strings.LastIndexByte(f, '.')
			if i < 0 {
				break
			}
			f = f[:i]
		}
		probs = append(probs, Problem{Pos: at, Field: e.Field, Msg: e.Message})
	}
	return probs
}

// checkWorkflowJobs names, once every file is read, each node whose job is
// a bare name (a job of the workflow's group) that no file declares. A
// GROUP/NAME job not in the files is looked up on the server at plan time.
func (s *Set) checkWorkflowJobs() Problems {
	declared := make(map[string]bool, len(s.Jobs))
	for _, j := range s.Jobs {
		declared[j.Group+"/"+j.Name] = true
	}
	var probs Problems
	for _, w := range s.Workflows {
		for i, n := range w.Nodes {
			field := fmt.Sprintf("nodes[%d].job", i)
			if n.Job == "" || declared[n.Job] {
				continue
			}
			if k := fieldKey(workflowKey(w.Group, w.Name), field); s.bareJobs[k] {
				probs = append(probs, Problem{Pos: s.pos[k], Field: field, Msg: fmt.Sprintf("no job %s is declared in these files; name a job declared here or write GROUP/NAME for one on the server", n.Job)})
			}
		}
	}
	return probs
}

// Normalized is the workflow with the server's defaults filled in, for
// comparing a declaration with what a server has.
func (w Workflow) Normalized() Workflow {
	def := func(v *string, d string) {
		if strings.TrimSpace(*v) == "" {
			*v = d
		}
	}
	def(&w.ScheduleType, "none")
	def(&w.TimeZone, "UTC")
	def(&w.MisfirePolicy, "do_nothing")
	def(&w.BlockStrategy, "SERIAL_EXECUTION")
	nodes := make([]WorkflowNode, len(w.Nodes))
	for i, n := range w.Nodes {
		def(&n.StartRule, string(kind.StartAllSucceeded))
		nodes[i] = n
	}
	w.Nodes = nodes
	if w.Edges == nil {
		w.Edges = []WorkflowEdge{}
	}
	return w
}

// withoutWorkflowDefaults leaves out the fields that hold the server's
// defaults (export writes what matters).
func withoutWorkflowDefaults(w Workflow) Workflow {
	clear := func(v *string, def string) {
		if strings.EqualFold(*v, def) {
			*v = ""
		}
	}
	clear(&w.ScheduleType, "none")
	clear(&w.TimeZone, "UTC")
	clear(&w.MisfirePolicy, "do_nothing")
	clear(&w.BlockStrategy, "SERIAL_EXECUTION")
	nodes := make([]WorkflowNode, len(w.Nodes))
	for i, n := range w.Nodes {
		clear(&n.StartRule, string(kind.StartAllSucceeded))
		nodes[i] = n
	}
	w.Nodes = nodes
	return w
}

// Diff is the fields in which declared differs from current (both
// normalized), as plan output shows them.
func (w Workflow) Diff(current Workflow) map[string]client.FieldChange {
	a, b := toMap(current.Normalized()), toMap(w.Normalized())
	out := map[string]client.FieldChange{}
	for k, after := range b {
		if before := a[k]; !reflect.DeepEqual(before, after) {
			out[k] = client.FieldChange{Before: before, After: after}
		}
	}
	for k, before := range a {
		if _, ok := b[k]; !ok {
			out[k] = client.FieldChange{Before: before}
		}
	}
	return out
}

// toMap is the workflow's fields by name, each node's as nodes[i].FIELD so
// that a plan shows the field of the node that changed.
func toMap(w Workflow) map[string]any {
	b, _ := json.Marshal(w)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	nodes, _ := m["nodes"].([]any)
	delete(m, "nodes")
	for i, n := range nodes {
		for k, v := range n.(map[string]any) {
			m[fmt.Sprintf("nodes[%d].%s", i, k)] = v
		}
	}
	return m
}

// FromWorkflow turns a stored workflow into a declaration: group is its
// group's app name, jobOf names a node's job as GROUP/NAME (false when the
// job is gone; the node is then left out and reported in dropped).
func FromWorkflow(w client.Workflow, app string, jobOf func(id int64) (string, bool)) (Workflow, []string) {
	out := Workflow{Group: app, Name: w.Name, Description: w.Description, TimeoutSec: w.TimeoutSec, ScheduleType: w.ScheduleType,
		ScheduleConf: w.ScheduleConf, TimeZone: w.TimeZone, MisfirePolicy: w.MisfirePolicy, BlockStrategy: w.BlockStrategy,
		ActiveFrom: w.ActiveFrom, ActiveUntil: w.ActiveUntil, Enabled: w.Enabled}
	var dropped []string
	for _, n := range w.Definition.Nodes {
		ref, ok := jobOf(n.JobID)
		if !ok {
			dropped = append(dropped, fmt.Sprintf("workflow %s/%s: node %s runs job %d, which does not exist", app, w.Name, n.Name, n.JobID))
		}
		out.Nodes = append(out.Nodes, WorkflowNode{Name: n.Name, Job: ref, Params: n.Params, Retries: n.Retries, TimeoutSec: n.TimeoutSec,
			StartRule: string(n.StartRule), Shards: n.Shards, ForEach: n.ForEach})
	}
	for _, e := range w.Definition.Edges {
		out.Edges = append(out.Edges, WorkflowEdge{From: e.From, To: e.To})
	}
	return out, dropped
}

// Input is the body of a create or update of the workflow: group and node
// jobs resolved to ids by the caller's functions.
func (w Workflow) Input(groupID int64, jobID func(ref string) int64) client.WorkflowInput {
	enabled := w.Enabled
	in := client.WorkflowInput{GroupID: groupID, Name: w.Name, Description: w.Description, TimeoutSec: w.TimeoutSec,
		ScheduleType: w.ScheduleType, ScheduleConf: w.ScheduleConf, TimeZone: w.TimeZone, MisfirePolicy: w.MisfirePolicy,
		BlockStrategy: w.BlockStrategy, ActiveFrom: w.ActiveFrom, ActiveUntil: w.ActiveUntil, Enabled: &enabled}
	for _, n := range w.Nodes {
		in.Definition.Nodes = append(in.Definition.Nodes, client.WorkflowNode{Name: n.Name, JobID: jobID(n.Job), Params: n.Params,
			Retries: n.Retries, TimeoutSec: n.TimeoutSec, StartRule: kind.StartRule(n.StartRule), Shards: n.Shards, ForEach: n.ForEach})
	}
	for _, e := range w.Edges {
		in.Definition.Edges = append(in.Definition.Edges, client.WorkflowEdge{From: e.From, To: e.To})
	}
	return in
}

// compactWorkflow writes node jobs of the workflow's own group by bare name.
func compactWorkflow(w Workflow) Workflow {
	nodes := make([]WorkflowNode, len(w.Nodes))
	for i, n := range w.Nodes {
		if name, ok := strings.CutPrefix(n.Job, w.Group+"/"); ok && !strings.Contains(name, "/") {
			n.Job = name
		}
		nodes[i] = n
	}
	w.Nodes = nodes
	return w
}

package jobspec

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Mapping translates a declaration from one environment to another (ringjob
// sync --map): group app names, and targets (group members and pinned
// targets) by prefix, e.g. a Lambda ARN's account:
//
//	groups:
//	  billing-staging: billing
//	targets:
//	  "arn:aws:lambda:eu-west-1:111111111111:function:": "arn:aws:lambda:eu-west-1:222222222222:function:"
//	  "http://executor.staging:9999/": "http://executor.prod:9999/"
//
// A target is rewritten by the longest key it starts with; a key that is a
// whole target maps exactly that one.
type Mapping struct {
	Groups  map[string]string `yaml:"groups"`
	Targets map[string]string `yaml:"targets"`
	// Stopped makes sync to this destination promote jobs stopped, as
	// `sync --stopped` does (the mapping file belongs to one destination).
	Stopped bool `yaml:"stopped"`
	// prefixes are the target keys, longest first.
	prefixes []string
}

// LoadMapping reads a mapping file; unknown keys and wrong types are
// problems naming the line.
func LoadMapping(path string) (*Mapping, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read mapping %s: %w", path, err)
	}
	var m Mapping
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		msg := strings.ReplaceAll(strings.TrimPrefix(err.Error(), "yaml: "), "\n  ", "; ")
		msg = strings.ReplaceAll(msg, "unmarshal errors:; ", "")
		msg = strings.ReplaceAll(msg, " in type jobspec.Mapping", "")
		msg = strings.ReplaceAll(msg, "map[string]string", "a mapping of names")
		return nil, fmt.Errorf("mapping %s: %s (the file has groups: and targets:, each a mapping of source to destination, and stopped: true or false)", path, msg)
	}
	m.index()
	return &m, nil
}

func (m *Mapping) index() {
	m.prefixes = m.prefixes[:0]
	for k := range m.Targets {
		m.prefixes = append(m.prefixes, k)
	}
	sort.Slice(m.prefixes, func(i, j int) bool { return len(m.prefixes[i]) > len(m.prefixes[j]) })
}

// Group maps an app name.
func (m *Mapping) Group(app string) string {
	if m == nil {
		return app
	}
	if to, ok := m.Groups[app]; ok {
		return to
	}
	return app
}

// Target maps a target URI by its longest matching prefix.
func (m *Mapping) Target(t string) string {
	if m == nil {
		return t
	}
	for _, p := range m.prefixes {
		if rest, ok := strings.CutPrefix(t, p); ok {
			return m.Targets[p] + rest
		}
	}
	return t
}

// Apply returns the set as the other environment names it.
func (m *Mapping) Apply(s *Set) *Set {
	if m == nil {
		return s
	}
	out := newSet()
	for _, g := range s.Groups {
		g.AppName = m.Group(g.AppName)
		g.Members = m.targets(g.Members)
		out.Groups = append(out.Groups, g)
	}
	for _, j := range s.Jobs {
		j.Group = m.Group(j.Group)
		j.PinnedTargets = m.targets(j.PinnedTargets)
		kids := make([]string, len(j.Children))
		for i, c := range j.Children {
			app, name, _ := strings.Cut(c, "/")
			kids[i] = m.Group(app) + "/" + name
		}
		if len(kids) > 0 {
			j.Children = kids
		}
		out.Jobs = append(out.Jobs, j)
	}
	for _, w := range s.Workflows {
		w.Group = m.Group(w.Group)
		nodes := make([]WorkflowNode, len(w.Nodes))
		for i, n := range w.Nodes {
			app, name, _ := strings.Cut(n.Job, "/")
			n.Job = m.Group(app) + "/" + name
			nodes[i] = n
		}
		w.Nodes = nodes
		out.Workflows = append(out.Workflows, w)
	}
	return out
}

func (m *Mapping) targets(ts []string) []string {
	if ts == nil {
		return nil
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = m.Target(t)
	}
	return out
}

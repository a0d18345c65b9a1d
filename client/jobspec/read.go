package jobspec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/schedule"
)

// Pos is where something is declared.
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// Problem is one thing wrong with a declaration, where it is.
type Problem struct {
	Pos   Pos
	Field string // "schedule_conf", "children[1]"; "" for the object or the file
	Msg   string
}

// String is "file:line: field: message".
func (p Problem) String() string {
	if p.Field == "" {
		return fmt.Sprintf("%s: %s", p.Pos, p.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", p.Pos, p.Field, p.Msg)
}

// Problems are every problem found; as an error, one per line, in file and
// line order.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

func (ps Problems) sorted() Problems {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Pos.File != ps[j].Pos.File {
			return ps[i].Pos.File < ps[j].Pos.File
		}
		return ps[i].Pos.Line < ps[j].Pos.Line
	})
	return ps
}

// Set is a declaration read from files: groups and jobs in the order read,
// with where each object and field was declared.
type Set struct {
	Groups []client.ApplyGroup
	Jobs   []client.ApplyJob
	// Workflows are applied by the client after the jobs, through the
	// workflows API.
	Workflows []Workflow
	pos       map[string]Pos
	bareJobs  map[string]bool // node job fields written as a bare name
	zones     schedule.Zones
}

func newSet() *Set { return &Set{pos: map[string]Pos{}, bareJobs: map[string]bool{}} }

func groupKey(app string) string        { return "group " + app }
func jobKey(app, name string) string    { return "job " + app + "/" + name }
func fieldKey(obj, field string) string { return obj + " ." + field }

// Locate is where an object (kind "group", "job" or "workflow") or one of its fields
// was declared: the field's line when known, else the object's; the zero
// Pos when the object is not in the set.
func (s *Set) Locate(kind, group, name, field string) Pos {
	obj := groupKey(group)
	switch kind {
	case "job":
		obj = jobKey(group, name)
	case "workflow":
		obj = workflowKey(group, name)
	}
	if p, ok := s.pos[fieldKey(obj, field)]; ok && field != "" {
		return p
	}
	return s.pos[obj]
}

// Only is the part of the set in group app: the group (if declared) and its
// jobs and workflows.
func (s *Set) Only(app string) *Set {
	out := &Set{pos: s.pos, bareJobs: s.bareJobs}
	for _, g := range s.Groups {
		if g.AppName == app {
			out.Groups = append(out.Groups, g)
		}
	}
	for _, j := range s.Jobs {
		if j.Group == app {
			out.Jobs = append(out.Jobs, j)
		}
	}
	for _, w := range s.Workflows {
		if w.Group == app {
			out.Workflows = append(out.Workflows, w)
		}
	}
	return out
}

// Load reads files and directories (every *.yaml and *.yml under a
// directory, in name order) into one set. Any problem in any file is in the
// returned Problems, all of them; the set is then not to be applied.
func Load(paths ...string) (*Set, error) {
	s := newSet()
	var probs Problems
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if ext := strings.ToLower(filepath.Ext(path)); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read directory %s: %w", p, err)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("directory %s holds no *.yaml or *.yml file", p)
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		probs = append(probs, s.parse(f, data)...)
	}
	probs = append(probs, s.checkWorkflowJobs()...)
	if len(probs) > 0 {
		return nil, probs.sorted()
	}
	return s, nil
}

// Parse reads one file's content (name is used in positions).
func Parse(name string, data []byte) (*Set, error) {
	s := newSet()
	probs := append(s.parse(name, data), s.checkWorkflowJobs()...)
	if len(probs) > 0 {
		return nil, probs.sorted()
	}
	return s, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parse reads every document of a file into s.
func (s *Set) parse(file string, data []byte) Problems {
	var probs Problems
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			p := Problem{Pos: Pos{File: file}, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
			if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
				p.Pos.Line, _ = strconv.Atoi(m[1])
				p.Msg = "not valid YAML: " + m[2]
			}
			return append(probs, p)
		}
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			continue
		}
		if root.Kind != yaml.MappingNode {
			probs = append(probs, Problem{Pos: Pos{file, root.Line}, Msg: "a document must be a mapping with groups:, jobs: and workflows: lists"})
			continue
		}
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i], root.Content[i+1]
			switch k.Value {
			case "groups":
				probs = append(probs, s.readList(file, k.Value, v, s.readGroup)...)
			case "jobs":
				probs = append(probs, s.readList(file, k.Value, v, s.readJob)...)
			case "workflows":
				probs = append(probs, s.readList(file, k.Value, v, s.readWorkflow)...)
			default:
				probs = append(probs, Problem{Pos: Pos{file, k.Line}, Field: k.Value, Msg: "unknown key; a document has groups:, jobs: and workflows:"})
			}
		}
	}
	return probs
}

func (s *Set) readList(file, key string, v *yaml.Node, read func(file string, n *yaml.Node) Problems) Problems {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		return Problems{{Pos: Pos{file, v.Line}, Field: key, Msg: "must be a list (each item starting with \"- \")"}}
	}
	var probs Problems
	for _, item := range v.Content {
		if item.Kind != yaml.MappingNode {
			probs = append(probs, Problem{Pos: Pos{file, item.Line}, Field: key, Msg: "each item must be a mapping of fields"})
			continue
		}
		probs = append(probs, read(file, item)...)
	}
	return probs
}

// fieldsOf maps the yaml names of a struct's fields to their index,
// through inlined structs (the job settings of apitypes).
func fieldsOf(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if opts == "inline" && f.Type.Kind() == reflect.Struct {
			for sub, idx := range fieldsOf(f.Type) {
				out[sub] = append([]int{i}, idx...)
			}
			continue
		}
		if name != "" && name != "-" {
			out[name] = []int{i}
		}
	}
	return out
}

// decodeFields sets the fields of the struct dst points to from a mapping
// node, by yaml name, and returns each field's line; unknown keys, wrong
// types and repeated keys are problems.
func decodeFields(file string, n *yaml.Node, dst any, what string) (map[string]int, Problems) {
	rv := reflect.ValueOf(dst).Elem()
	idx := fieldsOf(rv.Type())
	lines := map[string]int{}
	var probs Problems
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		at := Pos{file, v.Line}
		fi, ok := idx[k.Value]
		if !ok {
			probs = append(probs, Problem{Pos: Pos{file, k.Line}, Field: k.Value, Msg: fmt.Sprintf("unknown field of a %s; check the spelling (docs/jobs-as-code.md lists the fields)", what)})
			continue
		}
		if prev, dup := lines[k.Value]; dup {
			probs = append(probs, Problem{Pos: Pos{file, k.Line}, Field: k.Value, Msg: fmt.Sprintf("given twice (first at line %d)", prev)})
			continue
		}
		lines[k.Value] = v.Line
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			continue
		}
		f := rv.FieldByIndex(fi)
		if err := setField(f, v); err != nil {
			probs = append(probs, Problem{Pos: at, Field: k.Value, Msg: err.Error()})
		}
	}
	return lines, probs
}

func nodeKind(v *yaml.Node) string {
	switch v.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch v.Tag {
	case "!!int":
		return "the number " + v.Value
	case "!!float":
		return "the number " + v.Value
	case "!!bool":
		return v.Value
	}
	return strconv.Quote(v.Value)
}

func setField(f reflect.Value, v *yaml.Node) error {
	switch f.Kind() {
	case reflect.String:
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("must be text, got %s", nodeKind(v))
		}
		f.SetString(v.Value)
	case reflect.Int:
		if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
			return fmt.Errorf("must be a whole number, got %s", nodeKind(v))
		}
		n, err := strconv.ParseInt(v.Value, 0, 32)
		if err != nil {
			return fmt.Errorf("must be a whole number, got %s", v.Value)
		}
		f.SetInt(n)
	case reflect.Bool:
		b, err := boolOf(v)
		if err != nil {
			return err
		}
		f.SetBool(b)
	case reflect.Pointer: // *bool
		b, err := boolOf(v)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(&b))
	case reflect.Slice: // []string
		if v.Kind != yaml.SequenceNode {
			return fmt.Errorf("must be a list, got %s", nodeKind(v))
		}
		out := make([]string, 0, len(v.Content))
		for i, it := range v.Content {
			if it.Kind != yaml.ScalarNode || it.Tag == "!!null" {
				return fmt.Errorf("item %d must be text, got %s", i, nodeKind(it))
			}
			out = append(out, it.Value)
		}
		f.Set(reflect.ValueOf(out))
	default:
		return fmt.Errorf("cannot be read (a field of type %s)", f.Type())
	}
	return nil
}

func boolOf(v *yaml.Node) (bool, error) {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
		return false, fmt.Errorf("must be true or false, got %s", nodeKind(v))
	}
	var b bool
	if err := v.Decode(&b); err != nil {
		return false, fmt.Errorf("must be true or false, got %s", v.Value)
	}
	return b, nil
}

func (s *Set) readGroup(file string, n *yaml.Node) Problems {
	var g client.ApplyGroup
	lines, probs := decodeFields(file, n, &g, "group")
	if g.AppName == "" {
		return append(probs, Problem{Pos: Pos{file, n.Line}, Field: "app_name", Msg: "is required: the group's app name"})
	}
	key := groupKey(g.AppName)
	if p, dup := s.pos[key]; dup && s.declaredGroup(g.AppName) {
		return append(probs, Problem{Pos: Pos{file, n.Line}, Field: "app_name", Msg: fmt.Sprintf("group %s is declared twice (first at %s)", g.AppName, p)})
	}
	s.pos[key] = Pos{file, n.Line}
	for f, l := range lines {
		s.pos[fieldKey(key, f)] = Pos{file, l}
	}
	if !kind.Protocol(g.Protocol).Valid() {
		probs = append(probs, Problem{Pos: s.Locate("group", g.AppName, "", "protocol"), Field: "protocol", Msg: fmt.Sprintf("must be empty (XXL-JOB 2.x to 3.4 executors) or \"3.5\", got %q", g.Protocol)})
	}
	s.Groups = append(s.Groups, g)
	return probs
}

func (s *Set) declaredGroup(app string) bool {
	for _, g := range s.Groups {
		if g.AppName == app {
			return true
		}
	}
	return false
}

func (s *Set) readJob(file string, n *yaml.Node) Problems {
	var j client.ApplyJob
	lines, probs := decodeFields(file, n, &j, "job")
	switch {
	case j.Group == "":
		return append(probs, Problem{Pos: Pos{file, n.Line}, Field: "group", Msg: "is required: the app name of the job's group"})
	case j.Name == "":
		return append(probs, Problem{Pos: Pos{file, n.Line}, Field: "name", Msg: "is required: the job's name, unique within its group"})
	}
	key := jobKey(j.Group, j.Name)
	if p, dup := s.pos[key]; dup {
		return append(probs, Problem{Pos: Pos{file, n.Line}, Field: "name", Msg: fmt.Sprintf("job %s/%s is declared twice (first at %s)", j.Group, j.Name, p)})
	}
	s.pos[key] = Pos{file, n.Line}
	for f, l := range lines {
		s.pos[fieldKey(key, f)] = Pos{file, l}
	}
	if l, ok := lines["group"]; ok {
		if _, known := s.pos[groupKey(j.Group)]; !known {
			s.pos[groupKey(j.Group)] = Pos{file, l} // until the group itself is declared
		}
	}
	// Children by identity: a bare name is a job of the same group.
	if kids := childNodes(n); kids != nil {
		for i, it := range kids.Content {
			s.pos[fieldKey(key, fmt.Sprintf("children[%d]", i))] = Pos{file, it.Line}
		}
	}
	for i, c := range j.Children {
		if !strings.Contains(c, "/") {
			j.Children[i] = j.Group + "/" + c
		}
	}
	probs = append(probs, s.checkJob(j)...)
	s.Jobs = append(s.Jobs, j)
	return probs
}

func childNodes(n *yaml.Node) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "children" && n.Content[i+1].Kind == yaml.SequenceNode {
			return n.Content[i+1]
		}
	}
	return nil
}

// checkJob checks what needs no server: the schedule (with the scheduler's
// own parser), the named strategies and policies.
func (s *Set) checkJob(j client.ApplyJob) Problems {
	var probs Problems
	bad := func(field, format string, args ...any) {
		probs = append(probs, Problem{Pos: s.Locate("job", j.Group, j.Name, field), Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	typ := strings.ToLower(strings.TrimSpace(j.ScheduleType))
	if typ == "" {
		typ = string(schedule.KindNone)
	}
	tz := strings.TrimSpace(j.TimeZone)
	if tz == "" {
		tz = "UTC"
	}
	if _, err := s.zones.Parse(schedule.Kind(typ), strings.TrimSpace(j.ScheduleConf), tz); err != nil {
		var pe *schedule.ParseError
		if errors.As(err, &pe) {
			bad(pe.Field, "%s", pe.Msg)
		} else {
			bad("schedule_conf", "%v", err)
		}
	}
	if m := strings.ToLower(strings.TrimSpace(j.MisfirePolicy)); m != "" && !kind.Misfire(m).Valid() {
		bad("misfire_policy", "%q is unknown; use do_nothing (skip missed fires) or fire_once_now (run once at once)", j.MisfirePolicy)
	}
	if strings.TrimSpace(j.RouteStrategy) != "" {
		if _, err := kind.ParseRoute(j.RouteStrategy); err != nil {
			bad("route_strategy", "%q is unknown; use one of %s", j.RouteStrategy, kind.Join(kind.Routes()))
		}
	}
	if _, err := kind.ParseBlock(j.BlockStrategy); err != nil {
		bad("block_strategy", "%q is unknown; use SERIAL_EXECUTION, DISCARD_LATER or COVER_EARLY", j.BlockStrategy)
	}
	if b := kind.Backoff(j.RetryBackoff); b != "" && !b.Valid() {
		bad("retry_backoff", "%q is unknown; use fixed or exponential", j.RetryBackoff)
	}
	if j.Enabled && typ == string(schedule.KindNone) {
		bad("enabled", "a job with schedule_type none cannot be enabled: it runs only when triggered; set enabled: false or give it a schedule")
	}
	for i, c := range j.Children {
		if c == j.Group+"/"+j.Name {
			bad(fmt.Sprintf("children[%d]", i), "a job cannot be its own child")
		}
	}
	return probs
}

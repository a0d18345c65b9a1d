package jobspec

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ringjob/ringjob/client"
)

// FromState turns a server's groups and jobs (as the REST API lists them)
// into a declaration: children by identity, fields that hold the server's
// defaults left out. byID names jobs outside the listing (children in other
// groups); a child that names no job at all is left out and reported in
// dropped ("app_name/name: child job 42 does not exist").
func FromState(groups []client.Group, jobs []client.Job, byID map[int64]client.Job) (set *Set, dropped []string) {
	app := make(map[int64]string, len(groups))
	for _, g := range groups {
		app[g.ID] = g.AppName
	}
	refOf := func(id int64) (string, bool) {
		j, ok := byID[id]
		if !ok {
			return "", false
		}
		a, ok := app[j.GroupID]
		return a + "/" + j.Name, ok
	}
	set = newSet()
	for _, g := range groups {
		ag := client.ApplyGroup{AppName: g.AppName, Title: g.Title, Members: g.Members, Protocol: g.Protocol, FailureDestination: g.FailureDestination}
		accept := g.AcceptRegistrations
		ag.AcceptRegistrations = &accept
		set.Groups = append(set.Groups, ag)
	}
	for _, j := range jobs {
		a := app[j.GroupID]
		aj := client.ApplyJob{Group: a, Name: j.Name, JobFields: client.JobFields{Description: j.Description, ScheduleType: j.ScheduleType,
			ScheduleConf: j.ScheduleConf, TimeZone: j.TimeZone, MisfirePolicy: j.MisfirePolicy, Handler: j.Handler, Params: j.Params,
			RouteStrategy: j.RouteStrategy, BlockStrategy: j.BlockStrategy, TimeoutSec: j.TimeoutSec, RetryCount: j.RetryCount,
			ShardCount: j.ShardCount, PinnedTargets: j.PinnedTargets, RetryBackoff: j.RetryBackoff, RetryDelaySec: j.RetryDelaySec,
			RetryMaxDelaySec: j.RetryMaxDelaySec, JobOptions: j.JobOptions},
			JobLimits: client.JobLimits{MaxInFlight: j.MaxInFlight, AlarmChannels: j.AlarmChannels}, Enabled: j.Enabled}
		for _, c := range j.ChildJobIDs {
			ref, ok := refOf(c)
			if !ok {
				dropped = append(dropped, fmt.Sprintf("%s/%s: child job %d does not exist", a, j.Name, c))
				continue
			}
			aj.Children = append(aj.Children, ref)
		}
		set.Jobs = append(set.Jobs, withoutDefaults(aj))
	}
	return set, dropped
}

// withoutDefaults leaves out the fields that hold the server's defaults, so
// an exported file shows what is particular to each job.
func withoutDefaults(j client.ApplyJob) client.ApplyJob {
	clear := func(v *string, def string) {
		if strings.EqualFold(*v, def) {
			*v = ""
		}
	}
	clear(&j.ScheduleType, "none")
	clear(&j.TimeZone, "UTC")
	clear(&j.MisfirePolicy, "do_nothing")
	clear(&j.RouteStrategy, "first")
	clear(&j.BlockStrategy, "SERIAL_EXECUTION")
	clear(&j.RetryBackoff, "fixed")
	if j.ShardCount == 1 {
		j.ShardCount = 0
	}
	return j
}

// Groups lists the app names the set names (declared or holding jobs), sorted.
func (s *Set) GroupNames() []string {
	seen := map[string]bool{}
	var out []string
	add := func(a string) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, g := range s.Groups {
		add(g.AppName)
	}
	for _, j := range s.Jobs {
		add(j.Group)
	}
	for _, w := range s.Workflows {
		add(w.Group)
	}
	sort.Strings(out)
	return out
}

// document is one YAML document of a file.
type document struct {
	Groups    []client.ApplyGroup `yaml:"groups,omitempty"`
	Jobs      []client.ApplyJob   `yaml:"jobs,omitempty"`
	Workflows []Workflow          `yaml:"workflows,omitempty"`
}

// compact writes children of the job's own group by bare name.
func compact(j client.ApplyJob) client.ApplyJob {
	if len(j.Children) == 0 {
		return j
	}
	kids := make([]string, len(j.Children))
	for i, c := range j.Children {
		kids[i] = c
		if name, ok := strings.CutPrefix(c, j.Group+"/"); ok && !strings.Contains(name, "/") {
			kids[i] = name
		}
	}
	j.Children = kids
	return j
}

// groupDoc is the document of one group: the group (when declared) and
// its jobs.
func (s *Set) groupDoc(app string) document {
	var d document
	for _, g := range s.Groups {
		if g.AppName == app {
			d.Groups = append(d.Groups, g)
		}
	}
	for _, j := range s.Jobs {
		if j.Group == app {
			d.Jobs = append(d.Jobs, compact(j))
		}
	}
	for _, w := range s.Workflows {
		if w.Group == app {
			d.Workflows = append(d.Workflows, compactWorkflow(withoutWorkflowDefaults(w)))
		}
	}
	return d
}

// Comments are YAML comments written above objects of a set: keyed by
// "app_name" for a group and "app_name/name" for a job; each line of a
// comment is written as its own "# " line.
type Comments map[string]string

func encode(docs []document, header string, comments Comments) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(header)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	for _, d := range docs {
		var n yaml.Node
		if err := n.Encode(d); err != nil {
			return nil, fmt.Errorf("write YAML: %w", err)
		}
		annotate(&n, comments)
		if err := enc.Encode(&n); err != nil {
			return nil, fmt.Errorf("write YAML: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("write YAML: %w", err)
	}
	return buf.Bytes(), nil
}

// annotate puts each object's comment above it in an encoded document.
func annotate(doc *yaml.Node, comments Comments) {
	if len(comments) == 0 || doc.Kind != yaml.MappingNode {
		return
	}
	valueOf := func(m *yaml.Node, key string) string {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1].Value
			}
		}
		return ""
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		list := doc.Content[i+1]
		for _, item := range list.Content {
			key := valueOf(item, "app_name")
			if v := doc.Content[i].Value; v == "jobs" || v == "workflows" {
				key = valueOf(item, "group") + "/" + valueOf(item, "name")
			}
			if c, ok := comments[key]; ok && c != "" {
				item.HeadComment = commentLines(c)
			}
		}
	}
}

// commentLines writes text as "# " lines.
func commentLines(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight("# "+l, " ")
	}
	return strings.Join(lines, "\n")
}

const header = "# Ringjob jobs as code (docs/jobs-as-code.md); apply with `ringjob apply -f`.\n"

// Marshal writes the set as one file: a document per group.
func (s *Set) Marshal() ([]byte, error) {
	return s.MarshalWith("", nil)
}

// MarshalWith is Marshal with a comment after the file's header line (head,
// each line written as "# ") and comments above objects.
func (s *Set) MarshalWith(head string, comments Comments) ([]byte, error) {
	var docs []document
	for _, app := range s.GroupNames() {
		docs = append(docs, s.groupDoc(app))
	}
	return encode(docs, fileHeader(head), comments)
}

func fileHeader(head string) string {
	if head == "" {
		return header
	}
	return header + commentLines(head) + "\n"
}

// WriteDir writes the set into dir, one file per group (APP_NAME.yaml),
// and returns the files written.
func (s *Set) WriteDir(dir string) ([]string, error) {
	return s.WriteDirWith(dir, nil, nil)
}

// WriteDirWith is WriteDir with a head comment per file (by app name; each
// file's own) and comments above objects.
func (s *Set) WriteDirWith(dir string, heads map[string]string, comments Comments) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	var files []string
	for _, app := range s.GroupNames() {
		b, err := encode([]document{s.groupDoc(app)}, fileHeader(heads[app]), comments)
		if err != nil {
			return nil, err
		}
		f := filepath.Join(dir, app+".yaml")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", f, err)
		}
		files = append(files, f)
	}
	return files, nil
}

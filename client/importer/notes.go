package importer

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/ringjob/ringjob/client/jobspec"
)

// NoteKind says what became of a source field.
type NoteKind string

// Note kinds.
const (
	// NotCarried: the field (or the whole object) is not in the files.
	NotCarried NoteKind = "not carried over"
	// Changed: the field is in the files, in another form (a name made
	// valid, a number capped).
	Changed NoteKind = "changed"
)

// Note is one thing of the source that the files do not hold as it was.
type Note struct {
	// Ref is the object in the files: "app_name" for a group,
	// "app_name/name" for a job; "" when the object is not in the files
	// at all (Source names it then).
	Ref string
	// Source names the object in the source: "xxl_job_info 7",
	// "schedule default/nightly".
	Source string
	Field  string // the source's field: glue_source, alarm_email, Target.Arn
	Value  string // the source's value, shortened
	Kind   NoteKind
	Why    string // why, and what to do about it
}

// Result is an import: the declaration to write, and the notes.
type Result struct {
	Set   *jobspec.Set
	Notes []Note
	// Running counts the jobs that were running in the source and are
	// imported stopped (Options.KeepEnabled unset).
	Running int
	// From names the source in the files' head comment.
	From string
	// Origin is where each object came from, by Ref ("xxl_job_info 7,
	// running"), written first in its comment.
	Origin map[string]string
}

// short cuts a value for the table: one line, at most 60 characters.
func short(v string) string {
	v = strings.Join(strings.Fields(v), " ")
	if utf8.RuneCountInString(v) > 60 {
		r := []rune(v)
		v = string(r[:57]) + "..."
	}
	return v
}

// WriteTable writes the notes as a table (for stderr), with a summary line.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(r.Notes) > 0 {
		fmt.Fprintln(tw, "OBJECT\tFIELD\tVALUE\tWHAT HAPPENED\t")
		for _, n := range r.Notes {
			obj := n.Ref
			if obj == "" {
				obj = "(" + n.Source + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s: %s\t\n", obj, n.Field, short(n.Value), n.Kind, n.Why)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	dropped, changed := 0, 0
	for _, n := range r.Notes {
		if n.Kind == NotCarried {
			dropped++
		} else {
			changed++
		}
	}
	_, err := fmt.Fprintf(w, "Imported %d group(s) and %d job(s) from %s; %d item(s) not carried over, %d changed.\n",
		len(r.Set.Groups), len(r.Set.Jobs), r.From, dropped, changed)
	if err == nil && r.Running > 0 {
		_, err = fmt.Fprintf(w, "%d job(s) were running in %s and are imported stopped (enabled: false); pass --enabled to keep them running.\n", r.Running, r.From)
	}
	return err
}

// noteLine is a note as a comment line in the files.
func noteLine(n Note) string {
	v := ""
	if n.Value != "" {
		v = " " + short(n.Value)
	}
	return fmt.Sprintf("%s: %s%s: %s", n.Kind, n.Field, v, n.Why)
}

// Comments are the notes as comments above the objects they concern, and
// each group's file head: where the files came from and the notes of
// objects that are not in the files.
func (r *Result) Comments() (head string, comments jobspec.Comments) {
	comments = jobspec.Comments{}
	for ref, o := range r.Origin {
		comments[ref] = o
	}
	var orphans []string
	for _, n := range r.Notes {
		if n.Ref == "" {
			orphans = append(orphans, n.Source+": "+noteLine(n))
			continue
		}
		line := noteLine(n)
		if c := comments[n.Ref]; c != "" {
			line = c + "\n" + line
		}
		comments[n.Ref] = line
	}
	sort.Strings(orphans)
	head = "Imported from " + r.From + " by `ringjob import`; what was not carried over is noted above each object."
	if len(orphans) > 0 {
		head += "\nNot imported at all:\n  " + strings.Join(orphans, "\n  ")
	}
	return head, comments
}

// Marshal writes the result as one file, notes as comments.
func (r *Result) Marshal() ([]byte, error) {
	head, comments := r.Comments()
	return r.Set.MarshalWith(head, comments)
}

// WriteDir writes the result into dir, one file per group, notes as
// comments.
func (r *Result) WriteDir(dir string) ([]string, error) {
	head, comments := r.Comments()
	heads := map[string]string{}
	for _, app := range r.Set.GroupNames() {
		heads[app] = head
	}
	return r.Set.WriteDirWith(dir, heads, comments)
}

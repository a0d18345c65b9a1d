package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"

	"github.com/spf13/cobra"
)

// editInEditor opens v as YAML in the user's editor and answers the JSON
// merge patch from v to what was saved; nil when nothing changed. When
// the saved text does not parse, the edit is kept in a file named in the
// error, so the user's work is not lost.
func (a *app) editInEditor(ctx context.Context, v any, name string) (map[string]any, error) {
	orig, err := toYAML(v)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "ringjob-"+name+"-*.yaml")
	if err != nil {
		return nil, fmt.Errorf("create a file to edit: %w", err)
	}
	path := f.Name()
	header := []byte("# Edit and save to apply; save it unchanged (or empty) to cancel.\n# Read-only fields (id, dates) are ignored.\n")
	_, werr := f.Write(append(header, orig...))
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(path)
		return nil, fmt.Errorf("write %s: %v %v", path, werr, cerr)
	}
	editor := a.getenv("VISUAL")
	if editor == "" {
		editor = a.getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	// The editor may carry arguments ("code --wait"): the shell splits it.
	cmd := exec.CommandContext(ctx, "sh", "-c", editor+` "$1"`, "ringjob-editor", path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, a.stderr, a.stderr
	if err := cmd.Run(); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("editor %q: %w", editor, err)
	}
	edited, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var before, after map[string]any
	if err := json.Unmarshal(mustJSON(v), &before); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(stripComments(edited))) == 0 {
		os.Remove(path)
		fmt.Fprintln(a.stderr, "edit cancelled: the file was emptied")
		return nil, nil
	}
	if err := fromYAMLOrJSON(edited, &after); err != nil {
		return nil, fmt.Errorf("your edit (kept in %s): %w", path, err)
	}
	os.Remove(path)
	patch := diffPatch(before, after)
	if len(patch) == 0 {
		fmt.Fprintln(a.stderr, "edit cancelled: nothing changed")
		return nil, nil
	}
	return patch, nil
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] == '#' {
			continue
		}
		out = append(out, l)
	}
	return bytes.Join(out, []byte("\n"))
}

// diffPatch is the top-level JSON merge patch that turns before into after.
func diffPatch(before, after map[string]any) map[string]any {
	patch := map[string]any{}
	for k, v := range after {
		if bv, ok := before[k]; !ok || !reflect.DeepEqual(bv, v) {
			patch[k] = v
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			patch[k] = nil
		}
	}
	return patch
}

// mergeJSON applies a top-level merge patch to doc.
func mergeJSON(doc, patch map[string]any) map[string]any {
	for k, v := range patch {
		if v == nil {
			delete(doc, k)
		} else {
			doc[k] = v
		}
	}
	return doc
}

// countChanged counts which of the named flags were given.
func countChanged(cmd *cobra.Command, names ...string) int {
	n := 0
	for _, name := range names {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			n++
		}
	}
	return n
}

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
// merge patch from v to what was saved; nil when nothing changed. The file
// with the edit (kept) stays: the caller removes it once the change has
// landed, and on any failure (a saved text that does not parse here, or a
// change the server refuses) the error names it, so the user's work is
// never lost.
func (a *app) editInEditor(ctx context.Context, v any, name string) (patch map[string]any, kept string, err error) {
	orig, err := toYAML(v)
	if err != nil {
		return nil, "", err
	}
	f, err := os.CreateTemp("", "ringjob-"+name+"-*.yaml")
	if err != nil {
		return nil, "", fmt.Errorf("create a file to edit: %w", err)
	}
	path := f.Name()
	header := []byte("# Edit and save to apply; save it unchanged (or empty) to cancel.\n# Read-only fields (id, dates) are ignored.\n")
	_, werr := f.Write(append(header, orig...))
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(path)
		return nil, "", fmt.Errorf("write %s: %v %v", path, werr, cerr)
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
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin, a.stderr, a.stderr
	if f, ok := a.stdin.(*os.File); ok {
		cmd.Stdin = f
	}
	if err := cmd.Run(); err != nil {
		return nil, "", fmt.Errorf("editor %q: %w (your edit is kept in %s)", editor, err, path)
	}
	edited, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", path, err)
	}
	var before, after map[string]any
	if err := json.Unmarshal(mustJSON(v), &before); err != nil {
		return nil, "", err
	}
	if len(bytes.TrimSpace(stripComments(edited))) == 0 {
		os.Remove(path)
		fmt.Fprintln(a.stderr, "edit cancelled: the file was emptied")
		return nil, "", nil
	}
	if err := fromYAMLOrJSON(edited, &after); err != nil {
		return nil, "", fmt.Errorf("your edit (kept in %s): %w", path, err)
	}
	patch = diffPatch(before, after)
	if len(patch) == 0 {
		os.Remove(path)
		fmt.Fprintln(a.stderr, "edit cancelled: nothing changed")
		return nil, "", nil
	}
	return patch, path, nil
}

// editKept is the error of an edit the server refused: the file with it
// stays, and the message says where.
func editKept(err error, path, retry string) error {
	return fmt.Errorf("%w\nyour edit is kept in %s: run `%s` again and copy your changes from it", err, path, retry)
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

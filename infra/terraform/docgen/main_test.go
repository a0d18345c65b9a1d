package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed READMEs list every input and output of their module.
func TestReadmesAreCurrent(t *testing.T) {
	stale, err := run("../modules", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Fatalf("out of date (run go run ./infra/terraform/docgen): %v", stale)
	}
}

func TestNewVariableMakesReadmeStale(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "m")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# m\n\n"+begin+"\n"+end+"\n")
	write("variables.tf", "variable \"size\" {\n  description = \"How | big.\"\n  type = number\n  default = 2\n}\n")
	if stale, err := run(dir, true); err != nil || len(stale) != 1 {
		t.Fatalf("want the README reported stale, got %v %v", stale, err)
	}
	if _, err := run(dir, false); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(mod, "README.md"))
	if !strings.Contains(string(b), "| `size` | `number` | `2` | How \\| big. |") {
		t.Fatalf("README lacks the row for size:\n%s", b)
	}
	if stale, err := run(dir, true); err != nil || len(stale) != 0 {
		t.Fatalf("want current after writing, got %v %v", stale, err)
	}
}

// Command docgen writes the inputs and outputs tables of each module's
// README.md (infra/terraform/modules/*/README.md) from its .tf files, between
// the markers below; the rest of the README is written by hand.
//
//	go run ./infra/terraform/docgen [-check] [DIR]   (DIR default infra/terraform/modules)
//
// With -check it changes nothing and fails when a README is out of date.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

const (
	begin = "<!-- BEGIN GENERATED: go run ./infra/terraform/docgen -->"
	end   = "<!-- END GENERATED -->"
)

func main() {
	check := flag.Bool("check", false, "fail when a README is out of date instead of writing it")
	flag.Parse()
	dir := "infra/terraform/modules"
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	stale, err := run(dir, *check)
	if err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
	for _, s := range stale {
		fmt.Fprintf(os.Stderr, "docgen: %s is out of date: run go run ./infra/terraform/docgen\n", s)
	}
	if len(stale) > 0 {
		os.Exit(1)
	}
}

// run regenerates (or, with check, compares) every module's README and
// returns the ones that were out of date.
func run(modules string, check bool) ([]string, error) {
	entries, err := os.ReadDir(modules)
	if err != nil {
		return nil, err
	}
	var stale []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(modules, e.Name())
		table, err := tables(dir)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "README.md")
		old, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("module %s needs a README.md with the markers %q and %q: %w", e.Name(), begin, end, err)
		}
		i, j := bytes.Index(old, []byte(begin)), bytes.Index(old, []byte(end))
		if i < 0 || j < i {
			return nil, fmt.Errorf("%s lacks the markers %q and %q", path, begin, end)
		}
		updated := string(old[:i]) + begin + "\n" + table + string(old[j:])
		if updated == string(old) {
			continue
		}
		stale = append(stale, path)
		if !check {
			if err := os.WriteFile(path, []byte(updated), 0o644); err != nil {
				return nil, err
			}
		}
	}
	if !check {
		return nil, nil
	}
	return stale, nil
}

func tables(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		return "", err
	}
	type row struct{ name, typ, def, desc string }
	var vars, outs []row
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		file, diags := hclsyntax.ParseConfig(src, f, hcl.InitialPos)
		if diags.HasErrors() {
			return "", fmt.Errorf("parse %s: %s", f, diags.Error())
		}
		text := func(a *hclsyntax.Attribute) string {
			if a == nil {
				return ""
			}
			r := a.Expr.Range()
			return string(r.SliceBytes(src))
		}
		for _, b := range file.Body.(*hclsyntax.Body).Blocks {
			switch b.Type {
			case "variable":
				r := row{name: b.Labels[0], typ: text(b.Body.Attributes["type"]), desc: unquote(text(b.Body.Attributes["description"]))}
				if d, ok := b.Body.Attributes["default"]; ok {
					r.def = "`" + oneLine(text(d)) + "`"
				} else {
					r.def = "required"
				}
				vars = append(vars, r)
			case "output":
				outs = append(outs, row{name: b.Labels[0], desc: unquote(text(b.Body.Attributes["description"]))})
			}
		}
	}
	sort.Slice(vars, func(i, j int) bool { return vars[i].name < vars[j].name })
	sort.Slice(outs, func(i, j int) bool { return outs[i].name < outs[j].name })
	var b strings.Builder
	b.WriteString("## Inputs\n\n| name | type | default | description |\n|---|---|---|---|\n")
	for _, v := range vars {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", v.name, cell(oneLine(v.typ)), cell(v.def), cell(v.desc))
	}
	b.WriteString("\n## Outputs\n\n| name | description |\n|---|---|\n")
	for _, o := range outs {
		fmt.Fprintf(&b, "| `%s` | %s |\n", o.name, cell(o.desc))
	}
	return b.String(), nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func unquote(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimSuffix(s, `"`), `"`)
	return strings.ReplaceAll(s, `\"`, `"`)
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

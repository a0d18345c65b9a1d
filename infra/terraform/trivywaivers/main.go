// Command trivywaivers judges a `trivy config` report, made without the
// waiver file, against the waivers (trivy's .trivyignore.yaml format, matched
// as trivy matches them: by id, AVD id or alias, and file): it lists the findings
// that are neither fixed nor waived, and the waivers that match no finding
// any more, and exits 1 if there is either. Every waiver must name the
// finding (id), the files it applies to (paths) and why it is accepted
// (statement). infra/terraform/check trivy runs it.
//
//	trivywaivers -waivers .trivyignore.yaml -report report.json
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Waiver is one entry of the misconfigurations list of .trivyignore.yaml.
type Waiver struct {
	ID        string   `yaml:"id"`
	Paths     []string `yaml:"paths"`
	Statement string   `yaml:"statement"`
}

// Misconfiguration is the part of a trivy finding this command reads.
type Misconfiguration struct {
	ID            string
	AVDID         string
	Aliases       []string
	Title         string
	Severity      string
	Status        string
	CauseMetadata struct {
		Resource  string
		StartLine int
	}
}

// ids are the names a waiver may use for the finding (trivy matches all).
func (m Misconfiguration) ids() []string {
	return append([]string{m.ID, m.AVDID}, m.Aliases...)
}

// Report is the part of trivy's JSON report this command reads.
type Report struct {
	Results []struct {
		Target            string
		Misconfigurations []Misconfiguration
	}
}

// LoadWaivers parses a .trivyignore.yaml and checks each misconfiguration
// waiver is complete.
func LoadWaivers(r io.Reader) ([]Waiver, error) {
	var file struct {
		Misconfigurations []Waiver `yaml:"misconfigurations"`
	}
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parsing the waivers: %w", err)
	}
	for i, w := range file.Misconfigurations {
		switch {
		case strings.TrimSpace(w.ID) == "":
			return nil, fmt.Errorf("misconfigurations[%d]: id is empty", i)
		case len(w.Paths) == 0:
			return nil, fmt.Errorf("misconfigurations[%d] (%s): paths is empty; name the files the waiver applies to", i, w.ID)
		case strings.TrimSpace(w.Statement) == "":
			return nil, fmt.Errorf("misconfigurations[%d] (%s): statement is empty; say why the finding is accepted", i, w.ID)
		}
		for _, p := range w.Paths {
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("misconfigurations[%d] (%s): paths: %q: %w", i, w.ID, p, err)
			}
		}
	}
	return file.Misconfigurations, nil
}

// Judge returns the failed findings of the report no waiver matches, and
// the waiver/path pairs that match no failed finding, one line each, sorted.
func Judge(rep Report, waivers []Waiver) (open, stale []string) {
	used := map[string]bool{}
	for _, res := range rep.Results {
		for _, m := range res.Misconfigurations {
			if m.Status != "FAIL" {
				continue
			}
			waived := false
			for _, w := range waivers {
				for _, p := range w.Paths {
					if ok, _ := path.Match(p, res.Target); ok && contains(m.ids(), w.ID) {
						used[w.ID+" "+p] = true
						waived = true
					}
				}
			}
			if !waived {
				open = append(open, fmt.Sprintf("%s %s %s:%d %s: %s", firstNonEmpty(m.AVDID, m.ID), m.Severity,
					res.Target, m.CauseMetadata.StartLine, m.CauseMetadata.Resource, m.Title))
			}
		}
	}
	for _, w := range waivers {
		for _, p := range w.Paths {
			if !used[w.ID+" "+p] {
				stale = append(stale, w.ID+" "+p)
			}
		}
	}
	sort.Strings(open)
	open = dedupe(open)
	sort.Strings(stale)
	return open, stale
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func contains(ids []string, id string) bool {
	for _, v := range ids {
		if v != "" && v == id {
			return true
		}
	}
	return false
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

func main() {
	waiversPath := flag.String("waivers", ".trivyignore.yaml", "the waiver file trivy was run with")
	reportPath := flag.String("report", "", "trivy's JSON report (--format json), made without the waiver file")
	flag.Parse()
	if err := run(*waiversPath, *reportPath, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "trivywaivers:", err)
		os.Exit(1)
	}
}

func run(waiversPath, reportPath string, out io.Writer) error {
	if reportPath == "" {
		return errors.New("-report is required")
	}
	wf, err := os.Open(waiversPath)
	if err != nil {
		return fmt.Errorf("reading the waivers: %w", err)
	}
	defer wf.Close()
	waivers, err := LoadWaivers(wf)
	if err != nil {
		return fmt.Errorf("%s: %w", waiversPath, err)
	}
	b, err := os.ReadFile(reportPath)
	if err != nil {
		return fmt.Errorf("reading the report: %w", err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("parsing the report %s: %w", reportPath, err)
	}
	open, stale := Judge(rep, waivers)
	fmt.Fprintf(out, "%d waiver(s) in %s, %d finding(s) open, %d waiver(s) matching nothing\n", len(waivers), waiversPath, len(open), len(stale))
	for _, o := range open {
		fmt.Fprintln(out, "  open:  ", o)
	}
	for _, s := range stale {
		fmt.Fprintln(out, "  stale: ", s)
	}
	switch {
	case len(open) > 0 && len(stale) > 0:
		return errors.New("findings neither fixed nor waived, and waivers that match no finding")
	case len(open) > 0:
		return errors.New("findings neither fixed nor waived (fix the Terraform, or waive in the waiver file with id, paths and statement)")
	case len(stale) > 0:
		return errors.New("waivers that match no finding any more: remove them")
	}
	return nil
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLoadWaiversNamesTheMissingField(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"no id":        {"misconfigurations:\n  - paths: [a.tf]\n    statement: why\n", "id is empty"},
		"no paths":     {"misconfigurations:\n  - id: AVD-AWS-0104\n    statement: why\n", "(AVD-AWS-0104): paths is empty"},
		"no statement": {"misconfigurations:\n  - id: AVD-AWS-0104\n    paths: [a.tf]\n", "(AVD-AWS-0104): statement is empty"},
		"unknown key":  {"misconfigurations:\n  - id: AVD-AWS-0104\n    paths: [a.tf]\n    reason: why\n", "field reason not found"},
		"bad pattern":  {"misconfigurations:\n  - id: AVD-AWS-0104\n    paths: [\"a[.tf\"]\n    statement: why\n", "paths: \"a[.tf\""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadWaivers(strings.NewReader(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("LoadWaivers: got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// report is a trivy JSON report with two failed findings, AVD-AWS-0104 in
// modules/a/network.tf and AVD-AWS-0178 in example/network.tf.
const report = `{"Results": [
 {"Target": "modules/a/network.tf",
  "Misconfigurations": [{"ID": "AWS-0104", "AVDID": "AVD-AWS-0104", "Aliases": ["aws-vpc-no-public-egress-sgr"], "Status": "FAIL"}]},
 {"Target": "example/network.tf",
  "Misconfigurations": [
    {"ID": "AWS-0178", "AVDID": "AVD-AWS-0178", "Title": "VPC Flow Logs is not enabled", "Severity": "MEDIUM", "Status": "FAIL",
     "CauseMetadata": {"Resource": "aws_vpc.this", "StartLine": 3}},
    {"ID": "AWS-0001", "AVDID": "AVD-AWS-0001", "Title": "passes", "Severity": "LOW", "Status": "PASS"}]}
]}`

func TestJudgeListsOpenFindingsAndStaleWaivers(t *testing.T) {
	var rep Report
	if err := json.Unmarshal([]byte(report), &rep); err != nil {
		t.Fatal(err)
	}
	waivers := []Waiver{
		// Matches the first finding by its alias, through a glob.
		{ID: "aws-vpc-no-public-egress-sgr", Paths: []string{"modules/*/network.tf", "example/main.tf"}, Statement: "why"},
		{ID: "AVD-AWS-0057", Paths: []string{"modules/a/network.tf"}, Statement: "why"},
	}
	open, stale := Judge(rep, waivers)
	wantOpen := []string{"AVD-AWS-0178 MEDIUM example/network.tf:3 aws_vpc.this: VPC Flow Logs is not enabled"}
	if !slices.Equal(open, wantOpen) {
		t.Errorf("open = %q, want %q", open, wantOpen)
	}
	wantStale := []string{"AVD-AWS-0057 modules/a/network.tf", "aws-vpc-no-public-egress-sgr example/main.tf"}
	if !slices.Equal(stale, wantStale) {
		t.Errorf("stale = %q, want %q", stale, wantStale)
	}
}

func TestRunFailsOnAnOpenFindingAndPassesWhenAllAreWaived(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "report.json")
	if err := os.WriteFile(rep, []byte(report), 0o600); err != nil {
		t.Fatal(err)
	}
	waiversFile := filepath.Join(dir, "waivers.yaml")
	write := func(s string) {
		if err := os.WriteFile(waiversFile, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	write("misconfigurations:\n  - id: AVD-AWS-0104\n    paths: [modules/a/network.tf]\n    statement: why\n")
	if err := run(waiversFile, rep, &out); err == nil || !strings.Contains(out.String(), "open:   AVD-AWS-0178") {
		t.Fatalf("run with an open finding: err %v, output:\n%s", err, out.String())
	}
	// The open finding fixed: only the waived one is left in the report.
	fixed := strings.Replace(report, `"ID": "AWS-0178"`, `"ID": "AWS-0178-gone"`, 1)
	fixed = strings.Replace(fixed, `"Status": "FAIL",
     "CauseMetadata"`, `"Status": "PASS",
     "CauseMetadata"`, 1)
	if err := os.WriteFile(rep, []byte(fixed), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(waiversFile, rep, &out); err != nil {
		t.Fatalf("run with every finding waived: %v\n%s", err, out.String())
	}
}

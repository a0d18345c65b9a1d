package jobspec_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/client/jobspec"
)

const good = `groups:
  - app_name: billing
    title: Billing
    members: [local://echo]
jobs:
  - group: billing
    name: close-books
    schedule_type: cron
    schedule_conf: "0 0 2 * * ?"
    time_zone: Europe/Berlin
    route_strategy: FAILOVER
    retry_count: 2
    children: [notify, reports/weekly]
    enabled: true
  - group: billing
    name: notify
---
jobs:
  - group: reports
    name: weekly
    schedule_type: fixed_rate
    schedule_conf: 3600
`

func TestParseReadsEveryFieldAndDocument(t *testing.T) {
	s, err := jobspec.Parse("jobs.yaml", []byte(good))
	require.NoError(t, err)
	require.Len(t, s.Groups, 1)
	require.Equal(t, []string{"local://echo"}, s.Groups[0].Members)
	require.Len(t, s.Jobs, 3)
	j := s.Jobs[0]
	require.Equal(t, "0 0 2 * * ?", j.ScheduleConf)
	require.Equal(t, 2, j.RetryCount)
	require.True(t, j.Enabled)
	require.Equal(t, []string{"billing/notify", "reports/weekly"}, j.Children, "bare names are of the same group")
	require.Equal(t, "3600", s.Jobs[2].ScheduleConf, "a number where text is expected is taken as text")
	require.Equal(t, jobspec.Pos{File: "jobs.yaml", Line: 13}, s.Locate("job", "billing", "close-books", "children[0]"))
	require.Equal(t, []string{"billing", "reports"}, s.GroupNames())
}

func TestParseReportsEveryProblemWithFileLineAndField(t *testing.T) {
	bad := `jobs:
  - group: billing
    name: a
    schedule_type: cron
    schedule_conf: "0 0 25 * * ?"
    retry_count: three
    colour: blue
  - group: billing
    name: b
    enabled: yes please
    route_strategy: sideways
    children: [b]
  - group: billing
    name: a
  - name: no-group
`
	_, err := jobspec.Parse("jobs.yaml", []byte(bad))
	var ps jobspec.Problems
	require.ErrorAs(t, err, &ps)
	var lines []string
	for _, p := range ps {
		lines = append(lines, p.String())
	}
	require.Len(t, lines, 8, strings.Join(lines, "\n"))
	text := strings.Join(lines, "\n")
	for _, want := range []string{
		"jobs.yaml:5: schedule_conf: ",
		"jobs.yaml:6: retry_count: must be a whole number, got \"three\"",
		"jobs.yaml:7: colour: unknown field of a job",
		"jobs.yaml:10: enabled: must be true or false, got \"yes please\"",
		"jobs.yaml:11: route_strategy: \"sideways\" is unknown",
		"jobs.yaml:12: children[0]: a job cannot be its own child",
		"jobs.yaml:13: name: job billing/a is declared twice (first at jobs.yaml:2)",
		"jobs.yaml:15: group: is required",
	} {
		require.Contains(t, text, want)
	}
}

func TestParseSyntaxErrorNamesTheLine(t *testing.T) {
	_, err := jobspec.Parse("x.yaml", []byte("jobs:\n  - group: a\n    name: [unclosed\n"))
	require.Error(t, err)
	require.Regexp(t, `^x\.yaml:\d+: not valid YAML: `, err.Error())
}

func TestLoadDirectoryAndRoundTrip(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(good), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "more"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "more", "b.yml"), []byte("jobs:\n  - group: reports\n    name: daily\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("not yaml"), 0o644))
	s, err := jobspec.Load(dir)
	require.NoError(t, err)
	require.Len(t, s.Jobs, 4)

	out, err := s.Marshal()
	require.NoError(t, err)
	back, err := jobspec.Parse("out.yaml", out)
	require.NoError(t, err, "%s", out)
	require.ElementsMatch(t, s.Jobs, back.Jobs)
	require.Equal(t, s.Groups, back.Groups)

	files, err := s.WriteDir(filepath.Join(dir, "export"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	again, err := jobspec.Load(filepath.Join(dir, "export"))
	require.NoError(t, err)
	require.ElementsMatch(t, s.Jobs, again.Jobs)
}

func TestMappingRewritesGroupsAndTargets(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "map.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`groups:
  billing: billing-prod
targets:
  "arn:aws:lambda:eu-west-1:111111111111:function:": "arn:aws:lambda:eu-west-1:222222222222:function:"
  "arn:aws:lambda:eu-west-1:111111111111:function:special": "arn:aws:lambda:eu-west-1:333333333333:function:special"
`), 0o644))
	m, err := jobspec.LoadMapping(path)
	require.NoError(t, err)
	s, err := jobspec.Parse("jobs.yaml", []byte(good))
	require.NoError(t, err)
	s.Groups[0].Members = []string{"arn:aws:lambda:eu-west-1:111111111111:function:close", "arn:aws:lambda:eu-west-1:111111111111:function:special"}
	s.Jobs[1].PinnedTargets = []string{"arn:aws:lambda:eu-west-1:111111111111:function:close"}
	out := m.Apply(s)
	require.Equal(t, "billing-prod", out.Groups[0].AppName)
	require.Equal(t, []string{"arn:aws:lambda:eu-west-1:222222222222:function:close", "arn:aws:lambda:eu-west-1:333333333333:function:special"}, out.Groups[0].Members)
	require.Equal(t, "billing-prod", out.Jobs[0].Group)
	require.Equal(t, []string{"billing-prod/notify", "reports/weekly"}, out.Jobs[0].Children)
	require.Equal(t, []string{"arn:aws:lambda:eu-west-1:222222222222:function:close"}, out.Jobs[1].PinnedTargets)
	require.Equal(t, "billing", s.Jobs[0].Group, "the source set is left as it was")

	require.NoError(t, os.WriteFile(path, []byte("group:\n  a: b\n"), 0o644))
	_, err = jobspec.LoadMapping(path)
	require.ErrorContains(t, err, "line 1: field group not found")
}

func TestFromStateNamesChildrenAndLeavesDefaultsOut(t *testing.T) {
	groups := []client.Group{{ID: 1, AppName: "billing", Members: []string{"local://echo"}}, {ID: 2, AppName: "reports"}}
	jobs := []client.Job{
		{ID: 10, GroupID: 1, Name: "close", ScheduleType: "cron", ScheduleConf: "0 0 2 * * ?", TimeZone: "UTC", MisfirePolicy: "do_nothing",
			RouteStrategy: "first", BlockStrategy: "SERIAL_EXECUTION", ShardCount: 1, RetryBackoff: "fixed", ChildJobIDs: []int64{11, 20, 99}, Enabled: true},
		{ID: 11, GroupID: 1, Name: "notify", ScheduleType: "none", TimeZone: "Europe/Berlin", ShardCount: 4},
	}
	byID := map[int64]client.Job{10: jobs[0], 11: jobs[1], 20: {ID: 20, GroupID: 2, Name: "weekly"}}
	s, dropped := jobspec.FromState(groups, jobs, byID)
	require.Equal(t, []string{"billing/close: child job 99 does not exist"}, dropped)
	require.Equal(t, client.ApplyJob{Group: "billing", Name: "close", JobFields: client.JobFields{ScheduleType: "cron", ScheduleConf: "0 0 2 * * ?"},
		Children: []string{"billing/notify", "reports/weekly"}, Enabled: true}, s.Jobs[0])
	require.Equal(t, client.ApplyJob{Group: "billing", Name: "notify", JobFields: client.JobFields{TimeZone: "Europe/Berlin", ShardCount: 4}}, s.Jobs[1])
	out, err := s.Marshal()
	require.NoError(t, err)
	require.Contains(t, string(out), "children:\n      - notify\n      - reports/weekly")
}

func TestParseReadsScheduleOptions(t *testing.T) {
	s, err := jobspec.Parse("jobs.yaml", []byte(`jobs:
  - group: billing
    name: quarterly
    schedule_type: cron
    schedule_conf: cron(0 12 1 */3 ? *)
    active_from: "2027-01-01T00:00:00Z"
    active_until: "2028-01-01T00:00:00Z"
    flexible_window_min: 15
    max_event_age_sec: 3600
    after_completion: delete
    failure_destination: arn:aws:sqs:eu-west-1:123456789012:failures
`))
	require.NoError(t, err)
	j := s.Jobs[0]
	require.Equal(t, client.JobOptions{ActiveFrom: "2027-01-01T00:00:00Z", ActiveUntil: "2028-01-01T00:00:00Z", FlexibleWindowMin: 15,
		MaxEventAgeSec: 3600, AfterCompletion: "delete", FailureDestination: "arn:aws:sqs:eu-west-1:123456789012:failures"}, j.JobOptions)
	require.Equal(t, jobspec.Pos{File: "jobs.yaml", Line: 8}, s.Locate("job", "billing", "quarterly", "flexible_window_min"))
}

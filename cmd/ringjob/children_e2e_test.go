package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/client"
)

// TestChildJobsByName: the CLI sets a job's children by GROUP/NAME (or id)
// with --child, in a -f file and in the editor (child_jobs), and shows them
// by name; a reader who may not see a child's group gets its id.
func TestChildJobsByName(t *testing.T) {
	token := "cli-children-token-0123456789abcdefghijk"
	s := startServerWith(t, "sqlite://"+filepath.Join(t.TempDir(), "r.db"), token, freePort(t), "")
	c := newCLI(t, s)
	c.env = append(c.env, "RINGJOB_URL="+s.base, "RINGJOB_TOKEN="+token)
	c.ok("groups", "create", "billing", "--member", "local://hello")
	c.ok("groups", "create", "reports", "--member", "local://hello")
	c.ok("jobs", "create", "billing/close-day", "--handler", "hello")
	var first, second map[string]any
	c.json(&first, "jobs", "create", "reports/daily", "--handler", "hello")
	c.json(&second, "jobs", "create", "reports/weekly", "--handler", "hello")

	var job map[string]any
	c.json(&job, "jobs", "edit", "billing/close-day", "--child", "reports/daily", "--child", fmt.Sprint(num(second["id"])))
	require.Equal(t, []any{first["id"], second["id"]}, job["child_job_ids"], "names and ids both name children")
	require.Equal(t, []any{"reports/daily", "reports/weekly"}, job["child_jobs"], "the view names them")
	require.Contains(t, c.ok("jobs", "get", "billing/close-day"), "Child jobs (run after a success): reports/daily, reports/weekly")

	// A name that names no job is refused naming it, and nothing changes.
	r := c.fails(1, "child_jobs: reports/nope", "jobs", "edit", "billing/close-day", "--child", "reports/nope")
	oneLine(t, r)
	c.json(&job, "jobs", "get", "billing/close-day")
	require.Equal(t, []any{"reports/daily", "reports/weekly"}, job["child_jobs"])

	// --child= clears them; the editor sets them by name.
	c.json(&job, "jobs", "edit", "billing/close-day", "--child=")
	require.Empty(t, job["child_job_ids"])
	require.Empty(t, job["child_jobs"])
	editor := writeScript(t, `sed -i 's#^child_jobs: \[\]#child_jobs: [reports/weekly]#' "$1"`)
	r = c.inTerminal([]string{"EDITOR=" + editor}, "jobs", "edit", "billing/close-day", "-o", "json")
	require.Equal(t, 0, r.code, r.stdout)
	c.json(&job, "jobs", "get", "billing/close-day")
	require.Equal(t, []any{second["id"]}, job["child_job_ids"], "the editor's child_jobs set the children")
	// An edit naming a child that does not exist is kept in its file.
	editor = writeScript(t, `sed -i 's#^    - reports/weekly#    - reports/gone#' "$1"`)
	r = c.inTerminal([]string{"EDITOR=" + editor}, "jobs", "edit", "billing/close-day")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stdout, "child_jobs: reports/gone")
	require.Contains(t, keptEdit(t, r.stdout), "- reports/gone")

	// A file names children as jobs as code does.
	file := filepath.Join(t.TempDir(), "job.yaml")
	require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf("group_id: %d\nname: close-month\nhandler: hello\nchild_jobs: [reports/daily]\n", num(job["group_id"]))), 0o600))
	c.json(&job, "jobs", "create", "-f", file)
	require.Equal(t, []any{first["id"]}, job["child_job_ids"])
	require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf("group_id: %d\nname: close-year\nhandler: hello\nchild_jobs: [reports/daily]\nchild_job_ids: [%d]\n", num(job["group_id"]), num(second["id"]))), 0o600))
	c.fails(2, "child_jobs and child_job_ids name different jobs", "jobs", "create", "-f", file)

	// The API refuses a patch of the read-only names rather than drop it.
	api := client.New(s.base, token, nil)
	_, err := api.PatchJob(context.Background(), client.JobRef{AppName: "billing", Name: "close-month"}, map[string]any{"child_jobs": []string{"reports/weekly"}}, "")
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, "child_jobs", apiErr.Field)
	c.json(&job, "jobs", "get", "billing/close-month")
	require.Equal(t, []any{first["id"]}, job["child_job_ids"], "the refused patch changed nothing")

	// A reader of billing only sees the child's id, not its name.
	var sa struct {
		Token string `json:"token"`
	}
	c.json(&sa, "service-accounts", "create", "billing-reader", "--role", "viewer", "--group", "billing", "--token", "read")
	reader := newCLI(t, s)
	reader.env = append(reader.env, "RINGJOB_URL="+s.base, "RINGJOB_TOKEN="+sa.Token)
	reader.json(&job, "jobs", "get", "billing/close-month")
	require.Equal(t, []any{fmt.Sprint(num(first["id"]))}, job["child_jobs"], "a child in a group the reader may not see is shown by id")
}

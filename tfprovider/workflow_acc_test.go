package tfprovider_test

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/client"
)

// workflowConfig is a group, three jobs and a workflow over them: extract,
// then load with extract's output in its params, and alert when load
// fails; extra is appended to the workflow's block.
func workflowConfig(s *server, description, loadParams, extra string) string {
	return s.providerBlock() + fmt.Sprintf(`
resource "ringjob_group" "etl" {
  app_name = "etl-jobs"
  members  = ["local://hello"]
}

resource "ringjob_job" "extract" {
  group_id = ringjob_group.etl.id
  name     = "extract"
}

resource "ringjob_job" "load" {
  group_id = ringjob_group.etl.id
  name     = "load"
}

resource "ringjob_job" "alert" {
  group_id = ringjob_group.etl.id
  name     = "alert"
}

resource "ringjob_workflow" "nightly" {
  group_id    = ringjob_group.etl.id
  name        = "nightly"
  description = %q
  nodes = [
    { name = "extract", job_id = ringjob_job.extract.id, retries = 2 },
    { name = "load", job_id = ringjob_job.load.id, params = %q, timeout_sec = 600 },
    { name = "alert", job_id = ringjob_job.alert.id, start_rule = "any_failed" },
  ]
  edges = [
    { from = "extract", to = "load" },
    { from = "load", to = "alert" },
  ]
  schedule_type  = "cron"
  schedule_conf  = "0 30 1 * * ?"
  time_zone      = "Europe/Berlin"
  block_strategy = "DISCARD_LATER"
  timeout_sec    = 7200
  active_until   = "2099-01-01T00:00:00Z"
  enabled        = true
%s}
`, description, loadParams, extra)
}

// apiWorkflow reads the workflow etl/nightly through the REST API, as
// another client would.
func apiWorkflow(t *testing.T, s *server) client.Workflow {
	t.Helper()
	g, err := s.API.GetGroupByAppName(ctxT(t), "etl-jobs")
	require.NoError(t, err)
	page, err := s.API.ListWorkflows(ctxT(t), client.ListOptions{Filters: map[string]string{"group_id": strconv.FormatInt(g.ID, 10)}})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	return page.Items[0]
}

// TestWorkflowLifecycle: create, update in place, drift after an API edit,
// import by id and by name, errors of the definition on the node's
// attribute, a cycle refused naming it, destroy.
func TestWorkflowLifecycle(t *testing.T) {
	needTerraform(t)
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			s := startServer(t, dialect)
			var wfID string
			sameID := func(st *terraform.State) error {
				if got := st.RootModule().Resources["ringjob_workflow.nightly"].Primary.ID; got != wfID {
					return fmt.Errorf("workflow has id %s, was %s: it was replaced, not updated in place", got, wfID)
				}
				return nil
			}
			params := `{"file":"{{ nodes.extract.output }}"}`
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: providers,
				Steps: []resource.TestStep{
					{ // create: what the server holds is what was declared
						Config: workflowConfig(s, "nightly ETL", params, ""),
						Check: resource.ComposeTestCheckFunc(
							func(st *terraform.State) error {
								wfID = st.RootModule().Resources["ringjob_workflow.nightly"].Primary.ID
								w := apiWorkflow(t, s)
								require.Equal(t, wfID, strconv.FormatInt(w.ID, 10))
								require.Equal(t, "nightly ETL", w.Description)
								require.Len(t, w.Definition.Nodes, 3)
								extract, err := s.API.GetJobByName(ctxT(t), client.JobRef{AppName: "etl-jobs", Name: "extract"})
								require.NoError(t, err)
								require.Equal(t, "extract", w.Definition.Nodes[0].Name)
								require.Equal(t, extract.ID, w.Definition.Nodes[0].JobID)
								require.Equal(t, 2, w.Definition.Nodes[0].Retries)
								require.Nil(t, w.Definition.Nodes[0].Params, "a node without params runs with its job's")
								require.Equal(t, params, *w.Definition.Nodes[1].Params)
								require.Equal(t, 600, w.Definition.Nodes[1].TimeoutSec)
								require.Equal(t, "any_failed", string(w.Definition.Nodes[2].StartRule))
								require.Equal(t, []client.WorkflowEdge{{From: "extract", To: "load"}, {From: "load", To: "alert"}}, w.Definition.Edges)
								require.Equal(t, "0 30 1 * * ?", w.ScheduleConf)
								require.Equal(t, "Europe/Berlin", w.TimeZone)
								require.Equal(t, "DISCARD_LATER", w.BlockStrategy)
								require.Equal(t, 7200, w.TimeoutSec)
								require.True(t, w.Enabled)
								require.Equal(t, "2099-01-01T00:00:00Z", w.ActiveUntil)
								require.Empty(t, w.ActiveFrom)
								require.NotNil(t, w.NextFireAt, "an enabled cron workflow has a next start")
								return nil
							},
							resource.TestCheckResourceAttr("ringjob_workflow.nightly", "app_name", "etl-jobs"),
							resource.TestCheckResourceAttr("ringjob_workflow.nightly", "nodes.0.start_rule", "all_succeeded"),
							resource.TestCheckNoResourceAttr("ringjob_workflow.nightly", "nodes.0.params"),
						),
					},
					{ // update in place: a node's params and the description
						Config: workflowConfig(s, "nightly ETL, v2", `{"file":"{{ nodes.extract.output }}","mode":"full"}`, ""),
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction("ringjob_workflow.nightly", plancheck.ResourceActionUpdate),
						}},
						Check: resource.ComposeTestCheckFunc(sameID, func(*terraform.State) error {
							w := apiWorkflow(t, s)
							require.Equal(t, "nightly ETL, v2", w.Description)
							require.Contains(t, *w.Definition.Nodes[1].Params, `"mode":"full"`)
							return nil
						}),
					},
					{ // drift: an edit through the API shows in the plan and is undone
						PreConfig: func() {
							w := apiWorkflow(t, s)
							in := client.WorkflowInput{GroupID: w.GroupID, Name: w.Name, Description: "edited in the console", Definition: w.Definition,
								TimeoutSec: w.TimeoutSec, ScheduleType: w.ScheduleType, ScheduleConf: w.ScheduleConf, TimeZone: w.TimeZone,
								MisfirePolicy: w.MisfirePolicy, BlockStrategy: w.BlockStrategy, ActiveUntil: w.ActiveUntil, Version: w.Version}
							in.Definition.Edges = in.Definition.Edges[:1]
							_, err := s.API.UpdateWorkflow(ctxT(t), w.ID, in)
							require.NoError(t, err)
						},
						Config: workflowConfig(s, "nightly ETL, v2", `{"file":"{{ nodes.extract.output }}","mode":"full"}`, ""),
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction("ringjob_workflow.nightly", plancheck.ResourceActionUpdate),
							plancheck.ExpectKnownValue("ringjob_workflow.nightly", tfjsonpath.New("description"), knownvalue.StringExact("nightly ETL, v2")),
						}},
						Check: resource.ComposeTestCheckFunc(sameID, func(*terraform.State) error {
							w := apiWorkflow(t, s)
							require.Equal(t, "nightly ETL, v2", w.Description)
							require.Len(t, w.Definition.Edges, 2, "the edge taken out elsewhere is back")
							return nil
						}),
					},
					{ // import by id
						ResourceName:      "ringjob_workflow.nightly",
						ImportState:       true,
						ImportStateVerify: true,
					},
					{ // import by name
						ResourceName:      "ringjob_workflow.nightly",
						ImportState:       true,
						ImportStateId:     "etl-jobs/nightly",
						ImportStateVerify: true,
					},
					{ // an unknown start rule fails the plan, naming the attribute
						Config: workflowConfig(s, "nightly ETL, v2", params, "") + `
resource "ringjob_workflow" "typo" {
  group_id = ringjob_group.etl.id
  name     = "typo"
  nodes    = [{ name = "a", job_id = ringjob_job.load.id, start_rule = "on_failure" }]
}
`,
						PlanOnly:    true,
						ExpectError: regexp.MustCompile(`(?s)start_rule is "on_failure"; it must be one of "all_succeeded"`),
					},
					{ // a cycle is refused by the server, naming it
						Config: workflowConfig(s, "nightly ETL, v2", `{"file":"{{ nodes.extract.output }}","mode":"full"}`, "") + `
resource "ringjob_workflow" "loop" {
  group_id = ringjob_group.etl.id
  name     = "loop"
  nodes = [
    { name = "a", job_id = ringjob_job.extract.id },
    { name = "b", job_id = ringjob_job.load.id },
  ]
  edges = [{ from = "a", to = "b" }, { from = "b", to = "a" }]
}
`,
						ExpectError: regexp.MustCompile(`(?s)Cannot create workflow "loop".*cycle`),
					},
					{ // a template naming a node that is not a parent is an error on the node's params
						Config:      workflowConfig(s, "nightly ETL, v2", `{"file":"{{ nodes.alert.output }}"}`, ""),
						ExpectError: regexp.MustCompile(`(?s)nodes\[1\]\.params.*alert`),
					},
					{ // the refused applies changed nothing
						Config:           workflowConfig(s, "nightly ETL, v2", `{"file":"{{ nodes.extract.output }}","mode":"full"}`, ""),
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
					},
				},
			})
			// destroyed with the test case: nothing is left on the server
			page, err := s.API.ListWorkflows(ctxT(t), client.ListOptions{})
			require.NoError(t, err)
			require.Empty(t, page.Items)
		})
	}
}

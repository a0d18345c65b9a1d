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

// jobConfig is a group with two jobs, the second a child of the first.
func jobConfig(s *server, schedule, description string) string {
	return s.providerBlock() + fmt.Sprintf(`
resource "ringjob_group" "billing" {
  app_name = "billing"
  title    = "Billing"
  members  = ["local://hello"]
}

resource "ringjob_job" "load" {
  group_id = ringjob_group.billing.id
  name     = "load"
}

resource "ringjob_job" "close" {
  group_id       = ringjob_group.billing.id
  name           = "close"
  description    = %q
  schedule_type  = "cron"
  schedule_conf  = %q
  time_zone      = "Europe/Berlin"
  misfire_policy = "fire_once_now"
  route_strategy = "round"
  block_strategy = "DISCARD_LATER"
  params         = "{\"month\": \"current\"}"
  timeout_sec    = 600
  retry_count    = 3
  retry_backoff  = "exponential"
  retry_delay_sec     = 10
  retry_max_delay_sec = 300
  shard_count    = 4
  max_in_flight  = 2
  pinned_targets = ["local://hello"]
  child_job_ids  = [ringjob_job.load.id]
  enabled        = true
}
`, description, schedule)
}

// apiJob reads a job through the REST API, as another client would.
func apiJob(t *testing.T, s *server, app, name string) client.Job {
	t.Helper()
	j, err := s.API.GetJobByName(ctxT(t), client.JobRef{AppName: app, Name: name})
	require.NoError(t, err)
	return j
}

// TestJobLifecycle: create, update in place, drift after an API edit,
// import by id and by name, a refused destroy of a job another job names
// as a child, a bad cron refused at plan time on its attribute, destroy.
func TestJobLifecycle(t *testing.T) {
	needTerraform(t)
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			s := startServer(t, dialect)
			var closeID string
			sameID := func(st *terraform.State) error {
				if got := st.RootModule().Resources["ringjob_job.close"].Primary.ID; got != closeID {
					return fmt.Errorf("job close has id %s, was %s: it was replaced, not updated in place", got, closeID)
				}
				return nil
			}
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: providers,
				Steps: []resource.TestStep{
					{ // create: what the server holds is what was declared
						Config: jobConfig(s, "0 0 2 * * ?", "nightly close"),
						Check: resource.ComposeTestCheckFunc(
							func(st *terraform.State) error {
								closeID = st.RootModule().Resources["ringjob_job.close"].Primary.ID
								j := apiJob(t, s, "billing", "close")
								load := apiJob(t, s, "billing", "load")
								require.Equal(t, closeID, strconv.FormatInt(j.ID, 10))
								require.Equal(t, "0 0 2 * * ?", j.ScheduleConf)
								require.Equal(t, "Europe/Berlin", j.TimeZone)
								require.Equal(t, "fire_once_now", j.MisfirePolicy)
								require.Equal(t, "round", j.RouteStrategy)
								require.Equal(t, "DISCARD_LATER", j.BlockStrategy)
								require.Equal(t, `{"month": "current"}`, j.Params)
								require.Equal(t, 600, j.TimeoutSec)
								require.Equal(t, 3, j.RetryCount)
								require.Equal(t, "exponential", j.RetryBackoff)
								require.Equal(t, 10, j.RetryDelaySec)
								require.Equal(t, 300, j.RetryMaxDelaySec)
								require.Equal(t, 4, j.ShardCount)
								require.Equal(t, 2, j.MaxInFlight)
								require.Equal(t, []string{"local://hello"}, j.PinnedTargets)
								require.Equal(t, []int64{load.ID}, j.ChildJobIDs)
								require.True(t, j.Enabled)
								require.NotNil(t, j.NextFireAt, "an enabled cron job has a next fire")
								// load left everything out: the server's defaults are in the state
								require.Equal(t, "UTC", load.TimeZone)
								require.Equal(t, "none", load.ScheduleType)
								return nil
							},
							resource.TestCheckResourceAttr("ringjob_job.close", "app_name", "billing"),
							resource.TestCheckResourceAttr("ringjob_job.load", "time_zone", "UTC"),
							resource.TestCheckResourceAttr("ringjob_job.load", "shard_count", "1"),
							resource.TestCheckResourceAttr("ringjob_job.load", "route_strategy", "first"),
						),
					},
					{ // update in place
						Config: jobConfig(s, "0 30 2 * * ?", "nightly close, later"),
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction("ringjob_job.close", plancheck.ResourceActionUpdate),
							plancheck.ExpectResourceAction("ringjob_job.load", plancheck.ResourceActionNoop),
						}},
						Check: resource.ComposeTestCheckFunc(sameID, func(*terraform.State) error {
							j := apiJob(t, s, "billing", "close")
							require.Equal(t, "0 30 2 * * ?", j.ScheduleConf)
							require.Equal(t, "nightly close, later", j.Description)
							return nil
						}),
					},
					{ // drift: an edit through the API shows in the plan and is undone
						PreConfig: func() {
							j := apiJob(t, s, "billing", "close")
							_, err := s.API.PatchJob(ctxT(t), client.JobRef{AppName: "billing", Name: "close"},
								map[string]any{"description": "edited in the console", "retry_count": 5}, j.ETag)
							require.NoError(t, err)
						},
						Config: jobConfig(s, "0 30 2 * * ?", "nightly close, later"),
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction("ringjob_job.close", plancheck.ResourceActionUpdate),
							plancheck.ExpectKnownValue("ringjob_job.close", tfjsonpath.New("description"), knownvalue.StringExact("nightly close, later")),
							plancheck.ExpectKnownValue("ringjob_job.close", tfjsonpath.New("retry_count"), knownvalue.Int64Exact(3)),
						}},
						Check: resource.ComposeTestCheckFunc(sameID, func(*terraform.State) error {
							j := apiJob(t, s, "billing", "close")
							require.Equal(t, "nightly close, later", j.Description)
							require.Equal(t, 3, j.RetryCount)
							return nil
						}),
					},
					{ // import by id
						ResourceName:      "ringjob_job.close",
						ImportState:       true,
						ImportStateVerify: true,
					},
					{ // import by name
						ResourceName:      "ringjob_job.close",
						ImportState:       true,
						ImportStateId:     "billing/close",
						ImportStateVerify: true,
					},
					{ // import a group by its app name
						ResourceName:      "ringjob_group.billing",
						ImportState:       true,
						ImportStateId:     "billing",
						ImportStateVerify: true,
					},
					{ // a bad cron fails the plan, on its attribute, and changes nothing
						Config:      jobConfig(s, "0 0 25 * * ?", "nightly close, later"),
						PlanOnly:    true,
						ExpectError: regexp.MustCompile(`(?s)Invalid schedule.*schedule_conf += "0 0 25 \* \* \?".*hour 25 is out of range`),
					},
					{ // an unknown enum value fails the plan, naming the attribute
						Config: jobConfig(s, "0 30 2 * * ?", "nightly close, later") + `
resource "ringjob_job" "typo" {
  group_id       = ringjob_group.billing.id
  name           = "typo"
  route_strategy = "FAILOVER"
}
`,
						PlanOnly:    true,
						ExpectError: regexp.MustCompile(`(?s)route_strategy is "FAILOVER"; it must be one of "first".*"failover"`),
					},
					{ // the refused plans changed nothing
						Config:           jobConfig(s, "0 30 2 * * ?", "nightly close, later"),
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
					},
				},
			})
			// destroyed with the test case: nothing is left on the server
			jobs, err := s.API.AllJobs(ctxT(t), nil)
			require.NoError(t, err)
			require.Empty(t, jobs)
		})
	}
}

// TestDestroyOfReferencedJobIsRefused: a job that another job (managed
// elsewhere) names as a child is not destroyed; the diagnostic names the
// parent, and once the parent lets go the destroy goes through.
func TestDestroyOfReferencedJobIsRefused(t *testing.T) {
	needTerraform(t)
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			s := startServer(t, dialect)
			group := s.providerBlock() + `
resource "ringjob_group" "etl" {
  app_name = "etl-jobs"
  members  = ["local://hello"]
}
`
			withChild := group + `
resource "ringjob_job" "load" {
  group_id = ringjob_group.etl.id
  name     = "load"
}
`
			var parent client.Job
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: providers,
				Steps: []resource.TestStep{
					{Config: withChild},
					{
						PreConfig: func() {
							load := apiJob(t, s, "etl-jobs", "load")
							var err error
							parent, err = s.API.CreateJob(ctxT(t), client.JobInput{GroupID: load.GroupID, Name: "extract", ChildJobIDs: []int64{load.ID}})
							require.NoError(t, err)
						},
						Config:      group,
						ExpectError: regexp.MustCompile(`(?s)Cannot delete job etl-jobs/load.*child job of etl-jobs/extract`),
					},
					{
						PreConfig: func() {
							_, err := s.API.PatchJob(ctxT(t), client.JobRef{AppName: "etl-jobs", Name: "extract"}, map[string]any{"child_job_ids": []int64{}}, "")
							require.NoError(t, err)
						},
						Config: group,
						Check: func(*terraform.State) error {
							_, err := s.API.GetJobByName(ctxT(t), client.JobRef{AppName: "etl-jobs", Name: "load"})
							require.True(t, client.IsNotFound(err), "load is gone: %v", err)
							// extract is not Terraform's: take it away so the group can go
							require.NoError(t, s.API.DeleteJobByID(ctxT(t), parent.ID, ""))
							return nil
						},
					},
				},
			})
		})
	}
}

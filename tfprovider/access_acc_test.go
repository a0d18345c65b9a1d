package tfprovider_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/client"
)

const executorToken = "orders-executor-token-0123456789"

func accessConfig(s *server, tokenName string) string {
	return s.providerBlock() + fmt.Sprintf(`
resource "ringjob_group" "orders" {
  app_name       = "orders"
  executor_token = %q
}

resource "ringjob_service_account" "ci" {
  name = "ci-deployer"
}

resource "ringjob_role_binding" "ci_operates_orders" {
  role         = "operator"
  group_id     = ringjob_group.orders.id
  principal_id = ringjob_service_account.ci.id
}

resource "ringjob_api_token" "ci" {
  name           = %q
  principal_id   = ringjob_service_account.ci.id
  expires_in_sec = 86400
}
`, executorToken, tokenName)
}

// tokenOf reads the secret of ringjob_api_token.ci from the state.
func tokenOf(st *terraform.State) string {
	return st.RootModule().Resources["ringjob_api_token.ci"].Primary.Attributes["token"]
}

// TestAccessResources: a service account with a role on a group and a
// token that works as that account; drift when the account is disabled and
// the token revoked through the API; imports; the data sources.
func TestAccessResources(t *testing.T) {
	needTerraform(t)
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			s := startServer(t, dialect)
			var firstToken string
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: providers,
				Steps: []resource.TestStep{
					{
						Config: accessConfig(s, "ci-deploy"),
						Check: resource.ComposeTestCheckFunc(
							resource.TestCheckResourceAttr("ringjob_group.orders", "executor_token_set", "true"),
							resource.TestCheckResourceAttr("ringjob_group.orders", "accept_registrations", "true"),
							resource.TestCheckResourceAttrSet("ringjob_api_token.ci", "prefix"),
							resource.TestCheckResourceAttrSet("ringjob_api_token.ci", "expires_at"),
							func(st *terraform.State) error {
								firstToken = tokenOf(st)
								require.NotEmpty(t, firstToken)
								me, err := client.New(s.URL, firstToken, nil).Me(ctxT(t))
								require.NoError(t, err, "the token Terraform issued signs in")
								require.Equal(t, "ci-deployer", me.Name)
								require.Equal(t, "service", me.Kind)
								gid := st.RootModule().Resources["ringjob_group.orders"].Primary.ID
								require.Len(t, me.Roles, 1)
								require.Equal(t, "operator", me.Roles[0].Role)
								require.Equal(t, gid, fmt.Sprint(me.Roles[0].GroupID))
								return nil
							},
						),
					},
					{ // drift: disabled and revoked outside Terraform; the plan undoes both
						PreConfig: func() {
							accounts, err := s.API.ListServiceAccounts(ctxT(t), client.ListOptions{})
							require.NoError(t, err)
							require.Len(t, accounts.Items, 1)
							on := true
							_, err = s.API.UpdateServiceAccount(ctxT(t), accounts.Items[0].ID, client.PrincipalPatch{Disabled: &on})
							require.NoError(t, err)
							tokens, err := s.API.ListTokens(ctxT(t), client.ListOptions{Filters: map[string]string{"principal_id": fmt.Sprint(accounts.Items[0].ID)}})
							require.NoError(t, err)
							require.Len(t, tokens.Items, 1)
							_, err = s.API.RevokeToken(ctxT(t), tokens.Items[0].ID)
							require.NoError(t, err)
						},
						Config: accessConfig(s, "ci-deploy"),
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction("ringjob_service_account.ci", plancheck.ResourceActionUpdate),
							plancheck.ExpectResourceAction("ringjob_api_token.ci", plancheck.ResourceActionCreate),
							plancheck.ExpectResourceAction("ringjob_role_binding.ci_operates_orders", plancheck.ResourceActionNoop),
						}},
						Check: func(st *terraform.State) error {
							_, err := client.New(s.URL, firstToken, nil).Me(ctxT(t))
							require.Error(t, err, "the revoked token stays revoked")
							me, err := client.New(s.URL, tokenOf(st), nil).Me(ctxT(t))
							require.NoError(t, err, "the new token works: the account is enabled again")
							require.Equal(t, "ci-deployer", me.Name)
							return nil
						},
					},
					{ // a new name replaces the token: the old one is revoked
						Config: accessConfig(s, "ci-deploy-2"),
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction("ringjob_api_token.ci", plancheck.ResourceActionDestroyBeforeCreate),
						}},
						Check: func(st *terraform.State) error {
							tokens, err := s.API.ListTokens(ctxT(t), client.ListOptions{})
							require.NoError(t, err)
							live := 0
							for _, tk := range tokens.Items {
								if tk.RevokedAt == nil && tk.PrincipalName == "ci-deployer" {
									live++
									require.Equal(t, "ci-deploy-2", tk.Name)
								}
							}
							require.Equal(t, 1, live)
							return nil
						},
					},
					{ResourceName: "ringjob_service_account.ci", ImportState: true, ImportStateVerify: true},
					{ResourceName: "ringjob_role_binding.ci_operates_orders", ImportState: true, ImportStateVerify: true},
					{ResourceName: "ringjob_api_token.ci", ImportState: true, ImportStateVerify: true,
						// the secret is never shown again, nor the lifetime it was asked with
						ImportStateVerifyIgnore: []string{"token", "expires_in_sec"}},
					{ResourceName: "ringjob_group.orders", ImportState: true, ImportStateVerify: true,
						ImportStateVerifyIgnore: []string{"executor_token"}},
					{ // a role that does not exist fails the plan, naming the attribute
						Config: accessConfig(s, "ci-deploy-2") + `
resource "ringjob_role_binding" "bad" {
  role     = "boss"
  group_id = ringjob_group.orders.id
  sso_group = "ops"
}
`,
						PlanOnly:    true,
						ExpectError: regexp.MustCompile(`(?s)role is "boss"; it must be one of "admin", "owner", "operator", "viewer"`),
					},
					{Config: accessConfig(s, "ci-deploy-2"), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
				},
			})
			accounts, err := s.API.ListServiceAccounts(ctxT(t), client.ListOptions{})
			require.NoError(t, err)
			require.Empty(t, accounts.Items, "destroy removed the service account")
		})
	}
}

// register registers an HTTP executor into a group by heartbeat, as an
// XXL-JOB executor does.
func register(t *testing.T, s *server, appName, address string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"registryGroup": "EXECUTOR", "registryKey": appName, "registryValue": address})
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, s.URL+"/api/registry", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("XXL-JOB-ACCESS-TOKEN", executorToken)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var out struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	require.Equal(t, 200, out.Code, "registry: %s", out.Msg)
}

// TestDataSources reads a group, a job, the executors and a schedule's
// next fires.
func TestDataSources(t *testing.T) {
	needTerraform(t)
	s := startServer(t, "sqlite")
	ctx := ctxT(t)
	on := true
	g, err := s.API.CreateGroup(ctx, client.GroupInput{AppName: "orders", Title: "Orders", Members: []string{}, ExecutorToken: executorToken, AcceptRegistrations: &on})
	require.NoError(t, err)
	in := client.JobInput{GroupID: g.ID, Name: "sync"}
	in.ScheduleType, in.ScheduleConf = "fixed_rate", "30"
	j, err := s.API.CreateJob(ctx, in)
	require.NoError(t, err)
	register(t, s, "orders", "http://127.0.0.1:9999/")
	require.Eventually(t, func() bool { // the registry write is asynchronous, as XXL-JOB's
		ex, err := s.API.ListExecutors(ctx, g.ID)
		return err == nil && len(ex) == 1
	}, 10e9, 50e6)

	cfg := s.providerBlock() + `
data "ringjob_group" "orders" {
  app_name = "orders"
}

data "ringjob_job" "sync" {
  app_name = "orders"
  name     = "sync"
}

data "ringjob_job" "by_id" {
  id = data.ringjob_job.sync.id
}

data "ringjob_executors" "orders" {
  group_id = data.ringjob_group.orders.id
}

data "ringjob_next_fires" "nightly" {
  schedule_conf = "0 0 2 * * ?"
  time_zone     = "Europe/Berlin"
  n             = 3
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: providers,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr("data.ringjob_group.orders", "id", fmt.Sprint(g.ID)),
					resource.TestCheckResourceAttr("data.ringjob_group.orders", "title", "Orders"),
					resource.TestCheckResourceAttr("data.ringjob_group.orders", "executor_token_set", "true"),
					resource.TestCheckResourceAttr("data.ringjob_job.sync", "id", fmt.Sprint(j.ID)),
					resource.TestCheckResourceAttr("data.ringjob_job.sync", "schedule_type", "fixed_rate"),
					resource.TestCheckResourceAttr("data.ringjob_job.sync", "schedule_conf", "30"),
					resource.TestCheckResourceAttr("data.ringjob_job.by_id", "name", "sync"),
					resource.TestCheckResourceAttr("data.ringjob_job.by_id", "app_name", "orders"),
					resource.TestCheckResourceAttr("data.ringjob_executors.orders", "executors.#", "1"),
					resource.TestCheckResourceAttr("data.ringjob_executors.orders", "executors.0.address", "http://127.0.0.1:9999"),
					resource.TestCheckResourceAttr("data.ringjob_executors.orders", "executors.0.app_name", "orders"),
					resource.TestCheckResourceAttr("data.ringjob_next_fires.nightly", "times.#", "3"),
					resource.TestCheckResourceAttr("data.ringjob_next_fires.nightly", "local.#", "3"),
					func(st *terraform.State) error {
						attrs := st.RootModule().Resources["data.ringjob_next_fires.nightly"].Primary.Attributes
						for i := 0; i < 3; i++ {
							local := attrs[fmt.Sprintf("local.%d", i)]
							require.Contains(t, local, "T02:00:00", "fires at 02:00 Berlin time")
							require.True(t, strings.HasSuffix(local, "+01:00") || strings.HasSuffix(local, "+02:00"), local)
						}
						return nil
					},
				),
			},
			{
				Config:      s.providerBlock() + `data "ringjob_next_fires" "bad" { schedule_conf = "61 * * * * ?" }`,
				ExpectError: regexp.MustCompile(`(?s)schedule_conf.*61`),
			},
			{
				Config: s.providerBlock() + `
data "ringjob_job" "none" {
  app_name = "orders"
  name     = "nope"
}
`,
				ExpectError: regexp.MustCompile(`(?s)Cannot read job orders/nope.*does not exist`),
			},
		},
	})
}

// TestSettingsKnownOnlyAtApply: a provider whose url comes from a resource
// of the same configuration (the server is deployed by the same apply)
// plans without asking the server and creates the objects at apply.
func TestSettingsKnownOnlyAtApply(t *testing.T) {
	needTerraform(t)
	s := startServer(t, "sqlite")
	cfg := fmt.Sprintf(`
resource "terraform_data" "server" {
  input = %q
}

provider "ringjob" {
  url           = terraform_data.server.output
  token         = %q
  ready_timeout = "30s"
}

resource "ringjob_group" "late" {
  app_name = "late-group"
}

resource "ringjob_job" "late" {
  group_id      = ringjob_group.late.id
  name          = "late"
  schedule_type = "cron"
  schedule_conf = "0 0 3 * * ?"
}
`, s.URL, s.Token)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: providers,
		Steps: []resource.TestStep{{
			Config: cfg,
			Check: func(*terraform.State) error {
				j := apiJob(t, s, "late-group", "late")
				require.Equal(t, "0 0 3 * * ?", j.ScheduleConf)
				return nil
			},
		}},
	})
}

package tfprovider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/tfprovider"
)

// reattach serves the provider in the test process for terraform commands
// the test runs itself, and returns the TF_REATTACH_PROVIDERS value that
// points terraform at it.
func reattach(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	configs := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- tf6server.Serve("registry.terraform.io/ringjob/ringjob",
			func() tfprotov6.ProviderServer { return providerserver.NewProtocol6(tfprovider.New("test")())() },
			tf6server.WithDebug(ctx, configs, closed), tf6server.WithGoPluginLogger(hclog.NewNullLogger()), tf6server.WithoutLogStderrOverride(),
			tf6server.WithLoggingSink(t)) // provider logs only with TF_LOG, as in resource.Test
	}()
	t.Cleanup(func() {
		cancel()
		<-closed
		<-served
	})
	var cfg *plugin.ReattachConfig
	select {
	case cfg = <-configs:
	case err := <-served:
		t.Fatalf("the provider did not start serving: %v", err)
	}
	raw, err := json.Marshal(map[string]any{"registry.terraform.io/ringjob/ringjob": map[string]any{
		"Protocol": string(cfg.Protocol), "ProtocolVersion": cfg.ProtocolVersion, "Pid": cfg.Pid, "Test": true,
		"Addr": map[string]string{"Network": cfg.Addr.Network(), "String": cfg.Addr.String()},
	}})
	require.NoError(t, err)
	return string(raw)
}

// workdir is a terraform working directory driven by the real binary.
type workdir struct {
	t   *testing.T
	dir string
	env []string
}

func (w *workdir) write(config string) {
	w.t.Helper()
	require.NoError(w.t, os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(config), 0o600))
}

// run runs terraform with args and returns its output and error.
func (w *workdir) run(args ...string) (string, error) {
	w.t.Helper()
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	cmd := exec.Command(tf, args...)
	cmd.Dir = w.dir
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (w *workdir) must(args ...string) string {
	w.t.Helper()
	out, err := w.run(args...)
	require.NoError(w.t, err, "terraform %v:\n%s", args, out)
	return out
}

// TestApplyRefusesConcurrentEdit: a job edited through the API between
// `terraform plan -out` and `terraform apply` of that plan is not
// overwritten: the apply fails saying so, the edit stays, and the next plan
// shows it as drift.
func TestApplyRefusesConcurrentEdit(t *testing.T) {
	needTerraform(t)
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			s := startServer(t, dialect)
			w := &workdir{t: t, dir: t.TempDir()}
			cliConfig := filepath.Join(w.dir, ".terraformrc") // none of the machine's
			require.NoError(t, os.WriteFile(cliConfig, nil, 0o600))
			w.env = append(os.Environ(), "TF_REATTACH_PROVIDERS="+reattach(t), "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TF_CLI_CONFIG_FILE="+cliConfig)
			config := func(description string) string {
				return `
terraform {
  required_providers {
    ringjob = { source = "ringjob/ringjob" }
  }
}
` + s.providerBlock() + fmt.Sprintf(`
resource "ringjob_group" "billing" {
  app_name = "billing"
  members  = ["local://hello"]
}

resource "ringjob_job" "close" {
  group_id      = ringjob_group.billing.id
  name          = "close"
  description   = %q
  schedule_type = "cron"
  schedule_conf = "0 0 2 * * ?"
}
`, description)
			}
			w.write(config("v1"))
			w.must("init", "-no-color", "-input=false")
			w.must("apply", "-no-color", "-input=false", "-auto-approve")

			w.write(config("v2 from terraform"))
			w.must("plan", "-no-color", "-input=false", "-out=tfplan")
			ref := client.JobRef{AppName: "billing", Name: "close"}
			_, err := s.API.PatchJob(ctxT(t), ref, map[string]any{"description": "edited in the console"}, "")
			require.NoError(t, err)

			out, err := w.run("apply", "-no-color", "-input=false", "tfplan")
			require.Error(t, err, "the apply of a plan made before the edit fails:\n%s", out)
			require.Contains(t, out, "Cannot update job billing/close")
			require.Contains(t, out, "it was changed outside Terraform")
			require.Regexp(t, "Run `terraform plan`\\s+again", out)
			j, err := s.API.GetJobByName(ctxT(t), ref)
			require.NoError(t, err)
			require.Equal(t, "edited in the console", j.Description, "the edit was not overwritten")

			out = w.must("plan", "-no-color", "-input=false")
			require.Contains(t, out, `"edited in the console" -> "v2 from terraform"`, "the next plan shows the edit it would undo")
			w.must("apply", "-no-color", "-input=false", "-auto-approve")
			j, err = s.API.GetJobByName(ctxT(t), ref)
			require.NoError(t, err)
			require.Equal(t, "v2 from terraform", j.Description)
			w.must("destroy", "-no-color", "-input=false", "-auto-approve")
		})
	}
}

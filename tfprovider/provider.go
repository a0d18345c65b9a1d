package tfprovider

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/ringjob/ringjob/client"
)

// DefaultRequestTimeout bounds one request to the server when the provider
// configuration sets no request_timeout.
const DefaultRequestTimeout = 60 * time.Second

// The environment variables the provider reads when its configuration
// leaves url or token out.
const (
	EnvURL   = "RINGJOB_URL"
	EnvToken = "RINGJOB_TOKEN"
)

// Provider is the ringjob provider. version is the build's, shown by
// `terraform version`.
type Provider struct {
	version string
}

var _ provider.Provider = (*Provider)(nil)

// New returns a function that makes the provider, as providerserver wants.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &Provider{version: version} }
}

type providerModel struct {
	URL                types.String `tfsdk:"url"`
	Token              types.String `tfsdk:"token"`
	CAFile             types.String `tfsdk:"ca_file"`
	InsecureSkipVerify types.Bool   `tfsdk:"insecure_skip_verify"`
	RequestTimeout     types.String `tfsdk:"request_timeout"`
	ReadyTimeout       types.String `tfsdk:"ready_timeout"`
}

// Metadata names the provider: its resources are ringjob_*.
func (p *Provider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "ringjob"
	resp.Version = p.version
}

// Schema is the provider block.
func (p *Provider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Manage Ringjob groups, jobs and access (service accounts, role bindings, API tokens) through its REST API.",
		Attributes: map[string]schema.Attribute{
			"url": schema.StringAttribute{
				Optional:    true,
				Description: "Base URL of the Ringjob server, such as https://ringjob.example.com. Defaults to the RINGJOB_URL environment variable.",
			},
			"token": schema.StringAttribute{
				Optional:    true,
				Sensitive:   true,
				Description: "API token the provider acts with (ringjob token create). Defaults to the RINGJOB_TOKEN environment variable. Its roles limit what the provider may manage.",
			},
			"ca_file": schema.StringAttribute{
				Optional:    true,
				Description: "PEM file of the certificate authorities to trust for the server's TLS certificate, in addition to the system's.",
			},
			"insecure_skip_verify": schema.BoolAttribute{
				Optional:    true,
				Description: "Do not verify the server's TLS certificate. For tests only: anyone between the provider and the server can read the token.",
			},
			"request_timeout": schema.StringAttribute{
				Optional:    true,
				Description: "How long one request to the server may take, as a Go duration such as 30s or 2m. Defaults to 60s.",
			},
			"ready_timeout": schema.StringAttribute{
				Optional:    true,
				Description: "Wait up to this long (a Go duration such as 15m) for the server to answer /readyz before the first request: for a server deployed by the same apply. Left out, the provider does not wait.",
			},
		},
	}
}

// Configure builds the client every resource and data source uses.
func (p *Provider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	for _, v := range []types.String{m.URL, m.Token, m.CAFile, m.RequestTimeout, m.ReadyTimeout} {
		if v.IsUnknown() {
			// Known only after apply (the server, or its token, is created
			// by this configuration): nothing can be asked of the server
			// while planning, so the plan-time checks are skipped; Terraform
			// configures the provider again with the values before it
			// applies anything of it.
			tflog.Info(ctx, "ringjob provider settings are not known yet; plan-time checks against the server are skipped")
			return
		}
	}
	c, err := newClient(m, os.Getenv)
	if err != nil {
		resp.Diagnostics.AddAttributeError(err.attr, "Invalid provider configuration", err.msg)
		return
	}
	if s := m.ReadyTimeout.ValueString(); s != "" {
		d, perr := time.ParseDuration(s)
		if perr != nil || d <= 0 {
			resp.Diagnostics.AddAttributeError(path.Root("ready_timeout"), "Invalid provider configuration",
				fmt.Sprintf("ready_timeout %q is not a positive duration; write it as 10m or 90s.", s))
			return
		}
		wctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		if werr := c.WaitReady(wctx, 5*time.Second); werr != nil {
			resp.Diagnostics.AddAttributeError(path.Root("ready_timeout"), "Ringjob server not ready", werr.Error())
			return
		}
	}
	resp.ResourceData = c
	resp.DataSourceData = c
}

type configError struct {
	attr path.Path
	msg  string
}

// newClient turns the provider block (and the environment, for what it
// leaves out) into a client.
func newClient(m providerModel, getenv func(string) string) (*client.Client, *configError) {
	base := m.URL.ValueString()
	if base == "" {
		base = getenv(EnvURL)
	}
	if base == "" {
		return nil, &configError{path.Root("url"), "url is required: set it in the provider block or in the " + EnvURL + " environment variable (https://ringjob.example.com)."}
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, &configError{path.Root("url"), fmt.Sprintf("url %q must start with http:// or https://.", base)}
	}
	token := m.Token.ValueString()
	if token == "" {
		token = getenv(EnvToken)
	}
	if token == "" {
		return nil, &configError{path.Root("token"), "token is required: set it in the provider block or in the " + EnvToken + " environment variable (create one with `ringjob token create`)."}
	}
	timeout := DefaultRequestTimeout
	if s := m.RequestTimeout.ValueString(); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, &configError{path.Root("request_timeout"), fmt.Sprintf("request_timeout %q is not a positive duration; write it as 30s, 2m or 1m30s.", s)}
		}
		timeout = d
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: m.InsecureSkipVerify.ValueBool()} //nolint:gosec // the user's explicit choice, documented as for tests
	if f := m.CAFile.ValueString(); f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, &configError{path.Root("ca_file"), fmt.Sprintf("cannot read ca_file: %v", err)}
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &configError{path.Root("ca_file"), fmt.Sprintf("ca_file %s holds no PEM certificate.", f)}
		}
		tlsConf.RootCAs = pool
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConf
	return client.New(base, token, &http.Client{Timeout: timeout, Transport: tr}), nil
}

// Resources lists the resources.
func (p *Provider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		newGroupResource,
		newJobResource,
		newWorkflowResource,
		newServiceAccountResource,
		newRoleBindingResource,
		newAPITokenResource,
	}
}

// DataSources lists the data sources.
func (p *Provider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		newGroupDataSource,
		newJobDataSource,
		newExecutorsDataSource,
		newNextFiresDataSource,
	}
}

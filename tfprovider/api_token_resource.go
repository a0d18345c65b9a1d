package tfprovider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ringjob/ringjob/client"
)

// apiTokenResource is ringjob_api_token. The secret exists only in the
// answer to the token's creation, so it is in the state of the Terraform
// run that created it and never read again; destroy revokes the token.
type apiTokenResource struct {
	c *client.Client
}

var (
	_ resource.ResourceWithConfigure   = (*apiTokenResource)(nil)
	_ resource.ResourceWithImportState = (*apiTokenResource)(nil)
)

func newAPITokenResource() resource.Resource { return &apiTokenResource{} }

type apiTokenModel struct {
	ID           types.String `tfsdk:"id"`
	Name         types.String `tfsdk:"name"`
	PrincipalID  types.String `tfsdk:"principal_id"`
	ExpiresAt    types.String `tfsdk:"expires_at"`
	ExpiresInSec types.Int64  `tfsdk:"expires_in_sec"`
	Token        types.String `tfsdk:"token"`
	Prefix       types.String `tfsdk:"prefix"`
}

var apiTokenAttributeDocs = map[string]string{
	"id":             "The token's id.",
	"name":           "A name saying what the token is for, such as `ci-deploy`.",
	"principal_id":   "Id of the user or service account the token acts as, such as `ringjob_service_account.ci.id`; left out, the provider's own principal (a server token has none, so give one). Issuing tokens for others needs the admin role.",
	"expires_at":     "When the token stops working, as an RFC 3339 time (2030-01-02T15:04:05Z). Give this or expires_in_sec, or neither for a token that never expires.",
	"expires_in_sec": "Lifetime of the token from its creation, in seconds (1 s to ten years).",
	"token":          "The secret, known only from the creation on: it is written to the Terraform state (sensitive) and cannot be read back, so an imported token has none. Keep the state where secrets belong.",
	"prefix":         "The first characters of the secret, as the console and `ringjob token list` show them.",
}

var apiTokenAttrs = attrSet(apiTokenAttributeDocs)

func (r *apiTokenResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_api_token"
}

func (r *apiTokenResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (r *apiTokenResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	doc := apiTokenAttributeDocs
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		Description: "An API token of a user or service account. Any change issues a new token and revokes the old one; a token revoked elsewhere is issued again. Import it by id (without its secret).",
		Attributes: map[string]schema.Attribute{
			"id":   schema.StringAttribute{Computed: true, Description: doc["id"], PlanModifiers: keep},
			"name": schema.StringAttribute{Required: true, Description: doc["name"], PlanModifiers: replace},
			"principal_id": schema.StringAttribute{Optional: true, Computed: true, Description: doc["principal_id"],
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplaceIfConfigured(), stringplanmodifier.UseStateForUnknown()},
				Validators:    []validator.String{idString{of: "service account"}}},
			"expires_at": schema.StringAttribute{Optional: true, Computed: true, Description: doc["expires_at"],
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplaceIfConfigured(), stringplanmodifier.UseStateForUnknown()},
				Validators:    []validator.String{rfc3339Time{}}},
			"expires_in_sec": schema.Int64Attribute{Optional: true, Description: doc["expires_in_sec"],
				PlanModifiers: []planmodifier.Int64{int64planmodifier.RequiresReplace()}, Validators: []validator.Int64{atLeast(1)}},
			"token":  schema.StringAttribute{Computed: true, Sensitive: true, Description: doc["token"], PlanModifiers: keep},
			"prefix": schema.StringAttribute{Computed: true, Description: doc["prefix"], PlanModifiers: keep},
		},
	}
}

// refresh sets the model's server-side fields from t; an expires_at the
// configuration wrote is kept as written while it is the same instant.
func (m *apiTokenModel) refresh(t client.Token) {
	m.ID = types.StringValue(formatID(t.ID))
	m.Name = types.StringValue(t.Name)
	m.PrincipalID = optionalID(t.PrincipalID)
	m.Prefix = types.StringValue(t.Prefix)
	switch {
	case t.ExpiresAt == nil:
		m.ExpiresAt = types.StringNull()
	case !sameInstant(m.ExpiresAt.ValueString(), *t.ExpiresAt):
		m.ExpiresAt = types.StringValue(*t.ExpiresAt)
	}
	if m.Token.IsUnknown() {
		m.Token = types.StringNull()
	}
}

func sameInstant(a, b string) bool {
	ta, err1 := time.Parse(time.RFC3339, a)
	tb, err2 := time.Parse(time.RFC3339, b)
	return err1 == nil && err2 == nil && ta.Equal(tb)
}

func (r *apiTokenResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var plan apiTokenModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	in := client.TokenInput{Name: plan.Name.ValueString(), ExpiresInSec: plan.ExpiresInSec.ValueInt64()}
	if !plan.ExpiresAt.IsUnknown() {
		in.ExpiresAt = plan.ExpiresAt.ValueString()
	}
	if !plan.PrincipalID.IsUnknown() && !plan.PrincipalID.IsNull() {
		id, err := parseID(plan.PrincipalID.ValueString(), "principal")
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("principal_id"), "Invalid principal_id", err.Error())
			return
		}
		in.PrincipalID = id
	}
	t, err := r.c.CreateToken(ctx, in)
	if err != nil {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("create API token %q", in.Name), err, apiTokenAttrs)
		return
	}
	plan.refresh(t)
	plan.Token = types.StringValue(t.Token)
	resp.Diagnostics.Append(resp.State.Set(ctx, plan)...)
}

func (r *apiTokenResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var state apiTokenModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id, err := parseID(state.ID.ValueString(), "API token")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id in state", err.Error())
		return
	}
	t, err := r.c.GetToken(ctx, id)
	if client.IsNotFound(err) || err == nil && t.RevokedAt != nil {
		resp.State.RemoveResource(ctx) // gone or revoked: the plan issues a new one
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("read API token %d", id), err, nil)
		return
	}
	state.refresh(t)
	resp.Diagnostics.Append(resp.State.Set(ctx, state)...)
}

// Update is never called: every configurable attribute replaces the token.
func (r *apiTokenResource) Update(_ context.Context, _ resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.Diagnostics.AddError("API tokens cannot change", "An API token is replaced, never updated; this is a bug in the provider.")
}

func (r *apiTokenResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var state apiTokenModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id, err := parseID(state.ID.ValueString(), "API token")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id in state", err.Error())
		return
	}
	if _, err := r.c.RevokeToken(ctx, id); err != nil && !client.IsNotFound(err) {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("revoke API token %s (id %d)", state.Name.ValueString(), id), err, nil)
	}
}

func (r *apiTokenResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	if _, err := parseID(req.ID, "API token"); err != nil {
		resp.Diagnostics.AddError("Cannot import API token "+req.ID, err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
}

// rfc3339Time checks a time attribute.
type rfc3339Time struct{}

func (rfc3339Time) Description(context.Context) string { return "an RFC 3339 time" }

func (v rfc3339Time) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (rfc3339Time) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := time.Parse(time.RFC3339, req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid time",
			fmt.Sprintf("%s is %q, which is not an RFC 3339 time such as 2030-01-02T15:04:05Z.", req.Path, req.ConfigValue.ValueString()))
	}
}

package tfprovider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ringjob/ringjob/client"
)

// serviceAccountResource is ringjob_service_account.
type serviceAccountResource struct {
	c *client.Client
}

var (
	_ resource.ResourceWithConfigure   = (*serviceAccountResource)(nil)
	_ resource.ResourceWithImportState = (*serviceAccountResource)(nil)
)

func newServiceAccountResource() resource.Resource { return &serviceAccountResource{} }

type serviceAccountModel struct {
	ID       types.String `tfsdk:"id"`
	Name     types.String `tfsdk:"name"`
	Disabled types.Bool   `tfsdk:"disabled"`
}

var serviceAccountAttributeDocs = map[string]string{
	"id":       "The service account's id; give it to `ringjob_role_binding.principal_id` and `ringjob_api_token.principal_id`.",
	"name":     "The account's name, unique among users and service accounts. Changing it renames the account in place.",
	"disabled": "Whether the account is disabled: its tokens stop working until it is enabled again. Defaults to false.",
}

var serviceAccountAttrs = attrSet(serviceAccountAttributeDocs)

func (r *serviceAccountResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_service_account"
}

func (r *serviceAccountResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (r *serviceAccountResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	doc := serviceAccountAttributeDocs
	resp.Schema = schema.Schema{
		Description: "A service account: a principal for machines (CI, other services) that signs in only with API tokens. Managing it needs the admin role. Import it by id.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: doc["id"],
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"name":     schema.StringAttribute{Required: true, Description: doc["name"]},
			"disabled": schema.BoolAttribute{Optional: true, Computed: true, Description: doc["disabled"], Default: booldefault.StaticBool(false)},
		},
	}
}

func serviceAccountModelOf(p client.Principal) serviceAccountModel {
	return serviceAccountModel{ID: types.StringValue(formatID(p.ID)), Name: types.StringValue(p.Name), Disabled: types.BoolValue(p.Disabled)}
}

func (r *serviceAccountResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var plan serviceAccountModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	p, err := r.c.CreateServiceAccount(ctx, plan.Name.ValueString())
	if err != nil {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("create service account %q", plan.Name.ValueString()), err, serviceAccountAttrs)
		return
	}
	if plan.Disabled.ValueBool() {
		on := true
		if p, err = r.c.UpdateServiceAccount(ctx, p.ID, client.PrincipalPatch{Disabled: &on}); err != nil {
			// The account exists: keep it in the state so it is not orphaned.
			resp.Diagnostics.Append(resp.State.Set(ctx, serviceAccountModelOf(p))...)
			addAPIError(&resp.Diagnostics, fmt.Sprintf("disable service account %q", plan.Name.ValueString()), err, serviceAccountAttrs)
			return
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, serviceAccountModelOf(p))...)
}

func (r *serviceAccountResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var state serviceAccountModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id, err := parseID(state.ID.ValueString(), "service account")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id in state", err.Error())
		return
	}
	p, err := r.c.GetServiceAccount(ctx, id)
	if client.IsNotFound(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("read service account %d", id), err, nil)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, serviceAccountModelOf(p))...)
}

func (r *serviceAccountResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var plan, state serviceAccountModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id, err := parseID(state.ID.ValueString(), "service account")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id in state", err.Error())
		return
	}
	patch := client.PrincipalPatch{}
	if !plan.Name.Equal(state.Name) {
		n := plan.Name.ValueString()
		patch.Name = &n
	}
	if !plan.Disabled.Equal(state.Disabled) {
		on := plan.Disabled.ValueBool()
		patch.Disabled = &on
	}
	p, err := r.c.UpdateServiceAccount(ctx, id, patch)
	if err != nil {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("update service account %s (id %d)", state.Name.ValueString(), id), err, serviceAccountAttrs)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, serviceAccountModelOf(p))...)
}

func (r *serviceAccountResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var state serviceAccountModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id, err := parseID(state.ID.ValueString(), "service account")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id in state", err.Error())
		return
	}
	if err := r.c.DeleteServiceAccount(ctx, id); err != nil && !client.IsNotFound(err) {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("delete service account %s (id %d)", state.Name.ValueString(), id), err, nil)
	}
}

func (r *serviceAccountResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	if _, err := parseID(req.ID, "service account"); err != nil {
		resp.Diagnostics.AddError("Cannot import service account "+req.ID, err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
}

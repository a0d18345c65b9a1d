package tfprovider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ringjob/ringjob/client"
)

// roleBindingResource is ringjob_role_binding. A binding has no update:
// every change replaces it.
type roleBindingResource struct {
	c *client.Client
}

var (
	_ resource.ResourceWithConfigure   = (*roleBindingResource)(nil)
	_ resource.ResourceWithImportState = (*roleBindingResource)(nil)
)

func newRoleBindingResource() resource.Resource { return &roleBindingResource{} }

type roleBindingModel struct {
	ID          types.String `tfsdk:"id"`
	Role        types.String `tfsdk:"role"`
	GroupID     types.String `tfsdk:"group_id"`
	PrincipalID types.String `tfsdk:"principal_id"`
	SSOGroup    types.String `tfsdk:"sso_group"`
}

var roleBindingAttributeDocs = map[string]string{
	"id":           "The binding's id.",
	"role":         "The role granted, one of " + validRole.list() + ": `admin` holds every permission on every group (no group_id); the others are held on one group.",
	"group_id":     "Id of the group the role is held on; required for owner, operator and viewer, left out for admin.",
	"principal_id": "Id of the user or service account that holds the role, such as `ringjob_service_account.ci.id`. Give this or sso_group.",
	"sso_group":    "SSO (OpenID Connect) group whose members hold the role. Give this or principal_id.",
}

var roleBindingAttrs = attrSet(roleBindingAttributeDocs)

func (r *roleBindingResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_role_binding"
}

func (r *roleBindingResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (r *roleBindingResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	doc := roleBindingAttributeDocs
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		Description: "Grants a role to a user, a service account or an SSO group, globally (admin) or on one group. Any change replaces the binding. Managing bindings needs the admin role. Import it by id.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: doc["id"],
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"role": schema.StringAttribute{Required: true, Description: doc["role"], PlanModifiers: replace,
				Validators: []validator.String{validRole}},
			"group_id": schema.StringAttribute{Optional: true, Description: doc["group_id"], PlanModifiers: replace,
				Validators: []validator.String{idString{of: "group"}}},
			"principal_id": schema.StringAttribute{Optional: true, Description: doc["principal_id"], PlanModifiers: replace,
				Validators: []validator.String{idString{of: "service account"}}},
			"sso_group": schema.StringAttribute{Optional: true, Description: doc["sso_group"], PlanModifiers: replace},
		},
	}
}

// optionalID is the string attribute of an id that may be absent (0).
func optionalID(n int64) types.String {
	if n == 0 {
		return types.StringNull()
	}
	return types.StringValue(formatID(n))
}

func optionalString(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

func roleBindingModelOf(b client.RoleBinding) roleBindingModel {
	return roleBindingModel{
		ID:          types.StringValue(formatID(b.ID)),
		Role:        types.StringValue(b.Role),
		GroupID:     optionalID(b.GroupID),
		PrincipalID: optionalID(b.PrincipalID),
		SSOGroup:    optionalString(b.SSOGroup),
	}
}

func (r *roleBindingResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var plan roleBindingModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	in := client.RoleBindingInput{Role: plan.Role.ValueString(), SSOGroup: plan.SSOGroup.ValueString()}
	var err error
	if !plan.GroupID.IsNull() {
		if in.GroupID, err = parseID(plan.GroupID.ValueString(), "group"); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("group_id"), "Invalid group_id", err.Error())
		}
	}
	if !plan.PrincipalID.IsNull() {
		if in.PrincipalID, err = parseID(plan.PrincipalID.ValueString(), "principal"); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("principal_id"), "Invalid principal_id", err.Error())
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}
	b, err := r.c.CreateRoleBinding(ctx, in)
	if err != nil {
		addAPIError(&resp.Diagnostics, "create role binding "+in.Role, err, roleBindingAttrs)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, roleBindingModelOf(b))...)
}

func (r *roleBindingResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var state roleBindingModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id, err := parseID(state.ID.ValueString(), "role binding")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id in state", err.Error())
		return
	}
	b, err := r.c.GetRoleBinding(ctx, id)
	if client.IsNotFound(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("read role binding %d", id), err, nil)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, roleBindingModelOf(b))...)
}

// Update is never called: every attribute replaces the binding.
func (r *roleBindingResource) Update(_ context.Context, _ resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.Diagnostics.AddError("Role bindings cannot change", "A role binding is replaced, never updated; this is a bug in the provider.")
}

func (r *roleBindingResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var state roleBindingModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id, err := parseID(state.ID.ValueString(), "role binding")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id in state", err.Error())
		return
	}
	if err := r.c.DeleteRoleBinding(ctx, id); err != nil && !client.IsNotFound(err) {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("delete role binding %d", id), err, nil)
	}
}

func (r *roleBindingResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	if _, err := parseID(req.ID, "role binding"); err != nil {
		resp.Diagnostics.AddError("Cannot import role binding "+req.ID, err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
}

package tfprovider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ringjob/ringjob/client"
)

// groupResource is ringjob_group.
type groupResource struct {
	c *client.Client
}

var (
	_ resource.ResourceWithConfigure   = (*groupResource)(nil)
	_ resource.ResourceWithImportState = (*groupResource)(nil)
)

func newGroupResource() resource.Resource { return &groupResource{} }

type groupModel struct {
	ID                  types.String `tfsdk:"id"`
	AppName             types.String `tfsdk:"app_name"`
	Title               types.String `tfsdk:"title"`
	Members             types.List   `tfsdk:"members"`
	ExecutorToken       types.String `tfsdk:"executor_token"`
	ExecutorTokenSet    types.Bool   `tfsdk:"executor_token_set"`
	Protocol            types.String `tfsdk:"protocol"`
	AcceptRegistrations types.Bool   `tfsdk:"accept_registrations"`
}

// groupAttributeDocs describe a group's attributes, for the resource and
// the data source.
var groupAttributeDocs = map[string]string{
	"id":                   "The group's id.",
	"app_name":             "The group's app name: unique, fixed once created (changing it replaces the group), and the name HTTP executors register under (XXL-JOB's appname).",
	"title":                "Title shown in the console.",
	"members":              "Static target URIs of the group, in order: `lambda://REGION/FUNCTION`, a function ARN, `local://NAME`, `http://HOST:PORT/`. Executors that register by heartbeat come in addition.",
	"executor_token":       "The group's own executor token (XXL-JOB-ACCESS-TOKEN), 16..255 letters, digits, `_` and `-`; left out, the server's global executor token applies. The server never shows it back, so Terraform cannot see it changed elsewhere; `executor_token_set` can.",
	"executor_token_set":   "Whether the group has its own executor token.",
	"protocol":             "Executor protocol of the group's HTTP executors: `\"\"` (XXL-JOB 2.x to 3.4, the default) or `\"3.5\"`.",
	"accept_registrations": "Whether HTTP executors may register into the group by heartbeat. The server's default when left out.",
}

func (r *groupResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_group"
}

func (r *groupResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (r *groupResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	doc := groupAttributeDocs
	resp.Schema = schema.Schema{
		Description: "A Ringjob group: a pool of targets jobs run on. Import it by id (`terraform import ringjob_group.x 3`) or by app name (`terraform import ringjob_group.x billing`).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: doc["id"],
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"app_name": schema.StringAttribute{Required: true, Description: doc["app_name"],
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"title": schema.StringAttribute{Optional: true, Computed: true, Description: doc["title"], Default: stringdefault.StaticString("")},
			"members": schema.ListAttribute{Optional: true, Computed: true, ElementType: types.StringType, Description: doc["members"],
				Default: listdefault.StaticValue(emptyStringList())},
			"executor_token":     schema.StringAttribute{Optional: true, Sensitive: true, Description: doc["executor_token"]},
			"executor_token_set": schema.BoolAttribute{Computed: true, Description: doc["executor_token_set"]},
			"protocol": schema.StringAttribute{Optional: true, Computed: true, Description: doc["protocol"], Default: stringdefault.StaticString(""),
				Validators: []validator.String{validProtocol}},
			"accept_registrations": schema.BoolAttribute{Optional: true, Computed: true, Description: doc["accept_registrations"],
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()}},
		},
	}
}

var groupAttrs = attrSet(groupAttributeDocs)

func attrSet(docs map[string]string) map[string]bool {
	m := map[string]bool{}
	for k := range docs {
		m[k] = true
	}
	return m
}

func (m groupModel) input(ctx context.Context, d *diag.Diagnostics) client.GroupInput {
	in := client.GroupInput{
		AppName:       m.AppName.ValueString(),
		Title:         m.Title.ValueString(),
		Members:       stringsOf(ctx, m.Members, d),
		ExecutorToken: m.ExecutorToken.ValueString(),
		Protocol:      m.Protocol.ValueString(),
	}
	if in.Members == nil {
		in.Members = []string{} // PUT replaces the members: send the empty list
	}
	if !m.AcceptRegistrations.IsNull() && !m.AcceptRegistrations.IsUnknown() {
		on := m.AcceptRegistrations.ValueBool()
		in.AcceptRegistrations = &on
	}
	return in
}

// groupModelOf is the model of a group as the server shows it. token is
// the executor token Terraform last set: the server never shows it, so it
// is kept while the server says the group has one, and dropped (so the
// plan sets it again) when the server says it has none.
func groupModelOf(g client.Group, token types.String) groupModel {
	if !g.ExecutorTokenSet {
		token = types.StringNull()
	}
	return groupModel{
		ID:                  types.StringValue(formatID(g.ID)),
		AppName:             types.StringValue(g.AppName),
		Title:               types.StringValue(g.Title),
		Members:             stringList(g.Members),
		ExecutorToken:       token,
		ExecutorTokenSet:    types.BoolValue(g.ExecutorTokenSet),
		Protocol:            types.StringValue(g.Protocol),
		AcceptRegistrations: types.BoolValue(g.AcceptRegistrations),
	}
}

func (r *groupResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var plan groupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	in := plan.input(ctx, &resp.Diagnostics)
	g, err := r.c.CreateGroup(ctx, in)
	if err != nil {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("create group %q", in.AppName), err, groupAttrs)
		return
	}
	store(ctx, &resp.State, resp.Private, groupModelOf(g, plan.ExecutorToken), g.ETag, &resp.Diagnostics)
}

func (r *groupResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var state groupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	gid, err := parseID(state.ID.ValueString(), "group")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id in state", err.Error())
		return
	}
	g, err := r.c.GetGroup(ctx, gid)
	if client.IsNotFound(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("read group %d", gid), err, nil)
		return
	}
	store(ctx, &resp.State, resp.Private, groupModelOf(g, state.ExecutorToken), g.ETag, &resp.Diagnostics)
}

func (r *groupResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var plan, state groupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	gid, err := parseID(state.ID.ValueString(), "group")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id in state", err.Error())
		return
	}
	tag, d := loadETag(ctx, req.Private)
	resp.Diagnostics.Append(d...)
	in := plan.input(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	doing := fmt.Sprintf("update group %s (id %d)", state.AppName.ValueString(), gid)
	g, err := r.c.UpdateGroup(ctx, gid, in, tag)
	if err != nil {
		addAPIError(&resp.Diagnostics, doing, err, groupAttrs)
		return
	}
	// A token left out of a PUT is kept; taking it out of the
	// configuration clears it.
	if plan.ExecutorToken.IsNull() && g.ExecutorTokenSet {
		if g, err = r.c.SetGroupExecutorToken(ctx, gid, "", g.ETag); err != nil {
			addAPIError(&resp.Diagnostics, doing+": clear its executor token", err, groupAttrs)
			return
		}
	}
	store(ctx, &resp.State, resp.Private, groupModelOf(g, plan.ExecutorToken), g.ETag, &resp.Diagnostics)
}

func (r *groupResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var state groupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	gid, err := parseID(state.ID.ValueString(), "group")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id in state", err.Error())
		return
	}
	tag, d := loadETag(ctx, req.Private)
	resp.Diagnostics.Append(d...)
	if err := r.c.DeleteGroup(ctx, gid, tag); err != nil && !client.IsNotFound(err) {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("delete group %s (id %d)", state.AppName.ValueString(), gid), err, nil)
	}
}

// ImportState takes a group's id ("3") or its app name ("billing").
func (r *groupResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	if decimalID.MatchString(req.ID) {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
		return
	}
	g, err := r.c.GetGroupByAppName(ctx, req.ID)
	if err != nil {
		addAPIError(&resp.Diagnostics, "import group "+req.ID, err, nil)
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), formatID(g.ID))...)
}

// store writes a model into the state and keeps the object's ETag for the
// next update's If-Match.
func store(ctx context.Context, st *tfsdk.State, priv privateSetter, model any, etag string, d *diag.Diagnostics) {
	d.Append(st.Set(ctx, model)...)
	d.Append(saveETag(ctx, priv, etag)...)
}

package tfprovider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ringjob/ringjob/client"
)

// groupDataSource is data "ringjob_group": a group found by id or app name.
type groupDataSource struct {
	c *client.Client
}

var _ datasource.DataSourceWithConfigure = (*groupDataSource)(nil)

func newGroupDataSource() datasource.DataSource { return &groupDataSource{} }

type groupDataModel struct {
	ID                  types.String `tfsdk:"id"`
	AppName             types.String `tfsdk:"app_name"`
	Title               types.String `tfsdk:"title"`
	Members             types.List   `tfsdk:"members"`
	ExecutorTokenSet    types.Bool   `tfsdk:"executor_token_set"`
	Protocol            types.String `tfsdk:"protocol"`
	AcceptRegistrations types.Bool   `tfsdk:"accept_registrations"`
}

func (d *groupDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_group"
}

func (d *groupDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.c = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (d *groupDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	doc := groupAttributeDocs
	computed := func(name string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, Description: doc[name]}
	}
	resp.Schema = schema.Schema{
		Description: "Reads a group the configuration does not manage, by `id` or by `app_name` (give one).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Optional: true, Computed: true, Description: doc["id"] + " Give this or app_name.",
				Validators: []validator.String{idString{of: "group"}}},
			"app_name":             schema.StringAttribute{Optional: true, Computed: true, Description: doc["app_name"] + " Give this or id."},
			"title":                computed("title"),
			"members":              schema.ListAttribute{Computed: true, ElementType: types.StringType, Description: doc["members"]},
			"executor_token_set":   schema.BoolAttribute{Computed: true, Description: doc["executor_token_set"]},
			"protocol":             computed("protocol"),
			"accept_registrations": schema.BoolAttribute{Computed: true, Description: doc["accept_registrations"]},
		},
	}
}

func (d *groupDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	if !needClient(d.c, &resp.Diagnostics) {
		return
	}
	var cfg groupDataModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var g client.Group
	var err error
	switch {
	case !cfg.ID.IsNull() && !cfg.AppName.IsNull():
		resp.Diagnostics.AddAttributeError(path.Root("app_name"), "Give id or app_name, not both", "The group is found by one of them.")
		return
	case !cfg.ID.IsNull():
		id, perr := parseID(cfg.ID.ValueString(), "group")
		if perr != nil {
			resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id", perr.Error())
			return
		}
		g, err = d.c.GetGroup(ctx, id)
	case !cfg.AppName.IsNull():
		g, err = d.c.GetGroupByAppName(ctx, cfg.AppName.ValueString())
	default:
		resp.Diagnostics.AddError("Give id or app_name", "data \"ringjob_group\" finds a group by its id or its app name; give one of them.")
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("read group %s", firstSet(cfg.ID, cfg.AppName)), err, nil)
		return
	}
	m := groupModelOf(g, types.StringNull())
	resp.Diagnostics.Append(resp.State.Set(ctx, groupDataModel{ID: m.ID, AppName: m.AppName, Title: m.Title, Members: m.Members,
		ExecutorTokenSet: m.ExecutorTokenSet, Protocol: m.Protocol, AcceptRegistrations: m.AcceptRegistrations})...)
}

func firstSet(vs ...types.String) string {
	for _, v := range vs {
		if !v.IsNull() && !v.IsUnknown() {
			return v.ValueString()
		}
	}
	return ""
}

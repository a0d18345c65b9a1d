package tfprovider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ringjob/ringjob/client"
)

// executorsDataSource is data "ringjob_executors": the HTTP executors
// registered by heartbeat now.
type executorsDataSource struct {
	c *client.Client
}

var _ datasource.DataSourceWithConfigure = (*executorsDataSource)(nil)

func newExecutorsDataSource() datasource.DataSource { return &executorsDataSource{} }

type executorsModel struct {
	GroupID   types.String `tfsdk:"group_id"`
	Executors types.List   `tfsdk:"executors"`
}

var executorsAttributeDocs = map[string]string{
	"group_id":         "Id of the group whose executors to list; left out, every group the provider's token may read.",
	"executors":        "The executors registered now, as the server's registry has them.",
	"app_name":         "App name of the executor's group.",
	"address":          "The executor's address (its base URL).",
	"protocol":         "Executor protocol the executor registered with.",
	"heartbeat_age_ms": "Milliseconds since the executor's last heartbeat.",
	"running":          "Runs running on the executor now.",
	"busy":             "Whether the executor runs something now.",
}

var executorObject = map[string]attr.Type{
	"group_id": types.StringType, "app_name": types.StringType, "address": types.StringType, "protocol": types.StringType,
	"heartbeat_age_ms": types.Int64Type, "running": types.Int64Type, "busy": types.BoolType,
}

func (d *executorsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_executors"
}

func (d *executorsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.c = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (d *executorsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	doc := executorsAttributeDocs
	resp.Schema = schema.Schema{
		Description: "Lists the HTTP executors registered by heartbeat, of one group or of all; for example to check at plan time that a group has executors.",
		Attributes: map[string]schema.Attribute{
			"group_id": schema.StringAttribute{Optional: true, Description: doc["group_id"], Validators: []validator.String{idString{of: "group"}}},
			"executors": schema.ListNestedAttribute{Computed: true, Description: doc["executors"],
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"group_id":         schema.StringAttribute{Computed: true, Description: "Id of the executor's group."},
					"app_name":         schema.StringAttribute{Computed: true, Description: doc["app_name"]},
					"address":          schema.StringAttribute{Computed: true, Description: doc["address"]},
					"protocol":         schema.StringAttribute{Computed: true, Description: doc["protocol"]},
					"heartbeat_age_ms": schema.Int64Attribute{Computed: true, Description: doc["heartbeat_age_ms"]},
					"running":          schema.Int64Attribute{Computed: true, Description: doc["running"]},
					"busy":             schema.BoolAttribute{Computed: true, Description: doc["busy"]},
				}}},
		},
	}
}

func (d *executorsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	if !needClient(d.c, &resp.Diagnostics) {
		return
	}
	var cfg executorsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var gid int64
	if !cfg.GroupID.IsNull() {
		var err error
		if gid, err = parseID(cfg.GroupID.ValueString(), "group"); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("group_id"), "Invalid group_id", err.Error())
			return
		}
	}
	list, err := d.c.ListExecutors(ctx, gid)
	if err != nil {
		addAPIError(&resp.Diagnostics, "list executors", err, nil)
		return
	}
	objs := make([]attr.Value, 0, len(list))
	for _, e := range list {
		o, diags := types.ObjectValue(executorObject, map[string]attr.Value{
			"group_id": types.StringValue(formatID(e.GroupID)), "app_name": types.StringValue(e.AppName),
			"address": types.StringValue(e.Address), "protocol": types.StringValue(e.Protocol),
			"heartbeat_age_ms": types.Int64Value(e.HeartbeatAgeMs), "running": types.Int64Value(int64(e.Running)), "busy": types.BoolValue(e.Busy),
		})
		resp.Diagnostics.Append(diags...)
		objs = append(objs, o)
	}
	l, diags := types.ListValue(types.ObjectType{AttrTypes: executorObject}, objs)
	resp.Diagnostics.Append(diags...)
	cfg.Executors = l
	resp.Diagnostics.Append(resp.State.Set(ctx, cfg)...)
}

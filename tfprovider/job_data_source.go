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

// jobDataSource is data "ringjob_job": a job found by id or by its group's
// app name and its name.
type jobDataSource struct {
	c *client.Client
}

var _ datasource.DataSourceWithConfigure = (*jobDataSource)(nil)

func newJobDataSource() datasource.DataSource { return &jobDataSource{} }

func (d *jobDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_job"
}

func (d *jobDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.c = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (d *jobDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	attrs := map[string]schema.Attribute{}
	for name, doc := range jobAttributeDocs {
		switch name {
		case "pinned_targets", "child_job_ids", "alarm_channels":
			attrs[name] = schema.ListAttribute{Computed: true, ElementType: types.StringType, Description: doc}
		case "timeout_sec", "retry_count", "shard_count", "retry_delay_sec", "retry_max_delay_sec", "max_in_flight":
			attrs[name] = schema.Int64Attribute{Computed: true, Description: doc}
		case "enabled":
			attrs[name] = schema.BoolAttribute{Computed: true, Description: doc}
		default:
			attrs[name] = schema.StringAttribute{Computed: true, Description: doc}
		}
	}
	attrs["id"] = schema.StringAttribute{Optional: true, Computed: true, Description: jobAttributeDocs["id"] + " Give this, or app_name and name.",
		Validators: []validator.String{idString{of: "job"}}}
	attrs["app_name"] = schema.StringAttribute{Optional: true, Computed: true, Description: jobAttributeDocs["app_name"] + " With name, instead of id."}
	attrs["name"] = schema.StringAttribute{Optional: true, Computed: true, Description: jobAttributeDocs["name"] + " With app_name, instead of id."}
	resp.Schema = schema.Schema{
		Description: "Reads a job the configuration does not manage, by `id` or by `app_name` and `name`; for example to name it in a managed job's `child_job_ids`.",
		Attributes:  attrs,
	}
}

func (d *jobDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	if !needClient(d.c, &resp.Diagnostics) {
		return
	}
	var cfg jobModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var j client.Job
	var err error
	what := ""
	switch {
	case !cfg.ID.IsNull() && (!cfg.AppName.IsNull() || !cfg.Name.IsNull()):
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Give id, or app_name and name, not both", "The job is found by its id or by its name.")
		return
	case !cfg.ID.IsNull():
		what = cfg.ID.ValueString()
		id, perr := parseID(what, "job")
		if perr != nil {
			resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id", perr.Error())
			return
		}
		j, err = d.c.GetJob(ctx, id)
	case !cfg.AppName.IsNull() && !cfg.Name.IsNull():
		ref := client.JobRef{AppName: cfg.AppName.ValueString(), Name: cfg.Name.ValueString()}
		what = ref.String()
		j, err = d.c.GetJobByName(ctx, ref)
	default:
		resp.Diagnostics.AddError("Give id, or app_name and name", "data \"ringjob_job\" finds a job by its id, or by its group's app name and its name.")
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "read job "+what, err, nil)
		return
	}
	g, err := d.c.GetGroup(ctx, j.GroupID)
	if err != nil {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("read group %d of job %s", j.GroupID, what), err, nil)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, jobModelOf(j, g.AppName))...)
}

package tfprovider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/schedule"
)

// nextFiresDataSource is data "ringjob_next_fires": the next fire times of
// a schedule, as the server computes them.
type nextFiresDataSource struct {
	c *client.Client
}

var _ datasource.DataSourceWithConfigure = (*nextFiresDataSource)(nil)

func newNextFiresDataSource() datasource.DataSource { return &nextFiresDataSource{} }

type nextFiresModel struct {
	ScheduleType types.String `tfsdk:"schedule_type"`
	ScheduleConf types.String `tfsdk:"schedule_conf"`
	TimeZone     types.String `tfsdk:"time_zone"`
	N            types.Int64  `tfsdk:"n"`
	Times        types.List   `tfsdk:"times"`
	Local        types.List   `tfsdk:"local"`
}

var nextFiresAttributeDocs = map[string]string{
	"schedule_type": "The schedule's type, one of " + validScheduleType.list() + "; `cron` when left out.",
	"schedule_conf": "The schedule, as a job's `schedule_conf` takes it, such as `0 0 2 * * ?`.",
	"time_zone":     "IANA time zone the schedule is read in; the server's default (UTC) when left out.",
	"n":             "How many fire times to compute; the server's default (5) when left out.",
	"times":         "The next fire times after now, in UTC (RFC 3339).",
	"local":         "The same instants in the schedule's time zone.",
}

func (d *nextFiresDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_next_fires"
}

func (d *nextFiresDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.c = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (d *nextFiresDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	doc := nextFiresAttributeDocs
	resp.Schema = schema.Schema{
		Description: "The next fire times of a schedule, computed by the server's own scheduler code: for checks at plan time (a `precondition` that a job fires before a deadline) and outputs. A schedule the server refuses fails the read, naming the attribute.",
		Attributes: map[string]schema.Attribute{
			"schedule_type": schema.StringAttribute{Optional: true, Description: doc["schedule_type"], Validators: []validator.String{validScheduleType}},
			"schedule_conf": schema.StringAttribute{Required: true, Description: doc["schedule_conf"]},
			"time_zone":     schema.StringAttribute{Optional: true, Description: doc["time_zone"]},
			"n":             schema.Int64Attribute{Optional: true, Description: doc["n"], Validators: []validator.Int64{atLeast(1)}},
			"times":         schema.ListAttribute{Computed: true, ElementType: types.StringType, Description: doc["times"]},
			"local":         schema.ListAttribute{Computed: true, ElementType: types.StringType, Description: doc["local"]},
		},
	}
}

func (d *nextFiresDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	if !needClient(d.c, &resp.Diagnostics) {
		return
	}
	var cfg nextFiresModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	st := string(schedule.KindCron)
	if !cfg.ScheduleType.IsNull() {
		st = cfg.ScheduleType.ValueString()
	}
	in := client.PreviewInput{ScheduleType: st, ScheduleConf: cfg.ScheduleConf.ValueString(), TimeZone: cfg.TimeZone.ValueString(), N: int(cfg.N.ValueInt64())}
	nf, err := d.c.PreviewSchedule(ctx, in)
	if err != nil {
		addAPIError(&resp.Diagnostics, "compute the next fire times", err, attrSet(nextFiresAttributeDocs))
		return
	}
	cfg.Times = stringList(nf.Items)
	cfg.Local = stringList(nf.Local)
	resp.Diagnostics.Append(resp.State.Set(ctx, cfg)...)
}

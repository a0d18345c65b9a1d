package tfprovider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/schedule"
)

// jobResource is ringjob_job.
type jobResource struct {
	c *client.Client
}

var (
	_ resource.ResourceWithConfigure   = (*jobResource)(nil)
	_ resource.ResourceWithImportState = (*jobResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*jobResource)(nil)
)

func newJobResource() resource.Resource { return &jobResource{} }

func pathOf(attr string) path.Path { return path.Root(attr) }

func (r *jobResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_job"
}

func (r *jobResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = configuredClient(req.ProviderData, &resp.Diagnostics)
}

// serverDefaultString is for an optional attribute whose default the
// server fills in: a new object's is known after apply, and then the state
// keeps what the server answered.
func serverDefaultString() []planmodifier.String {
	return []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
}

func emptyStringList() types.List { return types.ListValueMust(types.StringType, []attr.Value{}) }

// jobAttributeDocs describe the attributes of a job, for the resource and
// its data source alike (the docs test checks every one is documented).
var jobAttributeDocs = map[string]string{
	"id":                  "The job's id.",
	"group_id":            "Id of the group (target pool) the job runs on, such as `ringjob_group.billing.id`. Changing it moves the job to that group.",
	"app_name":            "App name of the job's group; with `name` it identifies the job (`app_name/name`, as `ringjob job` and imports write it).",
	"name":                "The job's name, unique within its group. Changing it renames the job in place.",
	"description":         "Free text shown in the console.",
	"schedule_type":       "How the job fires: " + validScheduleType.list() + " (`none`: only by hand, by API or as a child job). Defaults to `none`.",
	"schedule_conf":       "The schedule for `schedule_type`: a cron expression with seconds (`0 0 2 * * ?`), a number of seconds for `fixed_rate`, an RFC 3339 instant for `at`; empty for `none`. Checked by the server while planning.",
	"time_zone":           "IANA time zone the schedule is read in, such as `Europe/Berlin`. The server's default (UTC) when left out.",
	"misfire_policy":      "What happens to a fire missed by more than the pre-read window: " + validMisfirePolicy.list() + ". The server's default when left out.",
	"handler":             "The handler an HTTP executor runs (its XXL-JOB job handler name); unused by functions and local commands.",
	"params":              "Parameters passed to every run.",
	"route_strategy":      "How a run picks a target among the group's candidates: " + validRouteStrategy.list() + ". The server's default when left out.",
	"block_strategy":      "What a target does with a run that arrives while an earlier run of the job still runs there: " + validBlockStrategy.list() + ". The server's default when left out.",
	"timeout_sec":         "Seconds a run may take before it is timed out; 0 = no timeout.",
	"retry_count":         "How many times a failed run is retried.",
	"shard_count":         "Shards a function or local target runs per fire (index 0..N-1 of N); an HTTP group with `sharding` shards over its live executors. The server's default (1) when left out.",
	"pinned_targets":      "Target URIs the job's runs are restricted to, among its group's candidates; empty = all of them.",
	"retry_backoff":       "How the wait between retries grows: " + validRetryBackoff.list() + ". The server's default when left out.",
	"retry_delay_sec":     "Seconds before the first retry (and between retries, for `fixed`).",
	"retry_max_delay_sec": "Upper bound of the wait between retries, for `exponential`; 0 = no bound.",
	"child_job_ids":       "Ids of the jobs that run when a run of this job succeeds, such as `[ringjob_job.load.id]`. A job named here cannot be destroyed while this job names it.",
	"max_in_flight":       "How many runs of the job may be in flight at once (across shards); 0 = no limit.",
	"alarm_channels":      "Names of the server's alarm channels that hear of the job's failures and recoveries.",
	"enabled":             "Whether the job fires on its schedule. Defaults to false; a job with `schedule_type = \"none\"` cannot be enabled.",
}

func (r *jobResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	doc := jobAttributeDocs
	str := func(name string, v ...validator.String) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Computed: true, Description: doc[name], PlanModifiers: serverDefaultString(), Validators: v}
	}
	emptyStr := func(name string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Computed: true, Description: doc[name], Default: stringdefault.StaticString("")}
	}
	zeroInt := func(name string) schema.Int64Attribute {
		return schema.Int64Attribute{Optional: true, Computed: true, Description: doc[name], Default: int64default.StaticInt64(0),
			Validators: []validator.Int64{atLeast(0)}}
	}
	list := func(name string) schema.ListAttribute {
		return schema.ListAttribute{Optional: true, Computed: true, ElementType: types.StringType, Description: doc[name],
			Default: listdefault.StaticValue(emptyStringList())}
	}
	resp.Schema = schema.Schema{
		Description: "A Ringjob job: what runs, on which group, when. Import it by id (`terraform import ringjob_job.x 12`) or by name (`terraform import ringjob_job.x billing/close`).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: doc["id"],
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"group_id":    schema.StringAttribute{Required: true, Description: doc["group_id"], Validators: []validator.String{idString{of: "group"}}},
			"app_name":    schema.StringAttribute{Computed: true, Description: doc["app_name"]},
			"name":        schema.StringAttribute{Required: true, Description: doc["name"]},
			"description": emptyStr("description"),
			"schedule_type": schema.StringAttribute{Optional: true, Computed: true, Description: doc["schedule_type"],
				Default: stringdefault.StaticString(string(schedule.KindNone)), Validators: []validator.String{validScheduleType}},
			"schedule_conf":  emptyStr("schedule_conf"),
			"time_zone":      str("time_zone"),
			"misfire_policy": str("misfire_policy", validMisfirePolicy),
			"handler":        emptyStr("handler"),
			"params":         emptyStr("params"),
			"route_strategy": str("route_strategy", validRouteStrategy),
			"block_strategy": str("block_strategy", validBlockStrategy),
			"timeout_sec":    zeroInt("timeout_sec"),
			"retry_count":    zeroInt("retry_count"),
			"shard_count": schema.Int64Attribute{Optional: true, Computed: true, Description: doc["shard_count"],
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()}, Validators: []validator.Int64{atLeast(1)}},
			"pinned_targets":      list("pinned_targets"),
			"retry_backoff":       str("retry_backoff", validRetryBackoff),
			"retry_delay_sec":     zeroInt("retry_delay_sec"),
			"retry_max_delay_sec": zeroInt("retry_max_delay_sec"),
			"child_job_ids": schema.ListAttribute{Optional: true, Computed: true, ElementType: types.StringType, Description: doc["child_job_ids"],
				Default: listdefault.StaticValue(emptyStringList())},
			"max_in_flight":  zeroInt("max_in_flight"),
			"alarm_channels": list("alarm_channels"),
			"enabled":        schema.BoolAttribute{Optional: true, Computed: true, Description: doc["enabled"], Default: booldefault.StaticBool(false)},
		},
	}
}

// ModifyPlan checks the planned schedule with the server (the same parser
// that will refuse it at apply), and marks app_name unknown when the job
// moves to another group.
func (r *jobResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() { // destroy
		return
	}
	var plan jobModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !req.State.Raw.IsNull() {
		var state jobModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		if !plan.GroupID.Equal(state.GroupID) {
			plan.AppName = types.StringUnknown()
		} else {
			plan.AppName = state.AppName
		}
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("app_name"), plan.AppName)...)
		if plan.ScheduleType.Equal(state.ScheduleType) && plan.ScheduleConf.Equal(state.ScheduleConf) && plan.TimeZone.Equal(state.TimeZone) {
			return // the server has this schedule already: nothing to check
		}
	}
	if r.c == nil || plan.ScheduleType.IsUnknown() || plan.ScheduleConf.IsUnknown() {
		return // not configured yet, or known only at apply: the server checks it then
	}
	var cfgTZ types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("time_zone"), &cfgTZ)...)
	if cfgTZ.IsUnknown() {
		return
	}
	tz := "" // left out of a new job: the server's default zone
	if !plan.TimeZone.IsUnknown() {
		tz = plan.TimeZone.ValueString()
	}
	checkSchedule(ctx, r.c, plan.ScheduleType.ValueString(), plan.ScheduleConf.ValueString(), tz, &resp.Diagnostics)
}

func (r *jobResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var plan jobModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	in := plan.input(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	j, err := r.c.CreateJob(ctx, in)
	if err != nil {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("create job %q", in.Name), err, jobAttrs)
		return
	}
	r.store(ctx, j, &resp.State, resp.Private, &resp.Diagnostics)
}

func (r *jobResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var state jobModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	jid, err := parseID(state.ID.ValueString(), "job")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id in state", err.Error())
		return
	}
	j, err := r.c.GetJob(ctx, jid)
	if client.IsNotFound(err) {
		resp.State.RemoveResource(ctx) // deleted outside Terraform: plan creates it again
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("read job %d", jid), err, nil)
		return
	}
	r.store(ctx, j, &resp.State, resp.Private, &resp.Diagnostics)
}

func (r *jobResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var plan, state jobModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	jid, err := parseID(state.ID.ValueString(), "job")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id in state", err.Error())
		return
	}
	in := plan.input(ctx, &resp.Diagnostics)
	tag, d := loadETag(ctx, req.Private)
	resp.Diagnostics.Append(d...)
	if resp.Diagnostics.HasError() {
		return
	}
	j, err := r.c.UpdateJobByID(ctx, jid, in, tag)
	if err != nil {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("update job %s/%s (id %d)", state.AppName.ValueString(), state.Name.ValueString(), jid), err, jobAttrs)
		return
	}
	r.store(ctx, j, &resp.State, resp.Private, &resp.Diagnostics)
}

func (r *jobResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var state jobModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	jid, err := parseID(state.ID.ValueString(), "job")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id in state", err.Error())
		return
	}
	tag, d := loadETag(ctx, req.Private)
	resp.Diagnostics.Append(d...)
	err = r.c.DeleteJobByID(ctx, jid, tag)
	if err != nil && !client.IsNotFound(err) {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("delete job %s/%s (id %d)", state.AppName.ValueString(), state.Name.ValueString(), jid), err, nil)
	}
}

// ImportState takes a job's id ("12") or its name ("billing/close").
func (r *jobResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	jid, err := r.resolveImport(ctx, req.ID)
	if err != nil {
		resp.Diagnostics.AddError("Cannot import job "+req.ID, err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), formatID(jid))...)
}

func (r *jobResource) resolveImport(ctx context.Context, id string) (int64, error) {
	if decimalID.MatchString(id) {
		return parseID(id, "job")
	}
	ref, err := client.ParseJobRef(id)
	if err != nil {
		return 0, fmt.Errorf("give the job's id (12) or its group's app name and its name (billing/close): %w", err)
	}
	j, err := r.c.GetJobByName(ctx, ref)
	if err != nil {
		return 0, err
	}
	return j.ID, nil
}

// store writes the job as the server answered it into the state, with its
// group's app name, and keeps its ETag.
func (r *jobResource) store(ctx context.Context, j client.Job, st *tfsdk.State, priv privateSetter, d *diag.Diagnostics) {
	g, err := r.c.GetGroup(ctx, j.GroupID)
	if err != nil {
		addAPIError(d, fmt.Sprintf("read group %d of job %d", j.GroupID, j.ID), err, nil)
		return
	}
	d.Append(st.Set(ctx, jobModelOf(j, g.AppName))...)
	d.Append(saveETag(ctx, priv, j.ETag)...)
}

// jobAttrs are the attribute names a server error may name.
var jobAttrs = func() map[string]bool {
	m := map[string]bool{}
	for k := range jobAttributeDocs {
		m[k] = true
	}
	return m
}()

package tfprovider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/schedule"
)

// workflowResource is ringjob_workflow.
type workflowResource struct {
	c *client.Client
}

var (
	_ resource.ResourceWithConfigure   = (*workflowResource)(nil)
	_ resource.ResourceWithImportState = (*workflowResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*workflowResource)(nil)
)

func newWorkflowResource() resource.Resource { return &workflowResource{} }

func (r *workflowResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_workflow"
}

func (r *workflowResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = configuredClient(req.ProviderData, &resp.Diagnostics)
}

var validStartRule = oneOfKind(kind.StartRules...)

// workflowAttributeDocs describe the attributes of a workflow (the docs
// test checks every one is documented); nested ones are "nodes.NAME".
var workflowAttributeDocs = map[string]string{
	"id":                "The workflow's id.",
	"group_id":          "Id of the group the workflow belongs to, such as `ringjob_group.etl.id`; who may operate the group may run the workflow.",
	"app_name":          "App name of the workflow's group; with `name` it identifies the workflow (`app_name/name`).",
	"name":              "The workflow's name, unique within its group.",
	"description":       "Free text shown in the console.",
	"nodes":             "The steps: each runs a job, once its start rule is met by the outcomes of its parents (`edges`). At least one.",
	"nodes.name":        "The node's name in the workflow (edges and templates use it): 1 to 64 of a-z, 0-9, `_` and `-`.",
	"nodes.job_id":      "Id of the job the node runs (any target kind), such as `ringjob_job.extract.id`.",
	"nodes.params":      "Params for the node's run instead of the job's; may use templates: `{{ input.KEY }}`, `{{ nodes.NAME.output }}`, `{{ item }}`. Left out: the job's own params.",
	"nodes.retries":     "How many more attempts the node gets after a failure (the job's own retry count does not apply inside a workflow).",
	"nodes.timeout_sec": "Seconds an attempt may run before it fails and its runs are asked to stop; 0 = no node timeout (the job's own timeout still bounds its run).",
	"nodes.start_rule":  "When the node starts: " + validStartRule.list() + ". Defaults to `all_succeeded`.",
	"nodes.shards":      "Runs the node as this many runs of its job (shard index 0..N-1), joined before its children start; 0 = one run.",
	"nodes.for_each":    "A template giving a JSON array (`{{ input.KEY }}` or `{{ nodes.NAME.output }}`): the node runs once per item, reading it as `{{ item }}`.",
	"edges":             "Parent-to-child links between nodes: `to` starts when its start rule is met by its parents' outcomes. A cycle is refused, naming it.",
	"edges.from":        "The parent node's name.",
	"edges.to":          "The child node's name.",
	"timeout_sec":       "Seconds a workflow run may take before it ends `timed_out` (its running nodes are stopped); 0 = none.",
	"schedule_type":     "How the workflow starts by itself: " + validScheduleType.list() + " (`none`: only by hand or by API). Defaults to `none`.",
	"schedule_conf":     "The schedule for `schedule_type`, as a job's: a cron expression with seconds, a number of seconds for `fixed_rate`, an RFC 3339 instant for `at`; empty for `none`. Checked by the server while planning.",
	"time_zone":         "IANA time zone the schedule is read in. The server's default (UTC) when left out.",
	"misfire_policy":    "What happens to a start missed by more than the pre-read window: " + validMisfirePolicy.list() + ". The server's default when left out.",
	"block_strategy":    "What a new run does while another run of the workflow is going on: " + validBlockStrategy.list() + ". The server's default when left out.",
	"active_from":       "An RFC 3339 instant (`2027-01-01T00:00:00Z`) before which the schedule starts nothing; empty = open. The server writes it in UTC, so give it in UTC to keep plans empty.",
	"active_until":      "An RFC 3339 instant after which the schedule starts nothing and ends; empty = open.",
	"enabled":           "Whether the workflow starts on its schedule. Defaults to false.",
}

func (r *workflowResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	doc := workflowAttributeDocs
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
	resp.Schema = schema.Schema{
		Description: "A Ringjob workflow: a DAG of jobs (docs/workflows.md). Import it by id (`terraform import ringjob_workflow.x 3`) or by name (`terraform import ringjob_workflow.x etl/nightly`).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: doc["id"],
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"group_id":    schema.StringAttribute{Required: true, Description: doc["group_id"], Validators: []validator.String{idString{of: "group"}}},
			"app_name":    schema.StringAttribute{Computed: true, Description: doc["app_name"]},
			"name":        schema.StringAttribute{Required: true, Description: doc["name"]},
			"description": emptyStr("description"),
			"nodes": schema.ListNestedAttribute{Required: true, Description: doc["nodes"],
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":        schema.StringAttribute{Required: true, Description: doc["nodes.name"]},
					"job_id":      schema.StringAttribute{Required: true, Description: doc["nodes.job_id"], Validators: []validator.String{idString{of: "job"}}},
					"params":      schema.StringAttribute{Optional: true, Description: doc["nodes.params"]},
					"retries":     zeroInt("nodes.retries"),
					"timeout_sec": zeroInt("nodes.timeout_sec"),
					"start_rule": schema.StringAttribute{Optional: true, Computed: true, Description: doc["nodes.start_rule"],
						Default: stringdefault.StaticString(string(kind.StartAllSucceeded)), Validators: []validator.String{validStartRule}},
					"shards":   zeroInt("nodes.shards"),
					"for_each": emptyStr("nodes.for_each"),
				}}},
			"edges": schema.ListNestedAttribute{Optional: true, Computed: true, Description: doc["edges"],
				Default: listdefault.StaticValue(types.ListValueMust(workflowEdgeType, []attr.Value{})),
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"from": schema.StringAttribute{Required: true, Description: doc["edges.from"]},
					"to":   schema.StringAttribute{Required: true, Description: doc["edges.to"]},
				}}},
			"timeout_sec": zeroInt("timeout_sec"),
			"schedule_type": schema.StringAttribute{Optional: true, Computed: true, Description: doc["schedule_type"],
				Default: stringdefault.StaticString(string(schedule.KindNone)), Validators: []validator.String{validScheduleType}},
			"schedule_conf":  emptyStr("schedule_conf"),
			"time_zone":      str("time_zone"),
			"misfire_policy": str("misfire_policy", validMisfirePolicy),
			"block_strategy": str("block_strategy", validBlockStrategy),
			"active_from":    emptyStr("active_from"),
			"active_until":   emptyStr("active_until"),
			"enabled":        schema.BoolAttribute{Optional: true, Computed: true, Description: doc["enabled"], Default: booldefault.StaticBool(false)},
		},
	}
}

// ModifyPlan checks a changed schedule with the server, as for jobs, and
// marks app_name unknown when the workflow moves to another group.
func (r *workflowResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() { // destroy
		return
	}
	var plan workflowModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !req.State.Raw.IsNull() {
		var state workflowModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		if !plan.GroupID.Equal(state.GroupID) {
			plan.AppName = types.StringUnknown()
		} else {
			plan.AppName = state.AppName
		}
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("app_name"), plan.AppName)...)
		if plan.ScheduleType.Equal(state.ScheduleType) && plan.ScheduleConf.Equal(state.ScheduleConf) && plan.TimeZone.Equal(state.TimeZone) {
			return
		}
	}
	if r.c == nil || plan.ScheduleType.IsUnknown() || plan.ScheduleConf.IsUnknown() || plan.TimeZone.IsUnknown() {
		return // known only at apply: the server checks it then
	}
	checkSchedule(ctx, r.c, plan.ScheduleType.ValueString(), plan.ScheduleConf.ValueString(), plan.TimeZone.ValueString(), &resp.Diagnostics)
}

func (r *workflowResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var plan workflowModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	in := plan.input(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	w, err := r.c.CreateWorkflow(ctx, in)
	if err != nil {
		addWorkflowError(&resp.Diagnostics, fmt.Sprintf("create workflow %q", in.Name), err)
		return
	}
	r.store(ctx, w, &resp.State, resp.Private, &resp.Diagnostics)
}

func (r *workflowResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var state workflowModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	wid, err := parseID(state.ID.ValueString(), "workflow")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id in state", err.Error())
		return
	}
	w, err := r.c.GetWorkflow(ctx, wid)
	if client.IsNotFound(err) {
		resp.State.RemoveResource(ctx) // deleted outside Terraform: plan creates it again
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("read workflow %d", wid), err, nil)
		return
	}
	r.store(ctx, w, &resp.State, resp.Private, &resp.Diagnostics)
}

// Update sends the version last read, so that an edit made elsewhere since
// is refused (412) rather than overwritten.
func (r *workflowResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var plan, state workflowModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	wid, err := parseID(state.ID.ValueString(), "workflow")
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
	in.Version, _ = strconv.ParseInt(tag, 10, 64) // none saved: unconditional
	w, err := r.c.UpdateWorkflow(ctx, wid, in)
	if err != nil {
		addWorkflowError(&resp.Diagnostics, fmt.Sprintf("update workflow %s/%s (id %d)", state.AppName.ValueString(), state.Name.ValueString(), wid), err)
		return
	}
	r.store(ctx, w, &resp.State, resp.Private, &resp.Diagnostics)
}

func (r *workflowResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	var state workflowModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	wid, err := parseID(state.ID.ValueString(), "workflow")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid id in state", err.Error())
		return
	}
	if err := r.c.DeleteWorkflow(ctx, wid); err != nil && !client.IsNotFound(err) {
		addAPIError(&resp.Diagnostics, fmt.Sprintf("delete workflow %s/%s (id %d)", state.AppName.ValueString(), state.Name.ValueString(), wid), err, nil)
	}
}

// ImportState takes a workflow's id ("3") or its name ("etl/nightly").
func (r *workflowResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if !needClient(r.c, &resp.Diagnostics) {
		return
	}
	wid, err := r.resolveImport(ctx, req.ID)
	if err != nil {
		resp.Diagnostics.AddError("Cannot import workflow "+req.ID, err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), formatID(wid))...)
}

func (r *workflowResource) resolveImport(ctx context.Context, id string) (int64, error) {
	if decimalID.MatchString(id) {
		return parseID(id, "workflow")
	}
	ref, err := client.ParseJobRef(id) // the same APP/NAME form
	if err != nil {
		return 0, fmt.Errorf("give the workflow's id (3) or its group's app name and its name (etl/nightly): %w", err)
	}
	w, err := r.c.GetWorkflowByName(ctx, ref)
	if err != nil {
		return 0, err
	}
	return w.ID, nil
}

// store writes the workflow as the server answered it into the state, with
// its group's app name, and keeps its version for the next update.
func (r *workflowResource) store(ctx context.Context, w client.Workflow, st *tfsdk.State, priv privateSetter, d *diag.Diagnostics) {
	g, err := r.c.GetGroup(ctx, w.GroupID)
	if err != nil {
		addAPIError(d, fmt.Sprintf("read group %d of workflow %d", w.GroupID, w.ID), err, nil)
		return
	}
	m, diags := workflowModelOf(w, g.AppName)
	d.Append(diags...)
	d.Append(st.Set(ctx, m)...)
	d.Append(saveETag(ctx, priv, strconv.FormatInt(w.Version, 10))...)
}

// definitionField is a server error's field inside the definition:
// "nodes[1].job_id", "edges[0]" (with or without "definition.").
var definitionField = regexp.MustCompile(`^(?:definition\.)?(nodes|edges)\[(\d+)\](?:\.([a-z_]+))?$`)

// addWorkflowError is addAPIError that also puts an error on a node's or
// an edge's attribute at the line of the configuration at fault.
func addWorkflowError(d *diag.Diagnostics, doing string, err error) {
	var e *client.Error
	if errors.As(err, &e) {
		if m := definitionField.FindStringSubmatch(e.Field); m != nil {
			i, _ := strconv.Atoi(m[2])
			p := path.Root(m[1]).AtListIndex(i)
			if m[3] != "" {
				p = p.AtName(m[3])
			}
			d.AddAttributeError(p, "Cannot "+doing, e.Message)
			return
		}
	}
	addAPIError(d, doing, err, workflowAttrs)
}

// workflowAttrs are the top-level attribute names a server error may name.
var workflowAttrs = func() map[string]bool {
	m := map[string]bool{}
	for k := range workflowAttributeDocs {
		m[k] = true
	}
	return m
}()

package tfprovider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/internal/kind"
)

// workflowModel is a workflow in Terraform's terms: its definition as two
// lists of objects, nodes and edges, ids as strings.
type workflowModel struct {
	ID            types.String `tfsdk:"id"`
	GroupID       types.String `tfsdk:"group_id"`
	AppName       types.String `tfsdk:"app_name"`
	Name          types.String `tfsdk:"name"`
	Description   types.String `tfsdk:"description"`
	Nodes         types.List   `tfsdk:"nodes"`
	Edges         types.List   `tfsdk:"edges"`
	TimeoutSec    types.Int64  `tfsdk:"timeout_sec"`
	ScheduleType  types.String `tfsdk:"schedule_type"`
	ScheduleConf  types.String `tfsdk:"schedule_conf"`
	TimeZone      types.String `tfsdk:"time_zone"`
	MisfirePolicy types.String `tfsdk:"misfire_policy"`
	BlockStrategy types.String `tfsdk:"block_strategy"`
	ActiveFrom    types.String `tfsdk:"active_from"`
	ActiveUntil   types.String `tfsdk:"active_until"`
	Enabled       types.Bool   `tfsdk:"enabled"`
}

// workflowNodeModel is one element of nodes.
type workflowNodeModel struct {
	Name       types.String `tfsdk:"name"`
	JobID      types.String `tfsdk:"job_id"`
	Params     types.String `tfsdk:"params"`
	Retries    types.Int64  `tfsdk:"retries"`
	TimeoutSec types.Int64  `tfsdk:"timeout_sec"`
	StartRule  types.String `tfsdk:"start_rule"`
	Shards     types.Int64  `tfsdk:"shards"`
	ForEach    types.String `tfsdk:"for_each"`
}

// workflowEdgeModel is one element of edges.
type workflowEdgeModel struct {
	From types.String `tfsdk:"from"`
	To   types.String `tfsdk:"to"`
}

var (
	workflowNodeType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"name": types.StringType, "job_id": types.StringType, "params": types.StringType, "retries": types.Int64Type,
		"timeout_sec": types.Int64Type, "start_rule": types.StringType, "shards": types.Int64Type, "for_each": types.StringType,
	}}
	workflowEdgeType = types.ObjectType{AttrTypes: map[string]attr.Type{"from": types.StringType, "to": types.StringType}}
)

// input is the PUT/POST body of the model (a plan being applied).
func (m workflowModel) input(ctx context.Context, d *diag.Diagnostics) client.WorkflowInput {
	gid, err := parseID(m.GroupID.ValueString(), "group")
	if err != nil {
		d.AddAttributeError(pathOf("group_id"), "Invalid group_id", err.Error())
	}
	in := client.WorkflowInput{GroupID: gid, Name: m.Name.ValueString(), Description: m.Description.ValueString(),
		TimeoutSec: int(m.TimeoutSec.ValueInt64()), ScheduleType: m.ScheduleType.ValueString(), ScheduleConf: m.ScheduleConf.ValueString(),
		TimeZone: m.TimeZone.ValueString(), MisfirePolicy: m.MisfirePolicy.ValueString(), BlockStrategy: m.BlockStrategy.ValueString(),
		ActiveFrom: m.ActiveFrom.ValueString(), ActiveUntil: m.ActiveUntil.ValueString()}
	if !m.Enabled.IsNull() && !m.Enabled.IsUnknown() {
		on := m.Enabled.ValueBool()
		in.Enabled = &on
	}
	var nodes []workflowNodeModel
	d.Append(m.Nodes.ElementsAs(ctx, &nodes, false)...)
	for i, n := range nodes {
		jid, err := parseID(n.JobID.ValueString(), "job")
		if err != nil {
			d.AddAttributeError(pathOf("nodes").AtListIndex(i).AtName("job_id"), "Invalid job_id", err.Error())
		}
		node := client.WorkflowNode{Name: n.Name.ValueString(), JobID: jid, Retries: int(n.Retries.ValueInt64()),
			TimeoutSec: int(n.TimeoutSec.ValueInt64()), StartRule: kind.StartRule(n.StartRule.ValueString()),
			Shards: int(n.Shards.ValueInt64()), ForEach: n.ForEach.ValueString()}
		if !n.Params.IsNull() && !n.Params.IsUnknown() {
			p := n.Params.ValueString()
			node.Params = &p
		}
		in.Definition.Nodes = append(in.Definition.Nodes, node)
	}
	if !m.Edges.IsNull() && !m.Edges.IsUnknown() {
		var edges []workflowEdgeModel
		d.Append(m.Edges.ElementsAs(ctx, &edges, false)...)
		for _, e := range edges {
			in.Definition.Edges = append(in.Definition.Edges, client.WorkflowEdge{From: e.From.ValueString(), To: e.To.ValueString()})
		}
	}
	return in
}

// workflowModelOf is the model of a workflow as the server shows it;
// appName is its group's. A node's start rule the server keeps empty is
// the default, all_succeeded.
func workflowModelOf(w client.Workflow, appName string) (workflowModel, diag.Diagnostics) {
	var diags diag.Diagnostics
	nodes := make([]attr.Value, len(w.Definition.Nodes))
	for i, n := range w.Definition.Nodes {
		params := types.StringNull()
		if n.Params != nil {
			params = types.StringValue(*n.Params)
		}
		v, d := types.ObjectValueFrom(context.Background(), workflowNodeType.AttrTypes, workflowNodeModel{
			Name: types.StringValue(n.Name), JobID: types.StringValue(formatID(n.JobID)), Params: params,
			Retries: types.Int64Value(int64(n.Retries)), TimeoutSec: types.Int64Value(int64(n.TimeoutSec)),
			StartRule: types.StringValue(string(n.Rule())), Shards: types.Int64Value(int64(n.Shards)), ForEach: types.StringValue(n.ForEach),
		})
		diags.Append(d...)
		nodes[i] = v
	}
	edges := make([]attr.Value, len(w.Definition.Edges))
	for i, e := range w.Definition.Edges {
		v, d := types.ObjectValueFrom(context.Background(), workflowEdgeType.AttrTypes, workflowEdgeModel{From: types.StringValue(e.From), To: types.StringValue(e.To)})
		diags.Append(d...)
		edges[i] = v
	}
	nl, d := types.ListValue(workflowNodeType, nodes)
	diags.Append(d...)
	el, d := types.ListValue(workflowEdgeType, edges)
	diags.Append(d...)
	return workflowModel{
		ID:            types.StringValue(formatID(w.ID)),
		GroupID:       types.StringValue(formatID(w.GroupID)),
		AppName:       types.StringValue(appName),
		Name:          types.StringValue(w.Name),
		Description:   types.StringValue(w.Description),
		Nodes:         nl,
		Edges:         el,
		TimeoutSec:    types.Int64Value(int64(w.TimeoutSec)),
		ScheduleType:  types.StringValue(w.ScheduleType),
		ScheduleConf:  types.StringValue(w.ScheduleConf),
		TimeZone:      types.StringValue(w.TimeZone),
		MisfirePolicy: types.StringValue(w.MisfirePolicy),
		BlockStrategy: types.StringValue(w.BlockStrategy),
		ActiveFrom:    types.StringValue(w.ActiveFrom),
		ActiveUntil:   types.StringValue(w.ActiveUntil),
		Enabled:       types.BoolValue(w.Enabled),
	}, diags
}

package tfprovider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ringjob/ringjob/client"
)

// jobModel is a job in Terraform's terms: ids are strings, lists are
// never null (the server's empty list and a left-out one are the same).
type jobModel struct {
	ID               types.String `tfsdk:"id"`
	GroupID          types.String `tfsdk:"group_id"`
	AppName          types.String `tfsdk:"app_name"`
	Name             types.String `tfsdk:"name"`
	Description      types.String `tfsdk:"description"`
	ScheduleType     types.String `tfsdk:"schedule_type"`
	ScheduleConf     types.String `tfsdk:"schedule_conf"`
	TimeZone         types.String `tfsdk:"time_zone"`
	MisfirePolicy    types.String `tfsdk:"misfire_policy"`
	Handler          types.String `tfsdk:"handler"`
	Params           types.String `tfsdk:"params"`
	RouteStrategy    types.String `tfsdk:"route_strategy"`
	BlockStrategy    types.String `tfsdk:"block_strategy"`
	TimeoutSec       types.Int64  `tfsdk:"timeout_sec"`
	RetryCount       types.Int64  `tfsdk:"retry_count"`
	ShardCount       types.Int64  `tfsdk:"shard_count"`
	PinnedTargets    types.List   `tfsdk:"pinned_targets"`
	RetryBackoff     types.String `tfsdk:"retry_backoff"`
	RetryDelaySec    types.Int64  `tfsdk:"retry_delay_sec"`
	RetryMaxDelaySec types.Int64  `tfsdk:"retry_max_delay_sec"`
	ChildJobIDs      types.List   `tfsdk:"child_job_ids"`
	MaxInFlight      types.Int64  `tfsdk:"max_in_flight"`
	AlarmChannels    types.List   `tfsdk:"alarm_channels"`
	Enabled          types.Bool   `tfsdk:"enabled"`
}

// input is the PUT/POST body of the model (every value known: it is a
// plan being applied).
func (m jobModel) input(ctx context.Context, d *diag.Diagnostics) client.JobInput {
	gid, err := parseID(m.GroupID.ValueString(), "group")
	if err != nil {
		d.AddAttributeError(pathOf("group_id"), "Invalid group_id", err.Error())
	}
	in := client.JobInput{GroupID: gid, Name: m.Name.ValueString()}
	in.Description = m.Description.ValueString()
	in.ScheduleType = m.ScheduleType.ValueString()
	in.ScheduleConf = m.ScheduleConf.ValueString()
	in.TimeZone = m.TimeZone.ValueString()
	in.MisfirePolicy = m.MisfirePolicy.ValueString()
	in.Handler = m.Handler.ValueString()
	in.Params = m.Params.ValueString()
	in.RouteStrategy = m.RouteStrategy.ValueString()
	in.BlockStrategy = m.BlockStrategy.ValueString()
	in.TimeoutSec = int(m.TimeoutSec.ValueInt64())
	in.RetryCount = int(m.RetryCount.ValueInt64())
	in.ShardCount = int(m.ShardCount.ValueInt64())
	in.PinnedTargets = stringsOf(ctx, m.PinnedTargets, d)
	in.RetryBackoff = m.RetryBackoff.ValueString()
	in.RetryDelaySec = int(m.RetryDelaySec.ValueInt64())
	in.RetryMaxDelaySec = int(m.RetryMaxDelaySec.ValueInt64())
	for i, s := range stringsOf(ctx, m.ChildJobIDs, d) {
		cid, err := parseID(s, "job")
		if err != nil {
			d.AddAttributeError(pathOf("child_job_ids").AtListIndex(i), "Invalid child job id", err.Error())
			continue
		}
		in.ChildJobIDs = append(in.ChildJobIDs, cid)
	}
	in.MaxInFlight = int(m.MaxInFlight.ValueInt64())
	in.AlarmChannels = stringsOf(ctx, m.AlarmChannels, d)
	if !m.Enabled.IsNull() && !m.Enabled.IsUnknown() {
		on := m.Enabled.ValueBool()
		in.Enabled = &on
	}
	return in
}

// jobModelOf is the model of a job as the server shows it; appName is its
// group's.
func jobModelOf(j client.Job, appName string) jobModel {
	children := make([]string, len(j.ChildJobIDs))
	for i, c := range j.ChildJobIDs {
		children[i] = formatID(c)
	}
	return jobModel{
		ID:               types.StringValue(formatID(j.ID)),
		GroupID:          types.StringValue(formatID(j.GroupID)),
		AppName:          types.StringValue(appName),
		Name:             types.StringValue(j.Name),
		Description:      types.StringValue(j.Description),
		ScheduleType:     types.StringValue(j.ScheduleType),
		ScheduleConf:     types.StringValue(j.ScheduleConf),
		TimeZone:         types.StringValue(j.TimeZone),
		MisfirePolicy:    types.StringValue(j.MisfirePolicy),
		Handler:          types.StringValue(j.Handler),
		Params:           types.StringValue(j.Params),
		RouteStrategy:    types.StringValue(j.RouteStrategy),
		BlockStrategy:    types.StringValue(j.BlockStrategy),
		TimeoutSec:       types.Int64Value(int64(j.TimeoutSec)),
		RetryCount:       types.Int64Value(int64(j.RetryCount)),
		ShardCount:       types.Int64Value(int64(j.ShardCount)),
		PinnedTargets:    stringList(j.PinnedTargets),
		RetryBackoff:     types.StringValue(j.RetryBackoff),
		RetryDelaySec:    types.Int64Value(int64(j.RetryDelaySec)),
		RetryMaxDelaySec: types.Int64Value(int64(j.RetryMaxDelaySec)),
		ChildJobIDs:      stringList(children),
		MaxInFlight:      types.Int64Value(int64(j.MaxInFlight)),
		AlarmChannels:    stringList(j.AlarmChannels),
		Enabled:          types.BoolValue(j.Enabled),
	}
}

// stringList is a list value of ss; nil is the empty list.
func stringList(ss []string) types.List {
	vs := make([]attr.Value, len(ss))
	for i, s := range ss {
		vs[i] = types.StringValue(s)
	}
	return types.ListValueMust(types.StringType, vs)
}

// stringsOf reads a list of strings (null and unknown: none).
func stringsOf(ctx context.Context, l types.List, d *diag.Diagnostics) []string {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var out []string
	d.Append(l.ElementsAs(ctx, &out, false)...)
	return out
}

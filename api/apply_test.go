package api_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/client"
)

// declaration is a small jobs-as-code state: a new group with a chain of
// two jobs, and a job in an existing group.
func declaration() client.ApplyInput {
	return client.ApplyInput{
		Groups: []client.ApplyGroup{{AppName: "billing", Title: "Billing", Members: []string{"local://echo"}}},
		Jobs: []client.ApplyJob{
			{Group: "billing", Name: "close-books", JobFields: client.JobFields{ScheduleType: "cron", ScheduleConf: "0 0 2 * * ?", TimeZone: "Europe/Berlin",
				Handler: "close", Params: `{"shards":100}`, RouteStrategy: "FAILOVER", RetryCount: 2, RetryBackoff: "exponential",
				RetryDelaySec: 10, RetryMaxDelaySec: 300}, Children: []string{"notify"}, Enabled: true},
			{Group: "billing", Name: "notify", JobFields: client.JobFields{Description: "tell finance"}},
			{Group: "reports", Name: "weekly", JobFields: client.JobFields{ScheduleType: "fixed_rate", ScheduleConf: "3600"}, Children: []string{"billing/notify"}},
		},
	}
}

func changesOf(p client.Plan) map[string]string {
	out := map[string]string{}
	for _, c := range p.Changes {
		out[c.Kind+" "+c.Ref()] = c.Op
	}
	return out
}

func TestApplyPlansAndAppliesInOneGo(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{noSched: true})
			ctx := context.Background()
			cl := client.New(b.url, b.token, nil)
			b.group("reports", "local://echo")
			in := declaration()

			plan, err := cl.PlanApply(ctx, in)
			require.NoError(t, err)
			require.Equal(t, map[string]string{"group billing": "create", "job billing/close-books": "create", "job billing/notify": "create",
				"job reports/weekly": "create"}, changesOf(plan))
			require.False(t, plan.Applied)
			require.Equal(t, [3]int{1, 0, 0}, b.counts(), "a plan writes nothing")

			in.Expect = plan.Changes
			got, err := cl.Apply(ctx, in)
			require.NoError(t, err)
			require.True(t, got.Applied)
			require.Equal(t, map[string]int{"create": 4, "update": 0, "delete": 0, "unchanged": 0}, got.Summary)
			close, err := cl.GetJobByName(ctx, client.JobRef{AppName: "billing", Name: "close-books"})
			require.NoError(t, err)
			notify, err := cl.GetJobByName(ctx, client.JobRef{AppName: "billing", Name: "notify"})
			require.NoError(t, err)
			weekly, err := cl.GetJobByName(ctx, client.JobRef{AppName: "reports", Name: "weekly"})
			require.NoError(t, err)
			require.Equal(t, []int64{notify.ID}, close.ChildJobIDs, "children are linked by name")
			require.Equal(t, []int64{notify.ID}, weekly.ChildJobIDs)
			require.True(t, close.Enabled)
			require.NotNil(t, close.NextFireAt, "an enabled job gets its first fire")
			require.Equal(t, "failover", close.RouteStrategy)
			require.False(t, notify.Enabled)
			audit := b.must(200, "GET", "/api/v1/audit?action=job.create", nil)
			require.Len(t, audit["items"], 3, "one audit event per created job")

			t.Run("re-applying the same declaration changes nothing", func(t *testing.T) {
				again, err := cl.PlanApply(ctx, declaration())
				require.NoError(t, err)
				require.False(t, again.Changed(), "%+v", again.Changes)
				require.Equal(t, 4, again.Summary["unchanged"])
			})

			t.Run("an edit is an update of that field only", func(t *testing.T) {
				in := declaration()
				in.Jobs[1].Description = "tell finance and ops"
				p, err := cl.PlanApply(ctx, in)
				require.NoError(t, err)
				require.Equal(t, "update", changesOf(p)["job billing/notify"])
				for _, c := range p.Changes {
					if c.Op == "update" {
						require.Equal(t, map[string]client.FieldChange{"description": {Before: "tell finance", After: "tell finance and ops"}}, c.Diff)
					}
				}
				in.Expect = p.Changes
				_, err = cl.Apply(ctx, in)
				require.NoError(t, err)
				n, err := cl.GetJobByName(ctx, client.JobRef{AppName: "billing", Name: "notify"})
				require.NoError(t, err)
				require.Equal(t, "tell finance and ops", n.Description)
				require.Equal(t, notify.ID, n.ID, "an update keeps the job's id")
			})

			t.Run("prune deletes only with prune", func(t *testing.T) {
				b.job(map[string]any{"group_id": weekly.GroupID, "name": "made-by-hand"})
				in := declaration()
				in.Jobs[1].Description = "tell finance and ops"
				p, err := cl.PlanApply(ctx, in)
				require.NoError(t, err)
				require.False(t, p.Changed(), "without prune a job made by hand stays")
				in.Prune = true
				p, err = cl.PlanApply(ctx, in)
				require.NoError(t, err)
				require.Equal(t, map[string]int{"create": 0, "update": 0, "delete": 1, "unchanged": 4}, p.Summary)
				require.Equal(t, "delete", changesOf(p)["job reports/made-by-hand"])
				in.Expect = p.Changes
				_, err = cl.Apply(ctx, in)
				require.NoError(t, err)
				_, err = cl.GetJobByName(ctx, client.JobRef{AppName: "reports", Name: "made-by-hand"})
				require.True(t, client.IsNotFound(err))
			})
		})
	}
}

func TestApplyRefusesAPlanThatChanged(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{noSched: true})
			ctx := context.Background()
			cl := client.New(b.url, b.token, nil)
			b.group("reports", "local://echo")
			_, err := cl.Apply(ctx, declaration())
			require.NoError(t, err)

			in := declaration()
			in.Jobs[0].Params = `{"shards":200}`
			in.Jobs = append(in.Jobs, client.ApplyJob{Group: "billing", Name: "brand-new"})
			plan, err := cl.PlanApply(ctx, in)
			require.NoError(t, err)
			// Someone edits a job of the plan in between.
			_, err = cl.PatchJob(ctx, client.JobRef{AppName: "billing", Name: "close-books"}, map[string]any{"handler": "by-hand"}, "")
			require.NoError(t, err)
			before := b.counts()

			in.Expect = plan.Changes
			_, err = cl.Apply(ctx, in)
			var ae *client.Error
			require.True(t, errors.As(err, &ae), "%v", err)
			require.Equal(t, 409, ae.Status)
			require.Equal(t, "changed_since_plan", ae.Code)
			require.Equal(t, []string{"billing/close-books"}, ae.Objects)
			require.Contains(t, ae.Message, "changed since plan: billing/close-books")

			require.Equal(t, before, b.counts(), "nothing of the plan landed (brand-new was not created)")
			j, err := cl.GetJobByName(ctx, client.JobRef{AppName: "billing", Name: "close-books"})
			require.NoError(t, err)
			require.Equal(t, "by-hand", j.Handler)
			require.Equal(t, `{"shards":100}`, j.Params)

			t.Run("a job created in between", func(t *testing.T) {
				in := declaration()
				in.Jobs = append(in.Jobs, client.ApplyJob{Group: "billing", Name: "late"})
				plan, err := cl.PlanApply(ctx, in)
				require.NoError(t, err)
				b.job(map[string]any{"group_id": j.GroupID, "name": "late"})
				in.Expect = plan.Changes
				_, err = cl.Apply(ctx, in)
				require.True(t, errors.As(err, &ae), "%v", err)
				require.Equal(t, "changed_since_plan", ae.Code)
				require.Contains(t, ae.Objects, "billing/late")
			})
		})
	}
}

func TestApplyReportsEveryProblemAndChangesNothing(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{noSched: true})
			ctx := context.Background()
			cl := client.New(b.url, b.token, nil)
			b.group("reports", "local://echo")
			in := declaration()
			in.Jobs[0].ScheduleConf = "0 0 25 * * ?"
			in.Jobs[1].Children = []string{"billing/ghost"}
			in.Jobs = append(in.Jobs,
				client.ApplyJob{Group: "nowhere", Name: "orphan"},
				client.ApplyJob{Group: "reports", Name: "weekly"},
				client.ApplyJob{Group: "reports", Name: "manual", Enabled: true},
			)
			before := b.counts()
			_, err := cl.Apply(ctx, in)
			var ae *client.Error
			require.True(t, errors.As(err, &ae), "%v", err)
			require.Equal(t, 400, ae.Status)
			got := map[string]string{}
			for _, p := range ae.Problems {
				got[fmt.Sprintf("%s %s/%s", p.Kind, p.Group, p.Name)] = p.Field
			}
			require.Equal(t, map[string]string{
				"job billing/close-books": "schedule_conf",
				"job billing/notify":      "children[0]",
				"group nowhere/":          "app_name",
				"job reports/weekly":      "name",
				"job reports/manual":      "enabled",
			}, got, "%+v", ae.Problems)
			require.Equal(t, before, b.counts(), "nothing applied")

			t.Run("a cycle of children", func(t *testing.T) {
				in := client.ApplyInput{Jobs: []client.ApplyJob{
					{Group: "reports", Name: "a", Children: []string{"b"}},
					{Group: "reports", Name: "b", Children: []string{"reports/a"}},
				}}
				_, err := cl.Apply(ctx, in)
				require.True(t, errors.As(err, &ae), "%v", err)
				require.Len(t, ae.Problems, 1)
				require.Equal(t, "children", ae.Problems[0].Field)
				require.Contains(t, ae.Problems[0].Message, "cycle")
				require.Equal(t, before, b.counts())
			})
		})
	}
}

func TestApplyChecksPermissionsBeforeAnyChange(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{noSched: true})
	ctx := context.Background()
	mine := b.group("mine", "local://echo")
	b.group("theirs", "local://echo")
	sa := b.must(201, "POST", "/api/v1/service-accounts", map[string]any{"name": "deployer"})
	b.must(201, "POST", "/api/v1/role-bindings", map[string]any{"role": "owner", "group_id": mine, "principal_id": id(sa)})
	tok := b.must(201, "POST", "/api/v1/tokens", map[string]any{"name": "ci", "principal_id": id(sa)})
	cl := client.New(b.url, tok["token"].(string), nil)

	own := client.ApplyInput{Jobs: []client.ApplyJob{{Group: "mine", Name: "ok"}}}
	_, err := cl.Apply(ctx, own)
	require.NoError(t, err, "an owner applies to its own group")

	both := client.ApplyInput{Jobs: []client.ApplyJob{{Group: "mine", Name: "ok2"}, {Group: "theirs", Name: "nope"}}}
	before := b.counts()
	_, err = cl.Apply(ctx, both)
	var ae *client.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, 400, ae.Status, "a group it cannot read is answered as one that does not exist")
	require.Contains(t, ae.Message, `group "theirs" does not exist or is not visible to you`)
	require.Equal(t, before, b.counts(), "the job in its own group was not created either")
	_, err = cl.Apply(ctx, client.ApplyInput{Jobs: []client.ApplyJob{{Group: "mine", Name: "ok2"}, {Group: "nosuch", Name: "nope"}}})
	var absent *client.Error
	require.True(t, errors.As(err, &absent), "%v", err)
	require.Equal(t, strings.Replace(ae.Message, "theirs", "nosuch", -1), absent.Message, "the same answer as for a group that does not exist")

	_, err = cl.Apply(ctx, client.ApplyInput{Groups: []client.ApplyGroup{{AppName: "newgroup"}}})
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, 403, ae.Status, "creating a group needs groups.create")

	viewer := b.must(201, "POST", "/api/v1/service-accounts", map[string]any{"name": "ci-reader"})
	b.must(201, "POST", "/api/v1/role-bindings", map[string]any{"role": "viewer", "group_id": mine, "principal_id": id(viewer)})
	vtok := b.must(201, "POST", "/api/v1/tokens", map[string]any{"name": "ci", "principal_id": id(viewer)})
	vc := client.New(b.url, vtok["token"].(string), nil)
	p, err := vc.PlanApply(ctx, own)
	require.NoError(t, err, "a viewer may plan (a drift check in CI)")
	require.False(t, p.Changed())
	_, err = vc.Apply(ctx, client.ApplyInput{Jobs: []client.ApplyJob{{Group: "mine", Name: "ok", JobFields: client.JobFields{Description: "x"}}}})
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, 403, ae.Status, "but not apply")
}

func TestApplyTakesLargeDeclarationsCompressed(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{noSched: true, bodyLimit: 16 << 10})
	ctx := context.Background()
	cl := client.New(b.url, b.token, nil)
	in := client.ApplyInput{Groups: []client.ApplyGroup{{AppName: "bulk", Members: []string{"local://echo"}}}}
	for i := range 200 {
		in.Jobs = append(in.Jobs, client.ApplyJob{Group: "bulk", Name: fmt.Sprintf("job-%04d", i), JobFields: client.JobFields{ScheduleType: "cron",
			ScheduleConf: fmt.Sprintf("0 %d * * * ?", i%60), Description: "a job declared in bulk"}, Enabled: true})
	}
	p, err := cl.Apply(ctx, in)
	require.NoError(t, err, "about 28 KB of JSON, over the 16 KB body limit, compressed under it; log: %s", b.logs.String())
	require.Equal(t, 201, p.Summary["create"], "the group and 200 jobs")
	require.Equal(t, [3]int{1, 200, 0}, b.counts())

	r := b.call("POST", "/api/v1/plan", in)
	require.Equal(t, 413, r.Status, "uncompressed, the same declaration is over the limit")
}

// TestApplyPinnedTargetsInGroup: a declared job may pin only targets of its
// group, as the plan leaves the group.
func TestApplyPinnedTargetsInGroup(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{noSched: true})
	b.group("pins", "local://echo")
	decl := func(pin string, members ...string) map[string]any {
		d := map[string]any{"jobs": []map[string]any{{"group": "pins", "name": "pinned", "pinned_targets": []string{pin}}}}
		if members != nil {
			d["groups"] = []map[string]any{{"app_name": "pins", "members": members}}
		}
		return d
	}
	for _, path := range []string{"/api/v1/plan", "/api/v1/apply"} {
		r := b.call("POST", path, decl("local://sleep"))
		require.Equal(t, 400, r.Status, "%s: %s", path, r.Body)
		ps := r.JSON(t)["error"].(map[string]any)["problems"].([]any)
		require.Equal(t, "pinned_targets[0]", ps[0].(map[string]any)["field"], "%s", r.Body)
	}
	require.Equal(t, [3]int{1, 0, 0}, b.counts(), "nothing was created")
	b.must(200, "POST", "/api/v1/plan", decl("local://echo"))
	b.must(200, "POST", "/api/v1/plan", decl("local://sleep", "local://echo", "local://sleep"))
}

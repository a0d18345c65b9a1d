package integration_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/executor"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/workflow"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
)

func strp(s string) *string { return &s }

// waitWorkflow waits (real time) until the workflow run has ended.
func (s *server) waitWorkflow(id int64) (store.WorkflowRun, map[string]store.NodeRun) {
	s.t.Helper()
	var r store.WorkflowRun
	var nodes []store.NodeRun
	require.Eventually(s.t, func() bool {
		var err error
		r, nodes, err = s.svc.GetWorkflowRun(context.Background(), id)
		return err == nil && r.State.Final()
	}, 40*time.Second, 20*time.Millisecond, "workflow run %d never ended", id)
	cur := map[string]store.NodeRun{}
	for _, n := range nodes {
		if !n.Superseded {
			cur[n.Node] = n
		}
	}
	return r, cur
}

// A workflow across the three target kinds: an SDK executor's handler
// (its output set by the handler), a Lambda function (its response
// payload), a local command (its last stdout line); outputs and input
// params flow into later nodes' params; the fan-in node waits for both
// parents; the failure branch is skipped.
func TestWorkflowAcrossTargetKinds(t *testing.T) {
	eachServer(t, func(t *testing.T, dialect string) {
		s := startServer(t, dialect)
		withLambda(t, s)
		ctx := context.Background()
		exG := s.group("wf-exec")
		e := startExecutor(t, s, "wf-exec")
		e.Register("extract", func(ctx context.Context, job *executor.Job) error {
			job.Log("extracting for %s", job.Params)
			job.SetOutput("rows=42 day=" + job.Params)
			return nil
		})
		exJob := s.routedJob(exG, "extract", "first", 1)
		fnJob := s.routedJob(s.groupWith("wf-fn", "lambda://us-east-1/hello"), "", "first", 1)
		localG := s.groupWith("wf-local", "local://echo-params")
		reportJob := s.routedJob(localG, "", "first", 1)
		alertG := s.groupWith("wf-alert", "local://env")
		alertJob := s.routedJob(alertG, "", "first", 1)

		w, err := s.svc.CreateWorkflow(ctx, service.WorkflowSpec{GroupID: localG.ID, Name: "etl", Definition: workflow.Definition{
			Nodes: []workflow.Node{
				{Name: "extract", JobID: exJob.ID, Params: strp("{{ input.day }}")},
				{Name: "greet", JobID: fnJob.ID, Params: strp("{{ nodes.extract.output }}")},
				{Name: "report", JobID: reportJob.ID, Params: strp("{{ nodes.greet.output }}|{{ nodes.extract.output }}")},
				{Name: "alert", JobID: alertJob.ID, StartRule: kind.StartAnyFailed},
			},
			Edges: []workflow.Edge{{From: "extract", To: "greet"}, {From: "greet", To: "report"}, {From: "extract", To: "report"}, {From: "report", To: "alert"}},
		}}, false)
		require.NoError(t, err)
		run, created, err := s.svc.TriggerWorkflow(ctx, w.ID, map[string]json.RawMessage{"day": json.RawMessage(`"mon"`)}, "nightly-mon")
		require.NoError(t, err)
		require.True(t, created)
		again, created, err := s.svc.TriggerWorkflow(ctx, w.ID, nil, "nightly-mon")
		require.NoError(t, err)
		require.False(t, created, "the Idempotency-Key finds the earlier run")
		require.Equal(t, run.ID, again.ID)

		got, nodes := s.waitWorkflow(run.ID)
		require.Equal(t, kind.WorkflowSucceeded, got.State, got.Message)
		require.Equal(t, "rows=42 day=mon", nodes["extract"].Output, "the SDK handler's output")
		require.Contains(t, nodes["greet"].Output, `"greeting":"Hello, rows=42 day=mon!"`, "the Lambda response payload")
		require.True(t, strings.HasSuffix(nodes["report"].Output, "|rows=42 day=mon"), nodes["report"].Output)
		require.Contains(t, nodes["report"].Output, "Hello, rows=42 day=mon!", "the local command's last stdout line, from both parents' outputs")
		require.Equal(t, kind.NodeSkipped, nodes["alert"].State)
		for _, n := range []string{"extract", "greet", "report"} {
			r, err := s.st.RunGet(ctx, nodes[n].RunID)
			require.NoError(t, err)
			require.Equal(t, kind.RunSucceeded, r.State)
			require.Equal(t, kind.TriggerWorkflow, r.TriggerType)
		}
		require.GreaterOrEqual(t, nodes["report"].StartedMs, nodes["greet"].FinishedMs, "the fan-in waited for both parents")
	})
}

// A failing local command retried by its node, then taken by a failure
// branch on the SDK executor; a running local process stopped by a cancel.
func TestWorkflowRetryFailureBranchAndCancelOnRealTargets(t *testing.T) {
	eachServer(t, func(t *testing.T, dialect string) {
		s := startServer(t, dialect)
		ctx := context.Background()
		exG := s.group("wf-exec2")
		startExecutor(t, s, "wf-exec2")
		failJob := s.routedJob(s.groupWith("wf-exit", "local://exit"), "", "first", 1)
		helloJob := s.routedJob(exG, "hello", "first", 1)
		sleepG := s.groupWith("wf-sleep", "local://sleep30")
		sleepJob := s.routedJob(sleepG, "", "first", 1)

		w, err := s.svc.CreateWorkflow(ctx, service.WorkflowSpec{GroupID: sleepG.ID, Name: "branches", Definition: workflow.Definition{
			Nodes: []workflow.Node{
				{Name: "load", JobID: failJob.ID, Params: strp("3"), Retries: 1},
				{Name: "publish", JobID: helloJob.ID},
				{Name: "on-failure", JobID: helloJob.ID, Params: strp("load failed"), StartRule: kind.StartAnyFailed},
			},
			Edges: []workflow.Edge{{From: "load", To: "publish"}, {From: "load", To: "on-failure"}},
		}}, false)
		require.NoError(t, err)
		run, _, err := s.svc.TriggerWorkflow(ctx, w.ID, nil, "")
		require.NoError(t, err)
		got, nodes := s.waitWorkflow(run.ID)
		require.Equal(t, kind.WorkflowSucceeded, got.State, "the failure branch took load's failure: %s", got.Message)
		require.Equal(t, kind.NodeFailed, nodes["load"].State)
		require.Equal(t, 2, nodes["load"].Attempt, "one retry")
		require.Contains(t, nodes["load"].Message, "exit status 3")
		require.Equal(t, kind.NodeSkipped, nodes["publish"].State)
		require.Equal(t, kind.NodeSucceeded, nodes["on-failure"].State)

		long, err := s.svc.CreateWorkflow(ctx, service.WorkflowSpec{GroupID: sleepG.ID, Name: "long", Definition: workflow.Definition{
			Nodes: []workflow.Node{{Name: "nap", JobID: sleepJob.ID}}}}, false)
		require.NoError(t, err)
		run, _, err = s.svc.TriggerWorkflow(ctx, long.ID, nil, "")
		require.NoError(t, err)
		var napRun int64
		require.Eventually(t, func() bool {
			_, ns, err := s.svc.GetWorkflowRun(ctx, run.ID)
			if err != nil || len(ns) == 0 || ns[0].RunID == 0 {
				return false
			}
			napRun = ns[0].RunID
			r, err := s.st.RunGet(ctx, napRun)
			return err == nil && r.State == kind.RunRunning
		}, 20*time.Second, 20*time.Millisecond)
		_, err = s.svc.CancelWorkflowRun(ctx, run.ID)
		require.NoError(t, err)
		got, nodes = s.waitWorkflow(run.ID)
		require.Equal(t, kind.WorkflowCancelled, got.State)
		require.Equal(t, kind.NodeCancelled, nodes["nap"].State)
		r := s.waitState(napRun, kind.RunKilled)
		require.Less(t, r.FinishedMs-r.DispatchedMs, int64(20_000), "the process was stopped, not waited for")
	})
}

// A workflow's active window through the service: the first start is the
// first schedule time in the window, the window is shown as given, and bad
// bounds are refused naming the field, changing nothing.
func TestWorkflowActiveWindowIsChecked(t *testing.T) {
	eachServer(t, func(t *testing.T, dialect string) {
		s := startServer(t, dialect)
		ctx := context.Background()
		g := s.groupWith("windowed", "local://env")
		j := s.job2(service.JobSpec{GroupID: g.ID, Name: "tick"})
		def := workflow.Definition{Nodes: []workflow.Node{{Name: "tick", JobID: j.ID}}}
		from := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Hour)
		w, err := s.svc.CreateWorkflow(ctx, service.WorkflowSpec{GroupID: g.ID, Name: "later", Definition: def, ScheduleType: "cron", ScheduleConf: "0 0 * * * ?",
			ActiveFrom: from.Format(time.RFC3339), ActiveUntil: from.Add(3 * time.Hour).Format(time.RFC3339)}, true)
		require.NoError(t, err)
		require.Equal(t, from.UnixMilli(), w.NextFireMs, "the first start is the window's first hour, not the next hour from now")
		require.Equal(t, from.UnixMilli(), w.ActiveFromMs)

		for _, bad := range []struct{ from, until, field string }{
			{"tomorrow", "", "active_from"},
			{from.Format(time.RFC3339), from.Add(-time.Hour).Format(time.RFC3339), "active_until"},
		} {
			_, err := s.svc.CreateWorkflow(ctx, service.WorkflowSpec{GroupID: g.ID, Name: "bad", Definition: def, ScheduleType: "cron", ScheduleConf: "0 0 * * * ?",
				ActiveFrom: bad.from, ActiveUntil: bad.until}, true)
			var ve *service.ValidationError
			require.ErrorAs(t, err, &ve, "from %q until %q", bad.from, bad.until)
			require.Equal(t, bad.field, ve.Field)
		}
		ws, err := s.svc.ListWorkflows(ctx, service.WorkflowListParams{GroupID: g.ID, Limit: 10})
		require.NoError(t, err)
		require.Len(t, ws.Items, 1, "the refused workflows were not stored")
	})
}

// A job that a workflow's node runs is not deleted: the refusal names the
// workflow; once the workflow lets go of it, the delete goes through.
func TestJobRunByAWorkflowIsNotDeleted(t *testing.T) {
	eachServer(t, func(t *testing.T, dialect string) {
		s := startServer(t, dialect)
		ctx := context.Background()
		g := s.groupWith("wf-refs", "local://env")
		keep := s.job2(service.JobSpec{GroupID: g.ID, Name: "keep"})
		used := s.job2(service.JobSpec{GroupID: g.ID, Name: "used"})
		other := s.job2(service.JobSpec{GroupID: g.ID, Name: "used-not"})
		w, err := s.svc.CreateWorkflow(ctx, service.WorkflowSpec{GroupID: g.ID, Name: "uses-it", Definition: workflow.Definition{
			Nodes: []workflow.Node{{Name: "a", JobID: keep.ID}, {Name: "b", JobID: used.ID}}}}, false)
		require.NoError(t, err)

		err = s.svc.DeleteJob(ctx, used.ID)
		var ce *service.ConflictError
		require.ErrorAs(t, err, &ce)
		require.Contains(t, ce.Message, "wf-refs/uses-it (workflow")
		_, err = s.svc.GetJob(ctx, used.ID)
		require.NoError(t, err, "the refused delete deleted nothing")
		require.NoError(t, s.svc.DeleteJob(ctx, other.ID), "a job no workflow runs is deleted")

		_, err = s.svc.UpdateWorkflow(ctx, w.ID, service.WorkflowSpec{GroupID: g.ID, Name: "uses-it", Definition: workflow.Definition{
			Nodes: []workflow.Node{{Name: "a", JobID: keep.ID}}}}, nil, 0)
		require.NoError(t, err)
		require.NoError(t, s.svc.DeleteJob(ctx, used.ID), "once no workflow runs it, it is deleted")
	})
}

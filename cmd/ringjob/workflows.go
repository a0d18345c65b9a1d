package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/internal/kind"
)

func (a *app) newWorkflowsCommand() *cobra.Command {
	wf := groupCommand("workflows", "Create, trigger and follow workflows (DAGs of jobs)")
	wf.Aliases = []string{"workflow", "wf"}
	addClientFlags(wf)
	wf.AddCommand(a.newWorkflowsListCommand(), a.newWorkflowsGetCommand(), a.newWorkflowsSaveCommand("create"), a.newWorkflowsSaveCommand("update"),
		a.newWorkflowsDeleteCommand(), a.newWorkflowsTriggerCommand(), a.newWorkflowsRunsCommand(), a.newWorkflowsRunCommand(),
		a.newWorkflowsRunActionCommand("cancel"), a.newWorkflowsRunActionCommand("retry"), a.newWorkflowsRunActionCommand("mark-succeeded"))
	return wf
}

// workflowID resolves a workflow named by its id or by GROUP/NAME (its
// group's app name and its name).
func workflowID(ctx context.Context, c *client.Client, arg string) (int64, error) {
	if id, err := strconv.ParseInt(arg, 10, 64); err == nil && id > 0 {
		return id, nil
	}
	ref, err := client.ParseJobRef(arg)
	if err != nil {
		return 0, usageErrorf("%q: name a workflow by its id or as GROUP/NAME", arg)
	}
	w, err := c.GetWorkflowByName(ctx, ref)
	if err != nil {
		return 0, fmt.Errorf("find workflow %s: %w", arg, err)
	}
	return w.ID, nil
}

// workflowArg is the API client and the workflow a command names.
func (a *app) workflowArg(cmd *cobra.Command, arg string) (*client.Client, int64, error) {
	c, err := a.apiClient(cmd)
	if err != nil {
		return nil, 0, err
	}
	id, err := workflowID(cmd.Context(), c, arg)
	return c, id, err
}

func parseID(arg, what string) (int64, error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id <= 0 {
		return 0, usageErrorf("%q: a %s is named by its id (a number)", arg, what)
	}
	return id, nil
}

func workflowsTable(ws []client.Workflow) *table {
	t := &table{header: []string{"ID", "GROUP", "NAME", "NODES", "SCHEDULE", "ENABLED", "NEXT FIRE"}}
	for _, w := range ws {
		sched := w.ScheduleType
		if w.ScheduleConf != "" {
			sched += " " + w.ScheduleConf
		}
		t.add(w.ID, w.GroupID, w.Name, len(w.Definition.Nodes), sched, w.Enabled, w.NextFireAt)
	}
	return t
}

func workflowRunsTable(rs []client.WorkflowRun) *table {
	t := &table{header: []string{"ID", "WORKFLOW", "STATE", "TRIGGER", "CREATED", "FINISHED", "MESSAGE"}}
	for _, r := range rs {
		msg := r.Message
		if len(msg) > 60 {
			msg = msg[:57] + "..."
		}
		t.add(r.ID, r.WorkflowID, r.State, r.TriggerType, r.CreatedAt, r.FinishedAt, msg)
	}
	return t
}

// nodesTable lists the current attempt of each node of a run.
func nodesTable(r client.WorkflowRun) *table {
	t := &table{header: []string{"NODE", "ATTEMPT", "STATE", "RUN", "OUTPUT", "MESSAGE"}}
	for _, n := range r.Nodes {
		if !n.Current {
			continue
		}
		out, msg := n.Output, n.Message
		if len(out) > 30 {
			out = out[:27] + "..."
		}
		if len(msg) > 50 {
			msg = msg[:47] + "..."
		}
		t.add(n.Node, n.Attempt, n.State, n.RunID, out, msg)
	}
	return t
}

func (a *app) newWorkflowsListCommand() *cobra.Command {
	var out outputFormat
	var group string
	var limit int
	cmd := &cobra.Command{
		Use:   "list [--group GROUP]",
		Short: "List workflows",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			filters := map[string]string{}
			if group != "" {
				g, err := resolveGroup(ctx, c, group)
				if err != nil {
					return err
				}
				filters["group_id"] = strconv.FormatInt(g.ID, 10)
			}
			p, err := c.ListWorkflows(ctx, client.ListOptions{Limit: limit, Filters: filters})
			if err != nil {
				return fmt.Errorf("list workflows: %w", err)
			}
			if p.Items == nil {
				p.Items = []client.Workflow{}
			}
			return printObjects(a.stdout, out, p.Items, func() *table { return workflowsTable(p.Items) })
		},
	}
	cmd.Flags().StringVar(&group, "group", "", "only the workflows of this group (app name or id)")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many workflows")
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newWorkflowsGetCommand() *cobra.Command {
	var out outputFormat
	cmd := &cobra.Command{
		Use:   "get WORKFLOW",
		Short: "Show a workflow with its definition",
		Args:  exactArgs(1, "one workflow: its id or GROUP/NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := a.workflowArg(cmd, args[0])
			if err != nil {
				return err
			}
			w, err := c.GetWorkflow(cmd.Context(), id)
			if err != nil {
				return fmt.Errorf("workflow %d: %w", id, err)
			}
			if out == "" || out == "table" {
				out = "yaml" // the definition does not fit a table
			}
			return printObjects(a.stdout, out, w, nil)
		},
	}
	addOutputFlag(cmd, &out)
	return cmd
}

// readWorkflowFile reads a workflow's fields from a YAML or JSON file (the
// fields of POST /api/v1/workflows). Names may stand for ids, as in jobs as
// code: `group: APP_NAME` for group_id, and a node's `job: GROUP/NAME` for
// its job_id; they are looked up through the API.
func readWorkflowFile(ctx context.Context, c *client.Client, path string) (client.WorkflowInput, error) {
	var in client.WorkflowInput
	raw, err := os.ReadFile(path)
	if err != nil {
		return in, usageErrorf("read %s: %v", path, err)
	}
	var doc any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return in, usageErrorf("%s: %v", path, err)
	}
	if err := resolveWorkflowNames(ctx, c, path, doc); err != nil {
		return in, err
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return in, usageErrorf("%s: %v", path, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(js)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, usageErrorf("%s: %v", path, err)
	}
	return in, nil
}

// resolveWorkflowNames replaces, in a decoded workflow file, `group` by
// group_id and each node's `job` by job_id. A name that is not found is an
// error naming the field; giving both a name and its id is one too.
func resolveWorkflowNames(ctx context.Context, c *client.Client, path string, doc any) error {
	top, ok := doc.(map[string]any)
	if !ok {
		return nil // the strict decode says what is wrong
	}
	if g, ok := top["group"].(string); ok {
		if _, both := top["group_id"]; both {
			return usageErrorf("%s: give group or group_id, not both", path)
		}
		grp, err := c.GetGroupByAppName(ctx, g)
		if err != nil {
			return fmt.Errorf("%s: group %q: %w", path, g, err)
		}
		top["group_id"] = grp.ID
		delete(top, "group")
	}
	def, _ := top["definition"].(map[string]any)
	nodes, _ := def["nodes"].([]any)
	for i, n := range nodes {
		node, ok := n.(map[string]any)
		if !ok {
			continue
		}
		name, ok := node["job"].(string)
		if !ok {
			continue
		}
		if _, both := node["job_id"]; both {
			return usageErrorf("%s: definition.nodes[%d]: give job or job_id, not both", path, i)
		}
		ref, err := client.ParseJobRef(name)
		if err != nil {
			return usageErrorf("%s: definition.nodes[%d].job: %v", path, i, err)
		}
		j, err := c.GetJobByName(ctx, ref)
		if err != nil {
			return fmt.Errorf("%s: definition.nodes[%d].job %s: %w", path, i, name, err)
		}
		node["job_id"] = j.ID
		delete(node, "job")
	}
	return nil
}

func (a *app) newWorkflowsSaveCommand(verb string) *cobra.Command {
	var out outputFormat
	var file string
	use, short, args := "create -f FILE", "Create a workflow from a YAML or JSON file", exactArgs(0, "no arguments (the workflow is in --file)")
	if verb == "update" {
		use, short, args = "update WORKFLOW -f FILE", "Replace a workflow's fields from a YAML or JSON file", exactArgs(1, "one workflow: its id or GROUP/NAME")
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `. The file holds the fields of POST /api/v1/workflows:
group_id (or group: its app name), name, description, definition (nodes:
name, job_id (or job: GROUP/NAME), params, retries, timeout_sec,
start_rule, shards, for_each; edges: from, to), timeout_sec,
schedule_type, schedule_conf, time_zone, misfire_policy, block_strategy,
active_from, active_until, enabled. See docs/workflows.md.`,
		Args: args,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usageErrorf("--file is required")
			}
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			in, err := readWorkflowFile(cmd.Context(), c, file)
			if err != nil {
				return err
			}
			var w client.Workflow
			if verb == "update" {
				id, err := workflowID(cmd.Context(), c, args[0])
				if err != nil {
					return err
				}
				if w, err = c.UpdateWorkflow(cmd.Context(), id, in); err != nil {
					return fmt.Errorf("update workflow %d: %w", id, err)
				}
			} else if w, err = c.CreateWorkflow(cmd.Context(), in); err != nil {
				return fmt.Errorf("create workflow %q: %w", in.Name, err)
			}
			return printObjects(a.stdout, out, w, func() *table { return workflowsTable([]client.Workflow{w}) })
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the workflow, as YAML or JSON")
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newWorkflowsDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete WORKFLOW",
		Short: "Delete a workflow and its finished runs",
		Args:  exactArgs(1, "one workflow: its id or GROUP/NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := a.workflowArg(cmd, args[0])
			if err != nil {
				return err
			}
			if err := c.DeleteWorkflow(cmd.Context(), id); err != nil {
				return fmt.Errorf("delete workflow %d: %w", id, err)
			}
			fmt.Fprintf(a.stdout, "deleted workflow %d\n", id)
			return nil
		},
	}
}

func (a *app) newWorkflowsTriggerCommand() *cobra.Command {
	var out outputFormat
	var inputs []string
	var key string
	var follow bool
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "trigger WORKFLOW [--input KEY=VALUE ...] [--follow]",
		Short: "Run a workflow once now",
		Long: `Run a workflow once now. --input KEY=VALUE gives an input param (a
JSON value, or else a string), read by node params as {{ input.KEY }}.
With --follow, print the nodes' states until the run ends, then exit
with its outcome (0 succeeded, 1 otherwise).`,
		Args: exactArgs(1, "one workflow: its id or GROUP/NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			input := map[string]json.RawMessage{}
			for _, kv := range inputs {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usageErrorf("--input %q: use KEY=VALUE", kv)
				}
				if json.Valid([]byte(v)) {
					input[k] = json.RawMessage(v)
				} else {
					s, _ := json.Marshal(v)
					input[k] = s
				}
			}
			c, id, err := a.workflowArg(cmd, args[0])
			if err != nil {
				return err
			}
			r, err := c.TriggerWorkflow(cmd.Context(), id, input, key)
			if err != nil {
				return fmt.Errorf("trigger workflow %d: %w", id, err)
			}
			if follow {
				return a.followWorkflowRun(cmd.Context(), c, r.ID, poll)
			}
			return printObjects(a.stdout, out, r, func() *table { return workflowRunsTable([]client.WorkflowRun{r}) })
		},
	}
	cmd.Flags().StringArrayVar(&inputs, "input", nil, "an input param KEY=VALUE (repeatable)")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "a key the workflow has seen returns the earlier run")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "print the nodes' states until the run ends")
	cmd.Flags().DurationVar(&poll, "poll", time.Second, "how often to ask the server")
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newWorkflowsRunsCommand() *cobra.Command {
	var out outputFormat
	var workflow int64
	var state string
	var limit int
	cmd := &cobra.Command{
		Use:   "runs [--workflow ID] [--state S]",
		Short: "List workflow runs, newest first",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			filters := map[string]string{}
			if workflow > 0 {
				filters["workflow_id"] = strconv.FormatInt(workflow, 10)
			}
			if state != "" {
				filters["state"] = state
			}
			p, err := c.ListWorkflowRuns(cmd.Context(), client.ListOptions{Limit: limit, Filters: filters})
			if err != nil {
				return fmt.Errorf("list workflow runs: %w", err)
			}
			if p.Items == nil {
				p.Items = []client.WorkflowRun{}
			}
			return printObjects(a.stdout, out, p.Items, func() *table { return workflowRunsTable(p.Items) })
		},
	}
	cmd.Flags().Int64Var(&workflow, "workflow", 0, "only the runs of this workflow (id)")
	cmd.Flags().StringVar(&state, "state", "", "only runs in this state, one of "+kindJoin(kind.WorkflowRunStates))
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many runs")
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newWorkflowsRunCommand() *cobra.Command {
	var out outputFormat
	var follow bool
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "run WORKFLOW_RUN_ID [--follow]",
		Short: "Show a workflow run and its nodes",
		Long: `Show a workflow run and the current attempt of each node. With --follow,
print the nodes' states as they change until the run ends, then exit with
its outcome (0 succeeded, 1 otherwise).`,
		Args: exactArgs(1, "one workflow run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0], "workflow run")
			if err != nil {
				return err
			}
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			if follow {
				return a.followWorkflowRun(cmd.Context(), c, id, poll)
			}
			r, err := c.GetWorkflowRun(cmd.Context(), id)
			if err != nil {
				return fmt.Errorf("workflow run %d: %w", id, err)
			}
			if out == "" || out == "table" {
				printWorkflowRun(a, r)
				return nil
			}
			return printObjects(a.stdout, out, r, nil)
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "print the nodes' states until the run ends")
	cmd.Flags().DurationVar(&poll, "poll", time.Second, "how often to ask the server")
	addOutputFlag(cmd, &out)
	return cmd
}

func printWorkflowRun(a *app, r client.WorkflowRun) {
	fmt.Fprintf(a.stdout, "workflow run %d of workflow %d: %s", r.ID, r.WorkflowID, r.State)
	if r.Message != "" {
		fmt.Fprintf(a.stdout, " (%s)", r.Message)
	}
	fmt.Fprintln(a.stdout)
	_ = printObjects(a.stdout, "table", r.Nodes, func() *table { return nodesTable(r) })
}

// followWorkflowRun prints each change of a workflow run's nodes until it
// ends, and answers its outcome.
func (a *app) followWorkflowRun(ctx context.Context, c *client.Client, id int64, poll time.Duration) error {
	seen := map[string]string{}
	for {
		r, err := c.GetWorkflowRun(ctx, id)
		if err != nil {
			return fmt.Errorf("workflow run %d: %w", id, err)
		}
		for _, n := range r.Nodes {
			if !n.Current {
				continue
			}
			st := fmt.Sprintf("%s (attempt %d)", n.State, n.Attempt)
			if seen[n.Node] != st {
				seen[n.Node] = st
				line := fmt.Sprintf("%s: %s", n.Node, st)
				if n.RunID > 0 {
					line += fmt.Sprintf(", run %d", n.RunID)
				}
				if n.Message != "" && n.State != "running" {
					line += ": " + n.Message
				}
				fmt.Fprintln(a.stdout, line)
			}
		}
		if r.Final() {
			fmt.Fprintf(a.stdout, "workflow run %d %s: %s\n", r.ID, r.State, r.Message)
			if r.State == string(kind.WorkflowSucceeded) {
				return nil
			}
			return exitCode{code: exitFailure}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

func (a *app) newWorkflowsRunActionCommand(action string) *cobra.Command {
	var out outputFormat
	use, short, n := "cancel WORKFLOW_RUN_ID", "Cancel a workflow run (its running nodes' runs are asked to stop)", 1
	switch action {
	case "retry":
		use, short, n = "retry WORKFLOW_RUN_ID NODE", "Run a failed node again, and everything downstream of it", 2
	case "mark-succeeded":
		use, short, n = "mark-succeeded WORKFLOW_RUN_ID NODE", "Record a failed node as succeeded and go on", 2
	}
	what := "one workflow run id"
	if n == 2 {
		what = "a workflow run id and a node name"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(n, what),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0], "workflow run")
			if err != nil {
				return err
			}
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			var r client.WorkflowRun
			switch action {
			case "cancel":
				r, err = c.CancelWorkflowRun(cmd.Context(), id)
			case "retry":
				r, err = c.RetryWorkflowNode(cmd.Context(), id, args[1])
			default:
				r, err = c.MarkWorkflowNodeSucceeded(cmd.Context(), id, args[1])
			}
			if err != nil {
				return fmt.Errorf("%s workflow run %d: %w", action, id, err)
			}
			return printObjects(a.stdout, out, r, func() *table { return workflowRunsTable([]client.WorkflowRun{r}) })
		},
	}
	addOutputFlag(cmd, &out)
	return cmd
}

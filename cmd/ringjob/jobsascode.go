package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/client/jobspec"
)

// Jobs as code: export, apply, diff and sync (docs/jobs-as-code.md). The
// server plans and applies (POST /api/v1/plan, /api/v1/apply); these
// commands read and write the YAML files, show the plan and apply exactly
// the plan they showed.

func (a *app) newExportCommand() *cobra.Command {
	var group, out string
	cmd := &cobra.Command{
		Use:   "export [--group G] [-o FILE|DIR]",
		Short: "Write the server's groups, jobs and workflows as YAML (jobs as code)",
		Long: `Write the server's groups, jobs and workflows in the jobs-as-code format: to stdout,
to a file (-o jobs.yaml), or to a directory with one file per group
(-o jobs/, or an existing directory). Applying what export wrote changes
nothing.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			set, err := exportSet(cmd.Context(), cl, group, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return writeSet(cmd.OutOrStdout(), set, out)
		},
	}
	cmd.Flags().StringVar(&group, "group", "", "export only this group (app name) and its jobs")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file, or to this directory one file per group (a path ending in / or an existing directory)")
	addClientFlags(cmd)
	return cmd
}

// applyFlags are the flags apply, diff and sync share.
type applyFlags struct {
	files   []string
	group   string
	prune   bool
	dryRun  bool
	confirm bool
	verbose bool
}

func (f *applyFlags) add(cmd *cobra.Command, files, dryRun bool) {
	if files {
		cmd.Flags().StringArrayVarP(&f.files, "filename", "f", nil, "a YAML file or a directory of them (repeatable)")
	}
	cmd.Flags().StringVar(&f.group, "group", "", "only this group (app name): its declaration and jobs; with --prune, delete only its undeclared jobs")
	cmd.Flags().BoolVar(&f.prune, "prune", false, "delete the jobs of the covered groups that are not declared")
	if dryRun {
		cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "show the plan and change nothing")
		cmd.Flags().BoolVar(&f.confirm, "confirm", false, "after showing the plan, ask before applying it (type yes on stdin)")
	}
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "list the unchanged objects too")
}

func (a *app) newApplyCommand() *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
		Use:   "apply -f PATH [--dry-run] [--prune] [--group G]",
		Short: "Make the server match YAML files of groups, jobs and workflows",
		Long: `Read groups, jobs and workflows from YAML files (docs/jobs-as-code.md), show
the plan (create, update with a field-by-field diff, delete with --prune,
unchanged), then apply it: groups and jobs in one transaction, every change
lands or none does; workflows through the workflows API, deletes before that
transaction and creates and updates after it. If anything the plan covers
changed on the server after the plan was shown, it is not applied ("changed
since plan").`,
		Args: exactArgs(0, "no arguments (files go with -f)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := loadFiles(f.files)
			if err != nil {
				return err
			}
			cl, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			return a.planAndApply(cmd, cl, set, f, "")
		},
	}
	f.add(cmd, true, true)
	addClientFlags(cmd)
	return cmd
}

func (a *app) newDiffCommand() *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
		Use:   "diff -f PATH [--prune] [--group G]",
		Short: "Show what apply would change; exit 1 when it would change something",
		Long: `Show the plan that 'ringjob apply' would apply, and change nothing. Exit
status: 0 when nothing would change, 1 when something would (a drift check
for CI), 2 for a wrong command line, files with problems or a server that
cannot answer.`,
		Args: exactArgs(0, "no arguments (files go with -f)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			trouble := func(err error) error {
				var ec exitCode
				if errors.As(err, &ec) {
					ec.code = exitUsage
					return ec
				}
				return exitCode{code: exitUsage, msg: cmd.CommandPath() + ": " + err.Error()}
			}
			set, err := loadFiles(f.files)
			if err != nil {
				var ue usageError
				if errors.As(err, &ue) {
					return err
				}
				return trouble(err)
			}
			cl, err := a.apiClient(cmd)
			if err != nil {
				return trouble(err)
			}
			f.dryRun = true
			plan, wf, err := a.plan(cmd, cl, set, f, "")
			if err != nil {
				return trouble(err)
			}
			if wf.merge(plan).Changed() {
				return exitCode{code: exitFailure}
			}
			return nil
		},
	}
	f.add(cmd, true, false)
	addClientFlags(cmd)
	return cmd
}

func (a *app) newSyncCommand() *cobra.Command {
	var f applyFlags
	var from, to, mapFile string
	var stopped bool
	cmd := &cobra.Command{
		Use:   "sync --from CONTEXT --to CONTEXT [--group G] [--dry-run] [--prune] [--map FILE] [--stopped]",
		Short: "Make one server's groups and jobs match another's (e.g. staging to production)",
		Long: `Export the groups and jobs of the --from context, rename them with the
mapping file (--map: group app names, and targets such as Lambda ARNs per
account, see docs/jobs-as-code.md), and apply them to the --to context as
'ringjob apply' does: the plan first, then one transaction.

Jobs keep whether they are started, as on --from. With --stopped (or
"stopped: true" in the mapping file, the default of that destination),
jobs new to --to are created stopped, and jobs already there stay started
or stopped as they are there: nothing fires at the destination before
someone starts it there.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return usageErrorf("give both --from and --to (context names, see `ringjob context list`)")
			}
			var m *jobspec.Mapping
			if mapFile != "" {
				var err error
				if m, err = jobspec.LoadMapping(mapFile); err != nil {
					return err
				}
				stopped = stopped || (m.Stopped && !cmd.Flags().Changed("stopped"))
			}
			src, err := a.contextTarget(from, "--from")
			if err != nil {
				return err
			}
			dst, err := a.contextTarget(to, "--to")
			if err != nil {
				return err
			}
			set, err := exportSet(cmd.Context(), src.client(), f.group, cmd.ErrOrStderr())
			if err != nil {
				return fmt.Errorf("read the jobs of %s: %w", src.from, err)
			}
			set = m.Apply(set)
			if f.group != "" {
				f.group = m.Group(f.group)
			}
			if stopped {
				if err := keepStopped(cmd.Context(), dst.client(), set); err != nil {
					return fmt.Errorf("read the jobs of %s: %w", dst.from, err)
				}
			}
			err = a.planAndApply(cmd, dst.client(), set, f, dst.from)
			var ec exitCode
			if err != nil && !errors.As(err, &ec) {
				return fmt.Errorf("%s: %w", dst.from, err)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the `CONTEXT` to read (see ringjob context list)")
	cmd.Flags().StringVar(&to, "to", "", "the `CONTEXT` to change")
	cmd.Flags().StringVar(&mapFile, "map", "", "a mapping file: group app names and target prefixes from --from's names to --to's, and stopped: true to make --stopped that destination's default")
	cmd.Flags().BoolVar(&stopped, "stopped", false, "create the jobs new to --to stopped, and leave the others started or stopped as they are there")
	f.add(cmd, false, true)
	return cmd
}

// keepStopped makes the set's jobs new to the destination stopped, and
// those it has keep their started or stopped state there (sync --stopped).
func keepStopped(ctx context.Context, dst *client.Client, set *jobspec.Set) error {
	jobs, err := dst.AllJobs(ctx, nil)
	if err != nil {
		return err
	}
	groups, err := dst.AllGroups(ctx)
	if err != nil {
		return err
	}
	app := make(map[int64]string, len(groups))
	for _, g := range groups {
		app[g.ID] = g.AppName
	}
	there := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		there[app[j.GroupID]+"/"+j.Name] = j.Enabled
	}
	for i := range set.Jobs {
		j := &set.Jobs[i]
		j.Enabled = there[j.Group+"/"+j.Name] // false when new
	}
	// Workflows likewise: a schedule starts only where someone starts it.
	ids := make(map[string]int64, len(groups))
	for _, g := range groups {
		ids[g.AppName] = g.ID
	}
	flows := map[string]bool{}
	listed := map[string]bool{}
	for i := range set.Workflows {
		w := &set.Workflows[i]
		if id, ok := ids[w.Group]; ok && !listed[w.Group] {
			listed[w.Group] = true
			cur, err := groupWorkflows(ctx, dst, id)
			if err != nil {
				return err
			}
			for _, c := range cur {
				flows[w.Group+"/"+c.Name] = c.Enabled
			}
		}
		w.Enabled = flows[w.Ref()]
	}
	return nil
}

// contextTarget is the server and token of a named context (sync uses two
// at once, each with its own token); flag names the flag that gave it.
func (a *app) contextTarget(name, flag string) (target, error) {
	cfg, path, err := a.loadCLIConfig()
	if err != nil {
		return target{}, err
	}
	x, ok := cfg.find(name)
	if !ok {
		return target{}, usageErrorf("%s: context %q is not in %s (see `ringjob context list`)", flag, name, path)
	}
	return target{server: x.Server, token: x.Token, from: fmt.Sprintf("context %s (%s)", name, x.Server)}, nil
}

func (t target) client() *client.Client { return client.New(t.server, t.token, nil) }

// loadFiles reads the declaration; problems are printed one per line
// (file:line: field: message), all of them.
func loadFiles(files []string) (*jobspec.Set, error) {
	if len(files) == 0 {
		return nil, usageErrorf("give the files to read with -f PATH (a YAML file or a directory)")
	}
	set, err := jobspec.Load(files...)
	var ps jobspec.Problems
	if errors.As(err, &ps) {
		return nil, exitCode{code: exitFailure, msg: fmt.Sprintf("%s\n%d problem(s); nothing was applied", ps.Error(), len(ps))}
	}
	return set, err
}

// plan asks the server for the plan of set's groups and jobs, plans its
// workflows, and prints both.
func (a *app) plan(cmd *cobra.Command, cl *client.Client, set *jobspec.Set, f applyFlags, where string) (client.Plan, workflowPlan, error) {
	var scope []string
	if f.group != "" {
		set = set.Only(f.group)
		scope = []string{f.group}
	}
	plan, err := cl.PlanApply(cmd.Context(), set.Input(scope, f.prune))
	if err != nil {
		return plan, workflowPlan{}, explain(set, err)
	}
	wf, err := planWorkflows(cmd.Context(), cl, set, plan, scope, f.prune)
	if err != nil {
		return plan, wf, err
	}
	printPlan(cmd.OutOrStdout(), wf.merge(plan), f.verbose, where)
	return plan, wf, nil
}

// planAndApply shows the plan, then applies exactly that plan.
func (a *app) planAndApply(cmd *cobra.Command, cl *client.Client, set *jobspec.Set, f applyFlags, where string) error {
	plan, wf, err := a.plan(cmd, cl, set, f, where)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	switch {
	case f.dryRun:
		fmt.Fprintln(out, "Dry run: nothing was applied.")
		return nil
	case !wf.merge(plan).Changed():
		fmt.Fprintln(out, "Nothing to change.")
		return nil
	case f.confirm:
		fmt.Fprint(out, "Apply this plan? Only 'yes' applies it: ")
		answer, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
		if strings.TrimSpace(answer) != "yes" {
			return exitCode{code: exitFailure, msg: "Not applied."}
		}
	}
	var scope []string
	if f.group != "" {
		set = set.Only(f.group)
		scope = []string{f.group}
	}
	in := set.Input(scope, f.prune)
	for _, c := range plan.Changes {
		if c.Op != "unchanged" {
			c.Diff = nil
			in.Expect = append(in.Expect, c)
		}
	}
	done := map[string]int{}
	if err := wf.apply(cmd.Context(), cl, true, done); err != nil {
		return err
	}
	// An empty Expect would apply whatever the server plans now, so the
	// jobs are applied only when the plan shown changes some.
	if plan.Changed() {
		res, err := cl.Apply(cmd.Context(), in)
		if err != nil {
			return explain(set, err)
		}
		for k, v := range res.Summary {
			done[k] += v
		}
	}
	if err := wf.apply(cmd.Context(), cl, false, done); err != nil {
		return err
	}
	fmt.Fprintf(out, "Applied: %d created, %d updated, %d deleted.\n", done["create"], done["update"], done["delete"])
	return nil
}

// explain turns a server's answer about the declaration into lines a
// person can act on: problems at their files and lines.
func explain(set *jobspec.Set, err error) error {
	var ce *client.Error
	if errors.As(err, &ce) && len(ce.Problems) > 0 {
		ps := set.Explain(ce.Problems)
		return exitCode{code: exitFailure, msg: fmt.Sprintf("%s\n%d problem(s); nothing was applied", ps.Error(), len(ps))}
	}
	if errors.As(err, &ce) && ce.Code == "changed_since_plan" {
		return errors.New(ce.Message)
	}
	return err
}

// printPlan writes a plan: one line per object, the fields of an update
// below it, and the totals.
func printPlan(w io.Writer, p client.Plan, verbose bool, where string) {
	if where != "" {
		fmt.Fprintf(w, "Plan for %s:\n", where)
	}
	sign := map[string]string{"create": "+", "update": "~", "delete": "-", "unchanged": "="}
	for _, c := range p.Changes {
		if c.Op == "unchanged" && !verbose {
			continue
		}
		fmt.Fprintf(w, "%s %s %s\n", sign[c.Op], c.Kind, c.Ref())
		for _, field := range sortedKeys(c.Diff) {
			d := c.Diff[field]
			fmt.Fprintf(w, "    %s: %s -> %s\n", field, show(d.Before), show(d.After))
		}
	}
	s := p.Summary
	fmt.Fprintf(w, "Plan: %d to create, %d to update, %d to delete, %d unchanged.\n", s["create"], s["update"], s["delete"], s["unchanged"])
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// exportSet reads the server's state (all groups it shows, or one) as a
// declaration. Children in groups outside it are read one by one.
func exportSet(ctx context.Context, cl *client.Client, group string, warn io.Writer) (*jobspec.Set, error) {
	groups, err := cl.AllGroups(ctx)
	if err != nil {
		return nil, err
	}
	filters := map[string]string{}
	if group != "" {
		found := false
		for _, g := range groups {
			if g.AppName == group {
				filters["group_id"] = fmt.Sprint(g.ID)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("group %q does not exist (or this token may not see it)", group)
		}
	}
	jobs, err := cl.AllJobs(ctx, filters)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]client.Job, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
	for _, j := range jobs {
		for _, c := range j.ChildJobIDs {
			if _, ok := byID[c]; ok {
				continue
			}
			cj, err := cl.GetJob(ctx, c)
			if err != nil && !client.IsNotFound(err) {
				return nil, fmt.Errorf("read child job %d of %d: %w", c, j.ID, err)
			}
			if err == nil {
				byID[c] = cj
			}
		}
	}
	set, dropped := jobspec.FromState(groups, jobs, byID)
	for _, d := range dropped {
		fmt.Fprintf(warn, "warning: %s; left out\n", d)
	}
	if group != "" {
		set = set.Only(group)
	}
	if err := exportWorkflows(ctx, cl, set, groups, warn); err != nil {
		return nil, err
	}
	return set, nil
}

// writeSet writes a declaration to w, a file, or a directory (one file per
// group).
func writeSet(w io.Writer, set *jobspec.Set, out string) error {
	if out == "" || out == "-" {
		b, err := set.Marshal()
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	if st, err := os.Stat(out); strings.HasSuffix(out, "/") || (err == nil && st.IsDir()) {
		files, err := set.WriteDir(filepath.Clean(out))
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "Wrote %d file(s) to %s.\n", len(files), filepath.Clean(out))
		return nil
	}
	b, err := set.Marshal()
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}

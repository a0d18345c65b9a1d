package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/client/jobspec"
)

// Workflows in jobs as code are planned and applied by the client through
// the workflows API, around the server's one-transaction apply of groups
// and jobs: deletes first (a pruned job may be a node of a workflow being
// deleted), then the jobs, then creates and updates (a node may run a job
// the same apply creates). Each update carries the version the plan read,
// so a workflow changed since the plan is not overwritten.

// workflowChange is one workflow of a plan.
type workflowChange struct {
	client.PlanChange
	decl jobspec.Workflow // create, update
	cur  client.Workflow  // update, delete, unchanged
}

// workflowPlan is the plan of a set's workflows against a server.
type workflowPlan struct {
	changes []workflowChange
	apps    map[string]client.Group // the server's groups by app name
}

// jobRefs names jobs by id and ids by GROUP/NAME, reading each from the
// server once.
type jobRefs struct {
	cl    *client.Client
	appOf map[int64]string
	refOf map[int64]string
	idOf  map[string]int64
}

func (r *jobRefs) ref(ctx context.Context, id int64) (string, bool, error) {
	if ref, ok := r.refOf[id]; ok {
		return ref, ref != "", nil
	}
	j, err := r.cl.GetJob(ctx, id)
	if client.IsNotFound(err) {
		r.refOf[id] = ""
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read job %d: %w", id, err)
	}
	ref := r.appOf[j.GroupID] + "/" + j.Name
	r.refOf[id], r.idOf[ref] = ref, id
	return ref, true, nil
}

// id is the job's id; 0 when the server has no such job.
func (r *jobRefs) id(ctx context.Context, ref string) (int64, error) {
	if id, ok := r.idOf[ref]; ok {
		return id, nil
	}
	jr, err := client.ParseJobRef(ref)
	if err != nil {
		return 0, err
	}
	j, err := r.cl.GetJobByName(ctx, jr)
	if client.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read job %s: %w", ref, err)
	}
	r.idOf[ref], r.refOf[j.ID] = j.ID, ref
	return j.ID, nil
}

func newJobRefs(cl *client.Client, groups []client.Group) *jobRefs {
	r := &jobRefs{cl: cl, appOf: map[int64]string{}, refOf: map[int64]string{}, idOf: map[string]int64{}}
	for _, g := range groups {
		r.appOf[g.ID] = g.AppName
	}
	return r
}

// groupWorkflows lists every workflow of a group.
func groupWorkflows(ctx context.Context, cl *client.Client, groupID int64) ([]client.Workflow, error) {
	o := client.ListOptions{Limit: 200, Filters: map[string]string{"group_id": fmt.Sprint(groupID)}}
	var out []client.Workflow
	for {
		page, err := cl.ListWorkflows(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("list the workflows of group %d: %w", groupID, err)
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			return out, nil
		}
		o.Cursor = page.NextCursor
	}
}

// planWorkflows compares the set's workflows with the server's in the
// groups the set covers (those it declares or puts jobs or workflows in,
// and scope): create, update, unchanged, and with prune delete of the
// undeclared ones. A node's job that is neither in the files nor on the
// server, or that the jobs' plan deletes, is a problem at its file and line.
func planWorkflows(ctx context.Context, cl *client.Client, set *jobspec.Set, jobs client.Plan, scope []string, prune bool) (workflowPlan, error) {
	p := workflowPlan{apps: map[string]client.Group{}}
	covered := append(set.GroupNames(), scope...)
	if len(set.Workflows) == 0 && !prune {
		return p, nil
	}
	groups, err := cl.AllGroups(ctx)
	if err != nil {
		return p, err
	}
	for _, g := range groups {
		p.apps[g.AppName] = g
	}
	refs := newJobRefs(cl, groups)
	declaredJobs := map[string]bool{}
	for _, j := range set.Jobs {
		declaredJobs[j.Group+"/"+j.Name] = true
	}
	pruned := map[string]bool{}
	for _, c := range jobs.Changes {
		if c.Kind == "job" && c.Op == "delete" {
			pruned[c.Ref()] = true
		}
	}
	var probs jobspec.Problems
	for _, w := range set.Workflows {
		for i, n := range w.Nodes {
			if declaredJobs[n.Job] {
				continue
			}
			if pruned[n.Job] {
				field := fmt.Sprintf("nodes[%d].job", i)
				probs = append(probs, jobspec.Problem{Pos: set.Locate("workflow", w.Group, w.Name, field), Field: field,
					Msg: fmt.Sprintf("job %s would be deleted by --prune (these files do not declare it); declare it or take the node out", n.Job)})
				continue
			}
			id, err := refs.id(ctx, n.Job)
			if err != nil {
				return p, err
			}
			if id == 0 {
				field := fmt.Sprintf("nodes[%d].job", i)
				probs = append(probs, jobspec.Problem{Pos: set.Locate("workflow", w.Group, w.Name, field), Field: field,
					Msg: fmt.Sprintf("job %s is neither declared in these files nor on the server", n.Job)})
			}
		}
	}
	if len(probs) > 0 {
		return p, exitCode{code: exitFailure, msg: fmt.Sprintf("%s\n%d problem(s); nothing was applied", probs.Error(), len(probs))}
	}
	seen := map[string]bool{}
	for _, app := range covered {
		if seen[app] {
			continue
		}
		seen[app] = true
		var current []client.Workflow
		if g, ok := p.apps[app]; ok {
			if current, err = groupWorkflows(ctx, cl, g.ID); err != nil {
				return p, err
			}
		}
		byName := make(map[string]client.Workflow, len(current))
		for _, c := range current {
			byName[c.Name] = c
		}
		declared := map[string]bool{}
		for _, w := range set.Workflows {
			if w.Group != app {
				continue
			}
			declared[w.Name] = true
			c := workflowChange{PlanChange: client.PlanChange{Op: "create", Kind: "workflow", Group: app, Name: w.Name}, decl: w}
			if cur, ok := byName[w.Name]; ok {
				c.cur = cur
				have, err := stateOf(ctx, refs, app, cur)
				if err != nil {
					return p, err
				}
				c.Op = "unchanged"
				if d := w.Diff(have); len(d) > 0 {
					c.Op, c.Diff = "update", d
				}
			}
			p.changes = append(p.changes, c)
		}
		if prune {
			for _, cur := range current {
				if !declared[cur.Name] {
					p.changes = append(p.changes, workflowChange{PlanChange: client.PlanChange{Op: "delete", Kind: "workflow", Group: app, Name: cur.Name}, cur: cur})
				}
			}
		}
	}
	return p, nil
}

// stateOf is a stored workflow as a declaration.
func stateOf(ctx context.Context, refs *jobRefs, app string, w client.Workflow) (jobspec.Workflow, error) {
	var lookupErr error
	have, _ := jobspec.FromWorkflow(w, app, func(id int64) (string, bool) {
		ref, ok, err := refs.ref(ctx, id)
		if err != nil && lookupErr == nil {
			lookupErr = err
		}
		return ref, ok
	})
	return have, lookupErr
}

// merge adds the workflows to a plan of groups and jobs, for showing it.
func (p workflowPlan) merge(plan client.Plan) client.Plan {
	out := client.Plan{Changes: append([]client.PlanChange(nil), plan.Changes...), Summary: map[string]int{}}
	for k, v := range plan.Summary {
		out.Summary[k] = v
	}
	for _, c := range p.changes {
		out.Changes = append(out.Changes, c.PlanChange)
		out.Summary[c.Op]++
	}
	return out
}

// apply runs the workflow changes of op ("delete", or "" for creates and
// updates) and counts them by op.
func (p workflowPlan) apply(ctx context.Context, cl *client.Client, deletes bool, done map[string]int) error {
	var refs *jobRefs
	for _, c := range p.changes {
		if (c.Op == "delete") != deletes || c.Op == "unchanged" {
			continue
		}
		if c.Op == "delete" {
			if err := cl.DeleteWorkflow(ctx, c.cur.ID); err != nil {
				return fmt.Errorf("delete workflow %s: %w", c.Ref(), err)
			}
			done["delete"]++
			continue
		}
		if refs == nil {
			// Read after the jobs were applied: groups and jobs may be new.
			groups, err := cl.AllGroups(ctx)
			if err != nil {
				return err
			}
			refs = newJobRefs(cl, groups)
			for _, g := range groups {
				p.apps[g.AppName] = g
			}
		}
		g, ok := p.apps[c.Group]
		if !ok {
			return fmt.Errorf("workflow %s: group %s does not exist (declare it under groups)", c.Ref(), c.Group)
		}
		var idErr error
		in := c.decl.Input(g.ID, func(ref string) int64 {
			id, err := refs.id(ctx, ref)
			if err == nil && id == 0 {
				err = fmt.Errorf("job %s does not exist", ref)
			}
			if err != nil && idErr == nil {
				idErr = err
			}
			return id
		})
		if idErr != nil {
			return fmt.Errorf("workflow %s: %w", c.Ref(), idErr)
		}
		var err error
		if c.Op == "create" {
			_, err = cl.CreateWorkflow(ctx, in)
		} else {
			in.Version = c.cur.Version
			_, err = cl.UpdateWorkflow(ctx, c.cur.ID, in)
		}
		if err != nil {
			var ce *client.Error
			if errors.As(err, &ce) && ce.Field != "" {
				return fmt.Errorf("%s workflow %s: %s: %s", c.Op, c.Ref(), ce.Field, ce.Message)
			}
			return fmt.Errorf("%s workflow %s: %w", c.Op, c.Ref(), err)
		}
		done[c.Op]++
	}
	return nil
}

// exportWorkflows adds the server's workflows of the set's groups to it.
func exportWorkflows(ctx context.Context, cl *client.Client, set *jobspec.Set, groups []client.Group, warn io.Writer) error {
	refs := newJobRefs(cl, groups)
	want := map[string]bool{}
	for _, app := range set.GroupNames() {
		want[app] = true
	}
	for _, g := range groups {
		if !want[g.AppName] {
			continue
		}
		flows, err := groupWorkflows(ctx, cl, g.ID)
		if err != nil {
			return err
		}
		for _, w := range flows {
			var lookupErr error
			decl, dropped := jobspec.FromWorkflow(w, g.AppName, func(id int64) (string, bool) {
				ref, ok, err := refs.ref(ctx, id)
				if err != nil && lookupErr == nil {
					lookupErr = err
				}
				return ref, ok
			})
			if lookupErr != nil {
				return lookupErr
			}
			if len(dropped) > 0 {
				for _, d := range dropped {
					fmt.Fprintf(warn, "warning: %s; workflow left out\n", d)
				}
				continue
			}
			set.Workflows = append(set.Workflows, decl)
		}
	}
	return nil
}

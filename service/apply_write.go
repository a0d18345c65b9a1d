package service

import (
	"context"
	"time"

	"github.com/ringjob/ringjob/store"
)

// write writes a checked plan in the run's transaction: groups, new jobs
// (in multi-row inserts), their child links, updates, deletes, and an audit
// event per change.
func (a *applyRun) write(ctx context.Context) error {
	now := a.s.clock.Now()
	if err := a.writeGroups(ctx, now.UnixMilli()); err != nil {
		return err
	}
	if err := a.createJobs(ctx, now); err != nil {
		return err
	}
	if err := a.updateJobs(ctx, now); err != nil {
		return err
	}
	if err := a.deleteJobs(ctx); err != nil {
		return err
	}
	return a.tx.AuditAppendMany(ctx, a.audit)
}

// record adds the audit event of a change; they are written last, together.
func (a *applyRun) record(ctx context.Context, e auditEntry) error {
	ev, err := a.s.auditEvent(ctx, e)
	if err != nil {
		return err
	}
	a.audit = append(a.audit, ev)
	return nil
}

// writeGroups creates and updates the groups the plan changes.
func (a *applyRun) writeGroups(ctx context.Context, nowMs int64) error {
	for _, c := range a.plan.Changes {
		if c.Kind != "group" || c.Op == OpUnchanged {
			continue
		}
		var err error
		if c.Op == OpCreate {
			err = a.createGroup(ctx, c, nowMs)
		} else {
			err = a.updateGroup(ctx, c, nowMs)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (a *applyRun) createGroup(ctx context.Context, c Change, nowMs int64) error {
	def := a.newGroups[c.Group]
	es := store.GroupExecutorSettings{Protocol: def.Protocol, AcceptRegistrations: def.AcceptRegistrations}
	g, err := a.tx.GroupCreate(ctx, store.GroupCreateParams{AppName: c.Group, Title: def.Title, Members: def.Members, GroupExecutorSettings: es,
		FailureDestination: def.FailureDestination, NowMs: nowMs})
	if err != nil {
		return err
	}
	a.groups[g.AppName] = g
	a.known.appOf[g.ID] = g.AppName
	return a.record(ctx, auditEntry{Action: ActGroupCreate, ObjectType: "group", ObjectID: g.ID, GroupID: g.ID, Changes: diffMap(diffDefs(nil, def))})
}

func (a *applyRun) updateGroup(ctx context.Context, c Change, nowMs int64) error {
	def := a.newGroups[c.Group]
	cur := a.groups[c.Group]
	es := store.GroupExecutorSettings{Protocol: def.Protocol, AcceptRegistrations: def.AcceptRegistrations,
		AccessToken: cur.AccessToken} // the token is not declared: kept
	g, err := a.tx.GroupUpdate(ctx, store.GroupUpdateParams{ID: cur.ID, Title: def.Title, Members: def.Members, GroupExecutorSettings: es,
		FailureDestination: def.FailureDestination, NowMs: nowMs})
	if err != nil {
		return err
	}
	a.groups[g.AppName] = g
	return a.record(ctx, auditEntry{Action: ActGroupUpdate, ObjectType: "group", ObjectID: g.ID, GroupID: g.ID, Changes: diffMap(c.Diff)})
}

// createJobs inserts the new jobs in one multi-row insert, with the child
// links that exist already; links to jobs created here follow once those
// have ids.
func (a *applyRun) createJobs(ctx context.Context, now time.Time) error {
	var creates []store.JobCreateParams
	var created, linkLater []*plannedJob
	for _, pj := range a.planned {
		if pj.op != OpCreate {
			continue
		}
		cp, later, err := a.createParams(pj, now)
		if err != nil {
			return err
		}
		if later {
			linkLater = append(linkLater, pj)
		}
		creates = append(creates, cp)
		created = append(created, pj)
	}
	ids, err := a.tx.JobInsertMany(ctx, creates)
	if err != nil {
		return err
	}
	for i, pj := range created {
		a.known.add(store.Job{ID: ids[i], GroupID: pj.fields.GroupID, Name: pj.ref.Name})
		if err := a.record(ctx, auditEntry{Action: ActJobCreate, ObjectType: "job", ObjectID: ids[i], GroupID: pj.fields.GroupID, Changes: diffMap(diffDefs(nil, pj.def))}); err != nil {
			return err
		}
	}
	links := make(map[int64][]int64, len(linkLater))
	for _, pj := range linkLater {
		links[a.known.byRef[pj.ref].ID] = a.known.idsOf(pj.children)
	}
	return a.tx.JobSetChildrenMany(ctx, links)
}

// createParams are a new job's insert: in its group, with its children if
// every one has an id already (else none, and later is true), and its first
// fire time if enabled. pj.fields become what is inserted.
func (a *applyRun) createParams(pj *plannedJob, now time.Time) (cp store.JobCreateParams, later bool, err error) {
	f := pj.fields
	f.GroupID = a.groups[pj.ref.Group].ID
	f.ChildJobIDs = nil
	for _, c := range pj.children {
		if id, ok := a.known.idOf(c); ok {
			f.ChildJobIDs = append(f.ChildJobIDs, id)
		} else {
			later = true
		}
	}
	if later {
		f.ChildJobIDs = nil
	}
	cp = store.JobCreateParams{JobFields: f, Enabled: pj.enabled, NowMs: now.UnixMilli()}
	if pj.enabled {
		if cp.NextFireMs, err = firstFire(f.ScheduleType, pj.sched, now); err != nil {
			return cp, false, err
		}
	}
	pj.fields = f
	return cp, later, nil
}

// updateJobs replaces the jobs the plan updates.
func (a *applyRun) updateJobs(ctx context.Context, now time.Time) error {
	for _, pj := range a.planned {
		if pj.op != OpUpdate {
			continue
		}
		if err := a.updateJob(ctx, pj, now); err != nil {
			return err
		}
	}
	return nil
}

// updateJob replaces one job; its next fire time is computed again if it is
// enabled now or its schedule changed, and cleared if it is disabled now.
func (a *applyRun) updateJob(ctx context.Context, pj *plannedJob, now time.Time) error {
	cur := *pj.cur
	f := pj.fields
	f.GroupID = cur.GroupID
	f.ChildJobIDs = a.known.idsOf(pj.children)
	rp := store.JobReplaceParams{ID: cur.ID, JobFields: f, Enabled: pj.enabled, NowMs: now.UnixMilli()}
	switch {
	case pj.firesAnew():
		next, err := firstFire(f.ScheduleType, pj.sched, now)
		if err != nil {
			return err
		}
		rp.NextFireMs = &next
	case !pj.enabled && cur.Enabled:
		zero := int64(0)
		rp.NextFireMs = &zero
	}
	if err := a.tx.JobReplace(ctx, rp); err != nil {
		return err
	}
	return a.record(ctx, auditEntry{Action: ActJobUpdate, ObjectType: "job", ObjectID: cur.ID, GroupID: cur.GroupID, Changes: diffMap(pj.diff)})
}

// deleteJobs deletes the pruned jobs in one statement.
func (a *applyRun) deleteJobs(ctx context.Context) error {
	if len(a.deletes) == 0 {
		return nil
	}
	ids := make([]int64, len(a.deletes))
	for i, d := range a.deletes {
		ids[i] = d.ID
		if err := a.record(ctx, auditEntry{Action: ActJobDelete, ObjectType: "job", ObjectID: d.ID, GroupID: d.GroupID, Changes: map[string]any{"name": d.Name}}); err != nil {
			return err
		}
	}
	return a.tx.JobDeleteMany(ctx, ids)
}

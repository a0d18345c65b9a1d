package service

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/ringjob/ringjob/apitypes"
	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/schedule"
	"github.com/ringjob/ringjob/store"
)

// Jobs as code: a declared state of groups and jobs (what a YAML file in
// git says, see jobspec/) is compared with the stored one into a plan of
// changes, and a plan is applied in one transaction: every change lands or
// none does. Jobs are named by identity (group app name + job name), child
// jobs too, never by id.
//
// A plan is checked against the state it was computed from: each change
// carries the version of the object it was planned against, and Apply with
// Expect refuses (PlanConflictError) when anything it would change, or
// planned to change, is different now. The version is a hash of what the
// plan compares (a job's definition and enabled, a group's settings), so the
// scheduler advancing a job's next fire time does not count as a change.

// ChangeOp is what a plan does to one object.
type ChangeOp string

// The ops of a plan.
const (
	OpCreate    ChangeOp = "create"
	OpUpdate    ChangeOp = "update"
	OpDelete    ChangeOp = "delete"
	OpUnchanged ChangeOp = "unchanged"
)

// JobRef names a job by its identity.
type JobRef struct {
	Group string // the group's app name
	Name  string
}

// String is "app_name/name".
func (r JobRef) String() string { return r.Group + "/" + r.Name }

// ApplyGroup is a group as declared. The executor token is never declared:
// it stays as it is (set it with PUT /api/v1/groups/{id}).
type ApplyGroup struct {
	AppName  string
	Title    string
	Members  []string
	Protocol string
	// AcceptRegistrations nil: the default for a new group, unchanged for an
	// existing one.
	AcceptRegistrations *bool
	// FailureDestination serves the group's jobs without their own ("" = none).
	FailureDestination string
}

// ApplyJob is a job as declared: JobSpec's fields (its GroupID and
// ChildJobIDs are ignored) in the group named Group, with child jobs by
// name and whether it is started.
type ApplyJob struct {
	Group string
	JobSpec
	Children []JobRef
	Enabled  bool
}

// ApplyParams are a declared state and what to do with it.
type ApplyParams struct {
	Groups []ApplyGroup
	Jobs   []ApplyJob
	// Scope are app names of groups whose jobs the declaration covers, on
	// top of the groups it declares or puts jobs in. Prune deletes the jobs
	// of these groups that are not declared.
	Scope []string
	Prune bool
	// Write applies the plan; false only computes it.
	Write bool
	// Expect is the plan the caller saw (its changes other than unchanged
	// suffice). nil applies whatever the plan is now.
	Expect []Change
	// Authorize checks a permission of the caller on a group (0 for a
	// system permission). Every group the declaration touches is checked
	// before anything changes; nil allows everything.
	Authorize func(perm access.Perm, groupID int64) error
}

// FieldChange is one field of an update, in the declaration's terms.
type FieldChange struct {
	Before any `json:"before"`
	After  any `json:"after"`
}

// Change is one object of a plan.
type Change struct {
	Op   ChangeOp
	Kind string // "group" or "job"
	// Group is the group's app name (of the job, for a job).
	Group string
	// Name is the job's name ("" for a group).
	Name string
	// Version is the object's version the change was planned against (""
	// for a create).
	Version string
	// Diff holds the fields an update changes (nil for other ops).
	Diff map[string]FieldChange
}

// Ref names the object: "app_name" for a group, "app_name/name" for a job.
func (c Change) Ref() string {
	if c.Kind == "group" {
		return c.Group
	}
	return c.Group + "/" + c.Name
}

// Plan is the changes a declaration makes, groups first, then jobs in the
// order declared, then deletes.
type Plan struct {
	Changes []Change
	// Applied tells whether the changes were written.
	Applied bool
}

// Counts returns how many changes of each op the plan holds.
func (p Plan) Counts() map[ChangeOp]int {
	out := map[ChangeOp]int{}
	for _, c := range p.Changes {
		out[c.Op]++
	}
	return out
}

// ApplyProblem is one thing wrong with a declaration.
type ApplyProblem struct {
	Kind    string // "group" or "job"
	Group   string
	Name    string // job name
	Field   string // in the declaration's spelling ("schedule_conf", "children[1]")
	Message string
}

// ApplyInvalidError lists everything wrong with a declaration; nothing was
// applied. The REST API answers it with 400 and the list.
type ApplyInvalidError struct {
	Problems []ApplyProblem
}

func (e *ApplyInvalidError) Error() string {
	lines := make([]string, 0, len(e.Problems))
	for _, p := range e.Problems {
		ref := p.Group
		if p.Kind == "job" {
			ref += "/" + p.Name
		}
		lines = append(lines, fmt.Sprintf("%s %s: %s: %s", p.Kind, ref, p.Field, p.Message))
	}
	return fmt.Sprintf("%d problem(s), nothing applied: %s", len(e.Problems), strings.Join(lines, "; "))
}

// PlanConflictError reports objects that changed between the plan the caller
// saw and now; nothing was applied. The REST API answers it with 409
// changed_since_plan.
type PlanConflictError struct {
	Objects []string // "app_name" or "app_name/name"
}

func (e *PlanConflictError) Error() string {
	return fmt.Sprintf("changed since plan: %s; nothing was applied: compute the plan again and review it", strings.Join(e.Objects, ", "))
}

// Is makes errors.Is(err, store.ErrConflict) true.
func (e *PlanConflictError) Is(target error) bool { return target == store.ErrConflict }

// jobDef is what a plan compares of a job, in the declaration's spelling.
// Its version (versionOf) covers every field, zero or not.
type jobDef struct {
	apitypes.JobFields
	Children []string `json:"children"`
	apitypes.JobLimits
	Enabled bool `json:"enabled"`
}

func defOfFields(f store.JobFields, children []string, enabled bool) jobDef {
	return jobDef{
		JobFields: apitypes.JobFields{Description: f.Description, ScheduleType: f.ScheduleType, ScheduleConf: f.ScheduleConf, TimeZone: f.TimeZone,
			MisfirePolicy: string(f.MisfirePolicy), Handler: f.Handler, Params: f.Params, RouteStrategy: string(f.RouteStrategy),
			BlockStrategy: string(f.BlockStrategy), TimeoutSec: f.TimeoutSec, RetryCount: f.RetryCount, ShardCount: f.ShardCount,
			PinnedTargets: nonNil(f.PinnedTargets), RetryBackoff: string(backoffOrFixed(f.RetryBackoff)), RetryDelaySec: f.RetryDelaySec,
			RetryMaxDelaySec: f.RetryMaxDelaySec, JobOptions: JobOptionsView(f.JobOptions)},
		Children:  nonNil(children),
		JobLimits: apitypes.JobLimits{MaxInFlight: f.MaxInFlight, AlarmChannels: nonNil(f.AlarmChannels)},
		Enabled:   enabled,
	}
}

func jobFieldsOf(j store.Job) store.JobFields {
	return store.JobFields{GroupID: j.GroupID, Name: j.Name, Description: j.Description, ScheduleType: j.ScheduleType,
		ScheduleConf: j.ScheduleConf, TimeZone: j.TimeZone, MisfirePolicy: j.MisfirePolicy, Handler: j.Handler, Params: j.Params,
		RouteStrategy: j.RouteStrategy, BlockStrategy: j.BlockStrategy, TimeoutSec: j.TimeoutSec, RetryCount: j.RetryCount,
		ShardCount: j.ShardCount, PinnedTargets: j.PinnedTargets, RetryBackoff: j.RetryBackoff, RetryDelaySec: j.RetryDelaySec,
		RetryMaxDelaySec: j.RetryMaxDelaySec, ChildJobIDs: j.ChildJobIDs, MaxInFlight: j.MaxInFlight, AlarmChannels: j.AlarmChannels,
		JobOptions: j.JobOptions}
}

// JobOptionsView is a job's schedule options as the API and jobs as code
// write them (instants in RFC 3339, UTC).
func JobOptionsView(o store.JobOptions) apitypes.JobOptions {
	instant := func(ms int64) string {
		if ms == 0 {
			return ""
		}
		return time.UnixMilli(ms).UTC().Format(time.RFC3339)
	}
	return apitypes.JobOptions{ActiveFrom: instant(o.ActiveFromMs), ActiveUntil: instant(o.ActiveUntilMs), FlexibleWindowMin: o.FlexWindowMin,
		MaxEventAgeSec: o.MaxEventAgeSec, AfterCompletion: string(o.AfterCompletion), FailureDestination: o.FailureDestination}
}

// groupDef is what a plan compares of a group.
type groupDef struct {
	Title               string   `json:"title"`
	Members             []string `json:"members"`
	Protocol            string   `json:"protocol"`
	AcceptRegistrations bool     `json:"accept_registrations"`
	FailureDestination  string   `json:"failure_destination" version:"omitzero"`
}

func groupDefOf(g store.Group) groupDef {
	return groupDef{Title: g.Title, Members: nonNil(g.Members), Protocol: g.Protocol, AcceptRegistrations: g.AcceptRegistrations,
		FailureDestination: g.FailureDestination}
}

// defField is one field of a definition: its JSON name and where it is.
type defField struct {
	name     string
	index    []int
	omitZero bool // left out of versions (and of a create's diff) while zero
}

// defFields lists the fields of a definition type in declaration order by
// JSON name, with embedded structs (apitypes') flattened as encoding/json
// flattens them.
func defFields(t reflect.Type) []defField {
	var out []defField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			for _, sub := range defFields(f.Type) {
				out = append(out, defField{name: sub.name, index: append([]int{i}, sub.index...), omitZero: sub.omitZero})
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, defField{name: name, index: []int{i}, omitZero: f.Tag.Get("version") == "omitzero"})
	}
	return out
}

// versionOf hashes a definition: an object's version in a plan. It hashes
// the JSON object of every field, zero or not (omitempty does not apply), in
// declaration order, as encoding/json writes a struct, so the version of an
// unchanged object stays what it was. Fields added later carry the tag
// `version:"omitzero"` and are left out while zero, so objects that do not
// use them keep the version an earlier release gave them.
func versionOf(def any) string {
	v := reflect.ValueOf(def)
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, f := range defFields(v.Type()) {
		if f.omitZero && v.FieldByIndex(f.index).IsZero() {
			continue
		}
		if n++; n > 1 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(f.name)
		val, _ := json.Marshal(v.FieldByIndex(f.index).Interface())
		b.Write(name)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:10])
}

// diffDefs compares two definitions of the same type field by field (JSON
// names); before nil lists every field of after (a create).
func diffDefs(before, after any) map[string]FieldChange {
	av := reflect.ValueOf(after)
	var bv reflect.Value
	if before != nil {
		bv = reflect.ValueOf(before)
	}
	out := map[string]FieldChange{}
	for _, f := range defFields(av.Type()) {
		a := av.FieldByIndex(f.index).Interface()
		if !bv.IsValid() {
			if !f.omitZero || !av.FieldByIndex(f.index).IsZero() {
				out[f.name] = FieldChange{After: a}
			}
			continue
		}
		if b := bv.FieldByIndex(f.index).Interface(); !reflect.DeepEqual(a, b) {
			out[f.name] = FieldChange{Before: b, After: a}
		}
	}
	return out
}

func backoffOrFixed(b kind.Backoff) kind.Backoff {
	if b == "" {
		return kind.BackoffFixed
	}
	return b
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// problems collects what is wrong with a declaration.
type problems []ApplyProblem

func (ps *problems) job(r JobRef, err error) {
	var ve *ValidationError
	if errors.As(err, &ve) {
		*ps = append(*ps, ApplyProblem{Kind: "job", Group: r.Group, Name: r.Name, Field: ve.Field, Message: ve.Message})
		return
	}
	*ps = append(*ps, ApplyProblem{Kind: "job", Group: r.Group, Name: r.Name, Message: err.Error()})
}

func (ps *problems) group(app string, err error) {
	var ve *ValidationError
	if errors.As(err, &ve) {
		*ps = append(*ps, ApplyProblem{Kind: "group", Group: app, Field: ve.Field, Message: ve.Message})
		return
	}
	*ps = append(*ps, ApplyProblem{Kind: "group", Group: app, Message: err.Error()})
}

// plannedJob is a declared job after validation.
type plannedJob struct {
	ref      JobRef
	fields   store.JobFields
	sched    schedule.Schedule
	enabled  bool
	children []JobRef
	def      jobDef
	cur      *store.Job // nil: a create
	op       ChangeOp
	diff     map[string]FieldChange
}

// Apply plans a declaration and, with p.Write, applies the plan in one
// transaction. An invalid declaration is *ApplyInvalidError (every problem
// at once), a stale Expect *PlanConflictError, a missing permission
// *access.Denied; in each case nothing changed.
func (s *Service) Apply(ctx context.Context, p ApplyParams) (Plan, error) {
	authorize := p.Authorize
	if authorize == nil {
		authorize = func(access.Perm, int64) error { return nil }
	}
	var probs problems

	declared := map[string]ApplyGroup{}
	for _, g := range p.Groups {
		if _, dup := declared[g.AppName]; dup {
			probs.group(g.AppName, invalid("app_name", "the group is declared twice; declare it once"))
			continue
		}
		if err := s.checkAppName(g.AppName); err != nil {
			probs.group(g.AppName, err)
			continue
		}
		declared[g.AppName] = g
	}
	declaredJobs := make(map[JobRef]bool, len(p.Jobs))
	var scope []string
	inScope := map[string]bool{}
	addScope := func(app string) {
		if app != "" && !inScope[app] {
			inScope[app] = true
			scope = append(scope, app)
		}
	}
	for _, app := range p.Scope {
		addScope(app)
	}
	for _, g := range p.Groups {
		addScope(g.AppName)
	}
	for _, j := range p.Jobs {
		r := JobRef{j.Group, j.Name}
		switch {
		case j.Group == "":
			probs.job(r, invalid("group", "is required: the app name of the job's group"))
			continue
		case declaredJobs[r]:
			probs.job(r, invalid("name", "job %s is declared twice; job names are unique within a group", r))
			continue
		}
		declaredJobs[r] = true
		addScope(j.Group)
	}

	var plan Plan
	err := s.st.Tx(ctx, func(tx *store.Store) error {
		all, err := tx.GroupList(ctx)
		if err != nil {
			return err
		}
		groups := make(map[string]store.Group, len(all))
		appOf := make(map[int64]string, len(all))
		for _, g := range all {
			groups[g.AppName] = g
			appOf[g.ID] = g.AppName
		}

		// Permissions first: every group in scope, before anything else
		// is looked at or changed.
		jobPerm := access.PermJobsRead
		if p.Write {
			jobPerm = access.PermJobsWrite
		}
		// A group the caller cannot read is, to this plan, a group that
		// does not exist: neither it nor its jobs may be told apart from
		// absent ones (creating a group of its name needs groups.create,
		// which only those who see every group hold).
		for app, g := range groups {
			if authorize(access.PermJobsRead, g.ID) != nil {
				delete(groups, app)
			}
		}
		for _, app := range scope {
			if g, ok := groups[app]; ok {
				if err := authorize(jobPerm, g.ID); err != nil {
					return err
				}
			}
		}

		// Groups.
		var groupChanges []Change
		newGroups := map[string]groupDef{}
		for _, decl := range p.Groups {
			if _, ok := declared[decl.AppName]; !ok {
				continue // a problem already
			}
			def, err := s.checkGroupDecl(ctx, decl)
			if err != nil {
				probs.group(decl.AppName, err)
				continue
			}
			cur, exists := groups[decl.AppName]
			if !exists {
				if p.Write {
					if err := authorize(access.PermGroupsCreate, 0); err != nil {
						return err
					}
				}
				newGroups[decl.AppName] = def
				groupChanges = append(groupChanges, Change{Op: OpCreate, Kind: "group", Group: decl.AppName})
				continue
			}
			if decl.AcceptRegistrations == nil {
				def.AcceptRegistrations = cur.AcceptRegistrations
			}
			before := groupDefOf(cur)
			c := Change{Op: OpUnchanged, Kind: "group", Group: decl.AppName, Version: versionOf(before)}
			if d := diffDefs(before, def); len(d) > 0 {
				if p.Write {
					if err := authorize(access.PermGroupsEdit, cur.ID); err != nil {
						return err
					}
				}
				c.Op, c.Diff = OpUpdate, d
				newGroups[decl.AppName] = def
			}
			groupChanges = append(groupChanges, c)
		}
		for _, app := range scope {
			if _, ok := groups[app]; !ok {
				if _, ok := declared[app]; !ok {
					probs.group(app, invalid("app_name", "group %q does not exist or is not visible to you; declare it under groups: or create it first", app))
				}
			}
		}

		// The current jobs of the groups in scope: one read.
		var scopeIDs []int64
		for _, app := range scope {
			if g, ok := groups[app]; ok {
				scopeIDs = append(scopeIDs, g.ID)
			}
		}
		curJobs, err := tx.JobListGroups(ctx, scopeIDs, p.Write)
		if err != nil {
			return err
		}
		known := newJobIndex(appOf)
		for _, j := range curJobs {
			known.add(j)
		}
		// Child jobs outside the scope, by id (those the current jobs name)
		// and by name (those the declaration names).
		if err := known.loadChildren(ctx, tx); err != nil {
			return err
		}
		for _, j := range p.Jobs {
			for _, c := range j.Children {
				if _, ok := known.byRef[c]; ok || declaredJobs[c] {
					continue
				}
				if g, ok := groups[c.Group]; ok && !inScope[c.Group] {
					cj, err := tx.JobGetByName(ctx, g.AppName, c.Name)
					if err == nil {
						known.add(cj)
					} else if !errors.Is(err, store.ErrNotFound) {
						return err
					}
				}
			}
		}
		if err := known.loadChildren(ctx, tx); err != nil {
			return err
		}

		// Jobs.
		planned := make([]*plannedJob, 0, len(p.Jobs))
		plannedBy := make(map[JobRef]*plannedJob, len(p.Jobs))
		now := s.clock.Now()
		var zones schedule.Zones
		for _, j := range p.Jobs {
			r := JobRef{j.Group, j.Name}
			if j.Group == "" || plannedBy[r] != nil || !declaredJobs[r] {
				continue
			}
			spec := j.JobSpec
			spec.Name, spec.ChildJobIDs, spec.GroupID = j.Name, nil, -1
			if g, ok := groups[j.Group]; ok {
				spec.GroupID = g.ID
			} else if _, ok := declared[j.Group]; !ok {
				continue // the group's problem is reported once
			}
			f, sched, err := s.checkJobFields(spec, &zones)
			if err != nil {
				probs.job(r, err)
				continue
			}
			// Pinned targets are targets of the job's group as this plan
			// leaves it (its declared members, else its current ones).
			pinGroup := store.Group{AppName: j.Group}
			if g, ok := groups[j.Group]; ok {
				pinGroup = g
			}
			if def, ok := newGroups[j.Group]; ok {
				pinGroup.Members = def.Members
			}
			if err := s.checkPinnedInGroup(ctx, tx, pinGroup, f.PinnedTargets); err != nil {
				probs.job(r, err)
				continue
			}
			if len(j.Children) > 32 {
				probs.job(r, invalid("children", "at most 32 child jobs, got %d", len(j.Children)))
				continue
			}
			bad := false
			names := make([]string, len(j.Children))
			for i, c := range j.Children {
				names[i] = c.String()
				if c == r {
					probs.job(r, invalid(fmt.Sprintf("children[%d]", i), "a job cannot be its own child"))
					bad = true
				} else if _, ok := known.byRef[c]; !ok && !declaredJobs[c] {
					probs.job(r, invalid(fmt.Sprintf("children[%d]", i), "job %s does not exist and is not declared; declare it, or name an existing job as app_name/name", c))
					bad = true
				}
			}
			if bad {
				continue
			}
			pj := &plannedJob{ref: r, fields: f, sched: sched, enabled: j.Enabled, children: j.Children, def: defOfFields(f, names, j.Enabled)}
			if cur, ok := known.byRef[r]; ok && inScope[r.Group] {
				pj.cur = &cur
			}
			// A child runs when its parent succeeds: a new link needs
			// jobs.operate on the child's group.
			linked := map[JobRef]bool{}
			if pj.cur != nil {
				for _, id := range pj.cur.ChildJobIDs {
					linked[known.refOf[id]] = true
				}
			}
			for i, c := range j.Children {
				if g, ok := groups[c.Group]; ok && !linked[c] {
					if err := authorize(access.PermJobsOperate, g.ID); err != nil {
						probs.job(r, invalid(fmt.Sprintf("children[%d]", i), "linking %s as a child triggers it whenever this job succeeds, which needs jobs.operate on group %q: %v", c, c.Group, err))
						bad = true
					}
				}
			}
			if bad {
				continue
			}
			if pj.enabled && (pj.cur == nil || !pj.cur.Enabled || schedChanged(*pj.cur, f)) {
				if _, err := firstFire(f.ScheduleType, sched, now); err != nil {
					var ve *ValidationError
					if errors.As(err, &ve) && ve.Field == "schedule_type" {
						ve.Field, ve.Message = "enabled", "a job with schedule_type none cannot be enabled: it runs only when triggered; set enabled: false or give it a schedule"
					}
					probs.job(r, err)
					continue
				}
			}
			planned = append(planned, pj)
			plannedBy[r] = pj
		}

		// Deletes: the jobs of the groups in scope that are not declared.
		var deletes []store.Job
		if p.Prune {
			for _, j := range curJobs {
				if !declaredJobs[known.refOf[j.ID]] {
					deletes = append(deletes, j)
				}
			}
		}
		deleted := make(map[int64]bool, len(deletes))
		for _, d := range deletes {
			deleted[d.ID] = true
		}
		if len(probs) == 0 {
			if cyc := findChildCycle(planned, known, deleted); cyc != "" {
				probs = append(probs, ApplyProblem{Kind: "job", Group: strings.SplitN(cyc, "/", 2)[0], Name: strings.SplitN(cyc, "/", 2)[1],
					Field: "children", Message: "child jobs would form a cycle: " + cyc})
			}
		}
		if len(probs) > 0 {
			return &ApplyInvalidError{Problems: probs}
		}

		// The plan.
		plan.Changes = append(plan.Changes, groupChanges...)
		for _, pj := range planned {
			c := Change{Kind: "job", Group: pj.ref.Group, Name: pj.ref.Name}
			if pj.cur == nil {
				pj.op = OpCreate
			} else {
				before := known.defOf(*pj.cur)
				c.Version = versionOf(before)
				pj.op = OpUnchanged
				if d := diffDefs(before, pj.def); len(d) > 0 {
					pj.op, c.Diff, pj.diff = OpUpdate, d, d
				}
			}
			c.Op = pj.op
			plan.Changes = append(plan.Changes, c)
		}
		for _, d := range deletes {
			r := known.refOf[d.ID]
			plan.Changes = append(plan.Changes, Change{Op: OpDelete, Kind: "job", Group: r.Group, Name: r.Name, Version: versionOf(known.defOf(d))})
		}
		if !p.Write {
			return nil
		}
		if p.Expect != nil {
			if err := checkExpected(plan, p.Expect); err != nil {
				return err
			}
		}
		return s.writePlan(ctx, tx, plan, planned, deletes, declared, newGroups, groups, known)
	})
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			var pc *PlanConflictError
			if !errors.As(err, &pc) {
				return Plan{}, &PlanConflictError{Objects: []string{"a job was created by someone else in between (a name is taken)"}}
			}
		}
		return Plan{}, err
	}
	plan.Applied = p.Write
	if p.Write {
		for _, c := range plan.Changes {
			if c.Kind == "group" && c.Op != OpUnchanged {
				s.changed()
				break
			}
		}
	}
	return plan, nil
}

func schedChanged(cur store.Job, f store.JobFields) bool {
	return f.ScheduleType != cur.ScheduleType || f.ScheduleConf != cur.ScheduleConf || f.TimeZone != cur.TimeZone ||
		f.Window(f.Name) != cur.Window(cur.Name)
}

// checkGroupDecl validates a declared group into its definition.
func (s *Service) checkGroupDecl(ctx context.Context, g ApplyGroup) (groupDef, error) {
	if err := checkText("title", g.Title, 0, MaxGroupTitle, false); err != nil {
		return groupDef{}, err
	}
	members, err := s.checkMembers(ctx, g.AppName, g.Members)
	if err != nil {
		return groupDef{}, err
	}
	if _, err := checkExecutorSettings("", g.Protocol); err != nil {
		return groupDef{}, err
	}
	def := groupDef{Title: g.Title, Members: members, Protocol: g.Protocol, AcceptRegistrations: defaultAcceptRegistrations(members)}
	if g.AcceptRegistrations != nil {
		def.AcceptRegistrations = *g.AcceptRegistrations
	}
	if def.FailureDestination, err = checkFailureDestination(g.FailureDestination); err != nil {
		return groupDef{}, err
	}
	return def, nil
}

// checkExpected compares the plan with the one the caller saw.
func checkExpected(plan Plan, expect []Change) error {
	key := func(c Change) string { return c.Kind + " " + c.Ref() }
	exp := make(map[string]Change, len(expect))
	for _, e := range expect {
		if e.Op != OpUnchanged {
			exp[key(e)] = e
		}
	}
	var stale []string
	seen := map[string]bool{}
	for _, c := range plan.Changes {
		k := key(c)
		seen[k] = true
		e, ok := exp[k]
		switch {
		case c.Op == OpUnchanged && !ok:
		case !ok, e.Op != c.Op, e.Version != c.Version:
			stale = append(stale, c.Ref())
		}
	}
	for k, e := range exp {
		if !seen[k] {
			stale = append(stale, e.Ref())
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		return &PlanConflictError{Objects: stale}
	}
	return nil
}

// writePlan writes a checked plan on tx: groups, new jobs (in multi-row
// inserts), their child links, updates, deletes, and an audit event per change.
func (s *Service) writePlan(ctx context.Context, tx *store.Store, plan Plan, planned []*plannedJob, deletes []store.Job,
	declared map[string]ApplyGroup, newGroups map[string]groupDef, groups map[string]store.Group, known *jobIndex) error {
	now := s.clock.Now()
	nowMs := now.UnixMilli()
	var events []store.AuditEvent
	event := func(e auditEntry) error {
		ev, err := s.auditEvent(ctx, e)
		if err != nil {
			return err
		}
		events = append(events, ev)
		return nil
	}
	for _, c := range plan.Changes {
		if c.Kind != "group" || c.Op == OpUnchanged {
			continue
		}
		def := newGroups[c.Group]
		es := store.GroupExecutorSettings{Protocol: def.Protocol, AcceptRegistrations: def.AcceptRegistrations}
		if c.Op == OpCreate {
			g, err := tx.GroupCreate(ctx, store.GroupCreateParams{AppName: c.Group, Title: def.Title, Members: def.Members, GroupExecutorSettings: es,
				FailureDestination: def.FailureDestination, NowMs: nowMs})
			if err != nil {
				return err
			}
			groups[g.AppName] = g
			known.appOf[g.ID] = g.AppName
			if err := event(auditEntry{Action: ActGroupCreate, ObjectType: "group", ObjectID: g.ID, GroupID: g.ID, Changes: diffMap(diffDefs(nil, def))}); err != nil {
				return err
			}
			continue
		}
		cur := groups[c.Group]
		es.AccessToken = cur.AccessToken // not declared: kept
		g, err := tx.GroupUpdate(ctx, store.GroupUpdateParams{ID: cur.ID, Title: def.Title, Members: def.Members, GroupExecutorSettings: es,
			FailureDestination: def.FailureDestination, NowMs: nowMs})
		if err != nil {
			return err
		}
		groups[g.AppName] = g
		if err := event(auditEntry{Action: ActGroupUpdate, ObjectType: "group", ObjectID: g.ID, GroupID: g.ID, Changes: diffMap(c.Diff)}); err != nil {
			return err
		}
	}

	// New jobs, with the child links that exist already; links to jobs
	// created here follow once those have ids.
	idOf := func(r JobRef) (int64, bool) {
		if j, ok := known.byRef[r]; ok {
			return j.ID, true
		}
		return 0, false
	}
	var creates []store.JobCreateParams
	var created []*plannedJob
	var linkLater []*plannedJob
	for _, pj := range planned {
		if pj.op != OpCreate {
			continue
		}
		f := pj.fields
		f.GroupID = groups[pj.ref.Group].ID
		f.ChildJobIDs = nil
		later := false
		for _, c := range pj.children {
			if id, ok := idOf(c); ok {
				f.ChildJobIDs = append(f.ChildJobIDs, id)
			} else {
				later = true
			}
		}
		if later {
			f.ChildJobIDs = nil
			linkLater = append(linkLater, pj)
		}
		cp := store.JobCreateParams{JobFields: f, Enabled: pj.enabled, NowMs: nowMs}
		if pj.enabled {
			next, err := firstFire(f.ScheduleType, pj.sched, now)
			if err != nil {
				return err
			}
			cp.NextFireMs = next
		}
		pj.fields = f
		creates = append(creates, cp)
		created = append(created, pj)
	}
	ids, err := tx.JobInsertMany(ctx, creates)
	if err != nil {
		return err
	}
	for i, pj := range created {
		j := store.Job{ID: ids[i], GroupID: pj.fields.GroupID, Name: pj.ref.Name}
		known.add(j)
		if err := event(auditEntry{Action: ActJobCreate, ObjectType: "job", ObjectID: ids[i], GroupID: j.GroupID, Changes: diffMap(diffDefs(nil, pj.def))}); err != nil {
			return err
		}
	}
	resolve := func(pj *plannedJob) []int64 {
		out := make([]int64, 0, len(pj.children))
		for _, c := range pj.children {
			id, _ := idOf(c)
			out = append(out, id)
		}
		return out
	}
	links := make(map[int64][]int64, len(linkLater))
	for _, pj := range linkLater {
		links[known.byRef[pj.ref].ID] = resolve(pj)
	}
	if err := tx.JobSetChildrenMany(ctx, links); err != nil {
		return err
	}

	// Updates.
	for _, pj := range planned {
		if pj.op != OpUpdate {
			continue
		}
		cur := *pj.cur
		f := pj.fields
		f.GroupID = cur.GroupID
		f.ChildJobIDs = resolve(pj)
		rp := store.JobReplaceParams{ID: cur.ID, JobFields: f, Enabled: pj.enabled, NowMs: nowMs}
		switch {
		case pj.enabled && (!cur.Enabled || schedChanged(cur, f)):
			next, err := firstFire(f.ScheduleType, pj.sched, now)
			if err != nil {
				return err
			}
			rp.NextFireMs = &next
		case !pj.enabled && cur.Enabled:
			zero := int64(0)
			rp.NextFireMs = &zero
		}
		if err := tx.JobReplace(ctx, rp); err != nil {
			return err
		}
		if err := event(auditEntry{Action: ActJobUpdate, ObjectType: "job", ObjectID: cur.ID, GroupID: cur.GroupID, Changes: diffMap(pj.diff)}); err != nil {
			return err
		}
	}

	// Deletes.
	if len(deletes) > 0 {
		delIDs := make([]int64, len(deletes))
		for i, d := range deletes {
			delIDs[i] = d.ID
			if err := event(auditEntry{Action: ActJobDelete, ObjectType: "job", ObjectID: d.ID, GroupID: d.GroupID, Changes: map[string]any{"name": d.Name}}); err != nil {
				return err
			}
		}
		if err := tx.JobDeleteMany(ctx, delIDs); err != nil {
			return err
		}
	}
	return tx.AuditAppendMany(ctx, events)
}

func diffMap(d map[string]FieldChange) map[string]any {
	out := make(map[string]any, len(d))
	for k, v := range d {
		out[k] = map[string]any{"before": v.Before, "after": v.After}
	}
	return out
}

// jobIndex names jobs by id and identity.
type jobIndex struct {
	appOf map[int64]string // group id -> app name
	byRef map[JobRef]store.Job
	refOf map[int64]JobRef
}

func newJobIndex(appOf map[int64]string) *jobIndex {
	return &jobIndex{appOf: appOf, byRef: map[JobRef]store.Job{}, refOf: map[int64]JobRef{}}
}

func (x *jobIndex) add(j store.Job) {
	r := JobRef{Group: x.appOf[j.GroupID], Name: j.Name}
	x.byRef[r] = j
	x.refOf[j.ID] = r
}

// loadChildren reads the child jobs the known jobs name that are not known
// yet, until every link can be named (so cycles can be followed).
func (x *jobIndex) loadChildren(ctx context.Context, tx *store.Store) error {
	for round := 0; round < 64; round++ {
		var missing []int64
		seen := map[int64]bool{}
		for _, j := range x.byRef {
			for _, c := range j.ChildJobIDs {
				if _, ok := x.refOf[c]; !ok && !seen[c] {
					seen[c] = true
					missing = append(missing, c)
				}
			}
		}
		if len(missing) == 0 {
			return nil
		}
		got, err := tx.JobGetMany(ctx, missing)
		if err != nil {
			return err
		}
		if len(got) == 0 {
			return nil // dangling links: named by id below
		}
		for _, j := range got {
			x.add(j)
		}
	}
	return nil
}

// childNames names a stored job's children ("#ID" for a link to a job that
// is gone).
func (x *jobIndex) childNames(j store.Job) []string {
	out := make([]string, len(j.ChildJobIDs))
	for i, c := range j.ChildJobIDs {
		if r, ok := x.refOf[c]; ok {
			out[i] = r.String()
		} else {
			out[i] = fmt.Sprintf("#%d", c)
		}
	}
	return out
}

func (x *jobIndex) defOf(j store.Job) jobDef {
	return defOfFields(jobFieldsOf(j), x.childNames(j), j.Enabled)
}

// findChildCycle looks for a cycle of child links in the state the plan
// leaves: declared jobs with their declared children, other jobs as stored.
// It returns the cycle as "a/x -> b/y -> a/x", or "".
func findChildCycle(planned []*plannedJob, known *jobIndex, deleted map[int64]bool) string {
	edges := map[JobRef][]JobRef{}
	for r, j := range known.byRef {
		if deleted[j.ID] {
			continue
		}
		for _, c := range j.ChildJobIDs {
			if cr, ok := known.refOf[c]; ok {
				edges[r] = append(edges[r], cr)
			}
		}
	}
	for _, pj := range planned {
		edges[pj.ref] = pj.children
	}
	const (
		white = iota
		grey
		black
	)
	color := map[JobRef]int{}
	var stack []JobRef
	var found string
	var visit func(r JobRef) bool
	visit = func(r JobRef) bool {
		color[r] = grey
		stack = append(stack, r)
		for _, c := range edges[r] {
			switch color[c] {
			case grey:
				var chain []string
				for i := len(stack) - 1; i >= 0; i-- {
					if stack[i] == c {
						for _, s := range stack[i:] {
							chain = append(chain, s.String())
						}
						break
					}
				}
				found = strings.Join(append(chain, c.String()), " -> ")
				return true
			case white:
				if visit(c) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[r] = black
		return false
	}
	for _, pj := range planned {
		if color[pj.ref] == white && visit(pj.ref) {
			return found
		}
	}
	return ""
}

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

// firesAnew tells whether the plan (re)computes the job's next fire time:
// it is enabled and new, or was disabled, or its schedule changes.
func (pj *plannedJob) firesAnew() bool {
	return pj.enabled && (pj.cur == nil || !pj.cur.Enabled || schedChanged(*pj.cur, pj.fields))
}

// Apply plans a declaration and, with p.Write, applies the plan in one
// transaction. An invalid declaration is *ApplyInvalidError (every problem
// at once), a stale Expect *PlanConflictError, a missing permission
// *access.Denied; in each case nothing changed.
func (s *Service) Apply(ctx context.Context, p ApplyParams) (Plan, error) {
	a := newApplyRun(s, p)
	a.checkDeclaration()
	if err := s.st.Tx(ctx, func(tx *store.Store) error { return a.run(ctx, tx) }); err != nil {
		return Plan{}, applyError(err)
	}
	a.plan.Applied = p.Write
	if p.Write && a.plan.changesGroups() {
		s.changed()
	}
	return a.plan, nil
}

// applyError names a conflict on a unique key (a job created by someone
// else in between) as a plan conflict.
func applyError(err error) error {
	var pc *PlanConflictError
	if errors.Is(err, store.ErrConflict) && !errors.As(err, &pc) {
		return &PlanConflictError{Objects: []string{"a job was created by someone else in between (a name is taken)"}}
	}
	return err
}

// changesGroups tells whether the plan creates or updates a group.
func (p Plan) changesGroups() bool {
	for _, c := range p.Changes {
		if c.Kind == "group" && c.Op != OpUnchanged {
			return true
		}
	}
	return false
}

// applyRun is one Apply: the declaration, what was read of the stored
// state, and the plan as its steps build it.
type applyRun struct {
	s         *Service
	p         ApplyParams
	authorize func(perm access.Perm, groupID int64) error
	probs     problems

	// The declaration as checked before the transaction.
	declared     map[string]ApplyGroup // declared groups by app name
	declaredJobs map[JobRef]bool
	scope        []string // app names of the groups covered, first named first
	inScope      map[string]bool

	// The stored state, read in the transaction.
	tx      *store.Store
	groups  map[string]store.Group // the groups visible to the caller, by app name
	appOf   map[int64]string       // every group's app name, by id
	curJobs []store.Job            // the jobs of the groups in scope
	known   *jobIndex              // those jobs and the child jobs they and the declaration name

	// The plan.
	groupChanges []Change
	newGroups    map[string]groupDef // groups created or updated, as declared
	planned      []*plannedJob
	deletes      []store.Job
	plan         Plan
	audit        []store.AuditEvent // written last, in one insert
}

func newApplyRun(s *Service, p ApplyParams) *applyRun {
	authorize := p.Authorize
	if authorize == nil {
		authorize = func(access.Perm, int64) error { return nil }
	}
	return &applyRun{s: s, p: p, authorize: authorize,
		declared: map[string]ApplyGroup{}, declaredJobs: make(map[JobRef]bool, len(p.Jobs)), inScope: map[string]bool{},
		newGroups: map[string]groupDef{}}
}

// run is the part of Apply in the transaction: read, authorize, plan, and
// with p.Write check the expected plan and write.
func (a *applyRun) run(ctx context.Context, tx *store.Store) error {
	a.tx = tx
	if err := a.loadGroups(ctx); err != nil {
		return err
	}
	if err := a.authorizeScope(); err != nil {
		return err
	}
	if err := a.planGroups(ctx); err != nil {
		return err
	}
	a.reportUnknownGroups()
	if err := a.loadJobs(ctx); err != nil {
		return err
	}
	a.planJobs(ctx)
	a.planDeletes()
	if err := a.checkProblems(); err != nil {
		return err
	}
	a.plan = a.buildPlan()
	if !a.p.Write {
		return nil
	}
	if a.p.Expect != nil {
		if err := checkExpected(a.plan, a.p.Expect); err != nil {
			return err
		}
	}
	return a.write(ctx)
}

// checkDeclaration checks what needs no stored state: groups and jobs
// declared once, every job in a group; it collects the scope.
func (a *applyRun) checkDeclaration() {
	for _, g := range a.p.Groups {
		if _, dup := a.declared[g.AppName]; dup {
			a.probs.group(g.AppName, invalid("app_name", "the group is declared twice; declare it once"))
			continue
		}
		if err := a.s.checkAppName(g.AppName); err != nil {
			a.probs.group(g.AppName, err)
			continue
		}
		a.declared[g.AppName] = g
	}
	for _, app := range a.p.Scope {
		a.addScope(app)
	}
	for _, g := range a.p.Groups {
		a.addScope(g.AppName)
	}
	for _, j := range a.p.Jobs {
		r := JobRef{j.Group, j.Name}
		switch {
		case j.Group == "":
			a.probs.job(r, invalid("group", "is required: the app name of the job's group"))
			continue
		case a.declaredJobs[r]:
			a.probs.job(r, invalid("name", "job %s is declared twice; job names are unique within a group", r))
			continue
		}
		a.declaredJobs[r] = true
		a.addScope(j.Group)
	}
}

func (a *applyRun) addScope(app string) {
	if app != "" && !a.inScope[app] {
		a.inScope[app] = true
		a.scope = append(a.scope, app)
	}
}

// loadGroups reads the groups. A group the caller cannot read is, to this
// plan, a group that does not exist: neither it nor its jobs may be told
// apart from absent ones (creating a group of its name needs
// groups.create, which only those who see every group hold).
func (a *applyRun) loadGroups(ctx context.Context) error {
	all, err := a.tx.GroupList(ctx)
	if err != nil {
		return err
	}
	a.groups = make(map[string]store.Group, len(all))
	a.appOf = make(map[int64]string, len(all))
	for _, g := range all {
		a.appOf[g.ID] = g.AppName
		if a.authorize(access.PermJobsRead, g.ID) == nil {
			a.groups[g.AppName] = g
		}
	}
	return nil
}

// authorizeScope checks the caller's permission on the jobs of every
// existing group in scope, before anything else is looked at or changed.
func (a *applyRun) authorizeScope() error {
	jobPerm := access.PermJobsRead
	if a.p.Write {
		jobPerm = access.PermJobsWrite
	}
	for _, app := range a.scope {
		if g, ok := a.groups[app]; ok {
			if err := a.authorize(jobPerm, g.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// authorizeWrite checks a permission the write needs; a plan only read
// needs none of them.
func (a *applyRun) authorizeWrite(perm access.Perm, groupID int64) error {
	if !a.p.Write {
		return nil
	}
	return a.authorize(perm, groupID)
}

// planGroups plans each declared group: a create, an update or unchanged.
func (a *applyRun) planGroups(ctx context.Context) error {
	for _, decl := range a.p.Groups {
		if _, ok := a.declared[decl.AppName]; !ok {
			continue // a problem already
		}
		if err := a.planGroup(ctx, decl); err != nil {
			return err
		}
	}
	return nil
}

func (a *applyRun) planGroup(ctx context.Context, decl ApplyGroup) error {
	def, err := a.s.checkGroupDecl(ctx, decl)
	if err != nil {
		a.probs.group(decl.AppName, err)
		return nil
	}
	cur, exists := a.groups[decl.AppName]
	if !exists {
		if err := a.authorizeWrite(access.PermGroupsCreate, 0); err != nil {
			return err
		}
		a.newGroups[decl.AppName] = def
		a.groupChanges = append(a.groupChanges, Change{Op: OpCreate, Kind: "group", Group: decl.AppName})
		return nil
	}
	if decl.AcceptRegistrations == nil {
		def.AcceptRegistrations = cur.AcceptRegistrations
	}
	before := groupDefOf(cur)
	c := Change{Op: OpUnchanged, Kind: "group", Group: decl.AppName, Version: versionOf(before)}
	if d := diffDefs(before, def); len(d) > 0 {
		if err := a.authorizeWrite(access.PermGroupsEdit, cur.ID); err != nil {
			return err
		}
		c.Op, c.Diff = OpUpdate, d
		a.newGroups[decl.AppName] = def
	}
	a.groupChanges = append(a.groupChanges, c)
	return nil
}

// reportUnknownGroups reports each group in scope that neither exists (to
// the caller) nor is declared.
func (a *applyRun) reportUnknownGroups() {
	for _, app := range a.scope {
		_, exists := a.groups[app]
		_, declared := a.declared[app]
		if !exists && !declared {
			a.probs.group(app, invalid("app_name", "group %q does not exist or is not visible to you; declare it under groups: or create it first", app))
		}
	}
}

// loadJobs reads the current jobs of the groups in scope (one read) and
// the child jobs outside the scope: by id those the current jobs name, by
// name those the declaration names.
func (a *applyRun) loadJobs(ctx context.Context) error {
	var scopeIDs []int64
	for _, app := range a.scope {
		if g, ok := a.groups[app]; ok {
			scopeIDs = append(scopeIDs, g.ID)
		}
	}
	curJobs, err := a.tx.JobListGroups(ctx, scopeIDs, a.p.Write)
	if err != nil {
		return err
	}
	a.curJobs = curJobs
	a.known = newJobIndex(a.appOf)
	for _, j := range curJobs {
		a.known.add(j)
	}
	if err := a.known.loadChildren(ctx, a.tx); err != nil {
		return err
	}
	if err := a.loadDeclaredChildren(ctx); err != nil {
		return err
	}
	return a.known.loadChildren(ctx, a.tx)
}

// loadDeclaredChildren reads the child jobs the declaration names in
// visible groups outside the scope.
func (a *applyRun) loadDeclaredChildren(ctx context.Context) error {
	for _, j := range a.p.Jobs {
		for _, c := range j.Children {
			if _, ok := a.known.byRef[c]; ok || a.declaredJobs[c] {
				continue
			}
			g, ok := a.groups[c.Group]
			if !ok || a.inScope[c.Group] {
				continue
			}
			cj, err := a.tx.JobGetByName(ctx, g.AppName, c.Name)
			switch {
			case err == nil:
				a.known.add(cj)
			case !errors.Is(err, store.ErrNotFound):
				return err
			}
		}
	}
	return nil
}

// planJobs validates each declared job into a planned one; a job with a
// problem is reported and left out.
func (a *applyRun) planJobs(ctx context.Context) {
	a.planned = make([]*plannedJob, 0, len(a.p.Jobs))
	plannedBy := make(map[JobRef]*plannedJob, len(a.p.Jobs))
	now := a.s.clock.Now()
	var zones schedule.Zones
	for _, j := range a.p.Jobs {
		r := JobRef{j.Group, j.Name}
		if j.Group == "" || plannedBy[r] != nil || !a.declaredJobs[r] {
			continue
		}
		if pj := a.planJob(ctx, j, now, &zones); pj != nil {
			a.planned = append(a.planned, pj)
			plannedBy[r] = pj
		}
	}
}

// planJob checks one declared job: its fields, its pinned targets, its
// children and the permission to link them, and that it can be enabled.
// It returns nil if the job has a problem (reported).
func (a *applyRun) planJob(ctx context.Context, j ApplyJob, now time.Time, zones *schedule.Zones) *plannedJob {
	r := JobRef{j.Group, j.Name}
	spec := j.JobSpec
	spec.Name, spec.ChildJobIDs, spec.GroupID = j.Name, nil, -1
	if g, ok := a.groups[j.Group]; ok {
		spec.GroupID = g.ID
	} else if _, ok := a.declared[j.Group]; !ok {
		return nil // the group's problem is reported once
	}
	f, sched, err := a.s.checkJobFields(spec, zones)
	if err != nil {
		a.probs.job(r, err)
		return nil
	}
	if err := a.s.checkPinnedInGroup(ctx, a.tx, a.groupAsPlanned(j.Group), f.PinnedTargets); err != nil {
		a.probs.job(r, err)
		return nil
	}
	if !a.checkChildren(r, j.Children) {
		return nil
	}
	names := make([]string, len(j.Children))
	for i, c := range j.Children {
		names[i] = c.String()
	}
	pj := &plannedJob{ref: r, fields: f, sched: sched, enabled: j.Enabled, children: j.Children, def: defOfFields(f, names, j.Enabled)}
	if cur, ok := a.known.byRef[r]; ok && a.inScope[r.Group] {
		pj.cur = &cur
	}
	if !a.authorizeNewLinks(pj) {
		return nil
	}
	if err := checkCanFire(pj, now); err != nil {
		a.probs.job(r, err)
		return nil
	}
	return pj
}

// groupAsPlanned is a job's group as the plan leaves it, for its pinned
// targets: its declared members, else its current ones.
func (a *applyRun) groupAsPlanned(app string) store.Group {
	g := store.Group{AppName: app}
	if cur, ok := a.groups[app]; ok {
		g = cur
	}
	if def, ok := a.newGroups[app]; ok {
		g.Members = def.Members
	}
	return g
}

// checkChildren checks that a job's children are at most 32, not the job
// itself, and exist or are declared; it reports every problem.
func (a *applyRun) checkChildren(r JobRef, children []JobRef) bool {
	if len(children) > 32 {
		a.probs.job(r, invalid("children", "at most 32 child jobs, got %d", len(children)))
		return false
	}
	ok := true
	for i, c := range children {
		if c == r {
			a.probs.job(r, invalid(fmt.Sprintf("children[%d]", i), "a job cannot be its own child"))
			ok = false
		} else if _, known := a.known.byRef[c]; !known && !a.declaredJobs[c] {
			a.probs.job(r, invalid(fmt.Sprintf("children[%d]", i), "job %s does not exist and is not declared; declare it, or name an existing job as app_name/name", c))
			ok = false
		}
	}
	return ok
}

// authorizeNewLinks checks the children a job does not link yet: a child
// runs when its parent succeeds, so a new link needs jobs.operate on the
// child's group. It reports every link refused.
func (a *applyRun) authorizeNewLinks(pj *plannedJob) bool {
	linked := map[JobRef]bool{}
	if pj.cur != nil {
		for _, id := range pj.cur.ChildJobIDs {
			linked[a.known.refOf[id]] = true
		}
	}
	ok := true
	for i, c := range pj.children {
		g, exists := a.groups[c.Group]
		if !exists || linked[c] {
			continue
		}
		if err := a.authorize(access.PermJobsOperate, g.ID); err != nil {
			a.probs.job(pj.ref, invalid(fmt.Sprintf("children[%d]", i), "linking %s as a child triggers it whenever this job succeeds, which needs jobs.operate on group %q: %v", c, c.Group, err))
			ok = false
		}
	}
	return ok
}

// checkCanFire checks that a job the plan (re)schedules has a next fire time.
func checkCanFire(pj *plannedJob, now time.Time) error {
	if !pj.firesAnew() {
		return nil
	}
	_, err := firstFire(pj.fields.ScheduleType, pj.sched, now)
	var ve *ValidationError
	if errors.As(err, &ve) && ve.Field == "schedule_type" {
		ve.Field, ve.Message = "enabled", "a job with schedule_type none cannot be enabled: it runs only when triggered; set enabled: false or give it a schedule"
	}
	return err
}

// planDeletes lists, with p.Prune, the jobs of the groups in scope that
// are not declared.
func (a *applyRun) planDeletes() {
	if !a.p.Prune {
		return
	}
	for _, j := range a.curJobs {
		if !a.declaredJobs[a.known.refOf[j.ID]] {
			a.deletes = append(a.deletes, j)
		}
	}
}

// checkProblems fails with every problem found; with none, it looks for a
// cycle of child links in the state the plan leaves.
func (a *applyRun) checkProblems() error {
	if len(a.probs) == 0 {
		deleted := make(map[int64]bool, len(a.deletes))
		for _, d := range a.deletes {
			deleted[d.ID] = true
		}
		if cyc := findChildCycle(a.planned, a.known, deleted); cyc != "" {
			group, name, _ := strings.Cut(cyc, "/")
			a.probs = append(a.probs, ApplyProblem{Kind: "job", Group: group, Name: name,
				Field: "children", Message: "child jobs would form a cycle: " + cyc})
		}
	}
	if len(a.probs) > 0 {
		return &ApplyInvalidError{Problems: a.probs}
	}
	return nil
}

// buildPlan lists the changes: groups, jobs in the order declared, deletes.
// It records each planned job's op and diff for the write.
func (a *applyRun) buildPlan() Plan {
	var plan Plan
	plan.Changes = append(plan.Changes, a.groupChanges...)
	for _, pj := range a.planned {
		c := Change{Kind: "job", Group: pj.ref.Group, Name: pj.ref.Name}
		if pj.cur == nil {
			pj.op = OpCreate
		} else {
			before := a.known.defOf(*pj.cur)
			c.Version = versionOf(before)
			pj.op = OpUnchanged
			if d := diffDefs(before, pj.def); len(d) > 0 {
				pj.op, c.Diff, pj.diff = OpUpdate, d, d
			}
		}
		c.Op = pj.op
		plan.Changes = append(plan.Changes, c)
	}
	for _, d := range a.deletes {
		r := a.known.refOf[d.ID]
		plan.Changes = append(plan.Changes, Change{Op: OpDelete, Kind: "job", Group: r.Group, Name: r.Name, Version: versionOf(a.known.defOf(d))})
	}
	return plan
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
	def := groupDef{Title: g.Title, Members: members, Protocol: g.Protocol, AcceptRegistrations: s.defaultAcceptRegistrations(members)}
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

// idOf is a known job's id.
func (x *jobIndex) idOf(r JobRef) (int64, bool) {
	j, ok := x.byRef[r]
	return j.ID, ok
}

// idsOf are the ids of jobs named (0 for one not known).
func (x *jobIndex) idsOf(refs []JobRef) []int64 {
	out := make([]int64, 0, len(refs))
	for _, r := range refs {
		id, _ := x.idOf(r)
		out = append(out, id)
	}
	return out
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

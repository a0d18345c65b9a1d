package access

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ringjob/ringjob/internal/kind"
)

// Role is a named set of permissions; the names are declared in
// internal/kind, so the REST API's clients check the same ones.
type Role = kind.Role

// The roles. RoleAdmin is global; the others are held per group.
const (
	RoleAdmin    = kind.RoleAdmin
	RoleOwner    = kind.RoleOwner
	RoleOperator = kind.RoleOperator
	RoleViewer   = kind.RoleViewer
)

// GroupRoles are the roles held per group, from the most to the least
// powerful.
var GroupRoles = []Role{RoleOwner, RoleOperator, RoleViewer}

// AllRoles lists every role.
var AllRoles = kind.Roles

// ParseRole checks a role name.
func ParseRole(s string) (Role, error) {
	for _, r := range AllRoles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("%q is not a role; use one of admin, owner, operator, viewer", s)
}

// Perm is one permission. Group permissions are checked against a group;
// system permissions only admins hold.
type Perm string

// Group permissions.
const (
	PermGroupsRead  Perm = "groups.read"  // see a group
	PermGroupsEdit  Perm = "groups.edit"  // edit a group's title, members, executor settings
	PermJobsRead    Perm = "jobs.read"    // see jobs and their next fires
	PermJobsWrite   Perm = "jobs.write"   // create, edit, delete jobs
	PermJobsOperate Perm = "jobs.operate" // trigger, start, stop jobs
	PermRunsRead    Perm = "runs.read"    // see runs and read their logs
	PermRunsKill    Perm = "runs.kill"    // kill runs
)

// System permissions (admin only).
const (
	PermGroupsCreate Perm = "groups.create" // create groups
	PermGroupsDelete Perm = "groups.delete" // delete groups
	PermUsersManage  Perm = "users.manage"  // users, service accounts, their tokens, role bindings
	PermAuditRead    Perm = "audit.read"    // read the audit log
	PermSystemRead   Perm = "system.read"   // executors, nodes, settings and other server-wide views
	PermSystemManage Perm = "system.manage" // server-wide settings
)

// rolePerms are the group permissions of each per-group role.
var rolePerms = map[Role][]Perm{
	RoleViewer:   {PermGroupsRead, PermJobsRead, PermRunsRead},
	RoleOperator: {PermGroupsRead, PermJobsRead, PermRunsRead, PermJobsOperate, PermRunsKill},
	RoleOwner:    {PermGroupsRead, PermJobsRead, PermRunsRead, PermJobsOperate, PermRunsKill, PermJobsWrite, PermGroupsEdit},
}

// GroupPerms lists the group permissions.
var GroupPerms = []Perm{PermGroupsRead, PermGroupsEdit, PermJobsRead, PermJobsWrite, PermJobsOperate, PermRunsRead, PermRunsKill}

// SystemPerms lists the permissions only admins hold.
var SystemPerms = []Perm{PermGroupsCreate, PermGroupsDelete, PermUsersManage, PermAuditRead, PermSystemRead, PermSystemManage}

// IsGroupPerm reports whether p is checked against a group.
func (p Perm) IsGroupPerm() bool {
	for _, g := range GroupPerms {
		if g == p {
			return true
		}
	}
	return false
}

// RoleGrants reports whether role r holds permission p (in the group it is
// bound to, for group roles).
func RoleGrants(r Role, p Perm) bool {
	if r == RoleAdmin {
		return true
	}
	for _, q := range rolePerms[r] {
		if q == p {
			return true
		}
	}
	return false
}

// PermsOf lists the permissions of a role, sorted.
func PermsOf(r Role) []Perm {
	var out []Perm
	if r == RoleAdmin {
		out = append(append(out, GroupPerms...), SystemPerms...)
	} else {
		out = append(out, rolePerms[r]...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Kind is what sort of principal acts.
type Kind string

// Principal kinds.
const (
	KindUser    Kind = "user"    // a person (local password or SSO)
	KindService Kind = "service" // a service account (tokens only)
	KindToken   Kind = "token"   // a server token with no owner (the first-start or configured admin token)
)

// Principal is who a request acts as and what it may do. It is immutable
// once built; callers share it freely.
type Principal struct {
	ID        int64  // principal id; 0 for KindToken
	Name      string // user or service account name; the token name for KindToken
	Kind      Kind
	TokenID   int64  // the API token used, 0 for a session
	TokenName string // its name
	SessionID int64  // the session used, 0 for a token
	CSRFToken string // the session's CSRF token
	SSOGroups []string
	admin     bool
	groups    map[int64]Role // the most powerful role per group
}

// NewPrincipal builds a principal from its role bindings: admin when any
// binding is admin; otherwise the most powerful role bound per group.
func NewPrincipal(base Principal, bindings []Binding) *Principal {
	p := base
	p.groups = map[int64]Role{}
	for _, b := range bindings {
		if b.Role == RoleAdmin {
			p.admin = true
			continue
		}
		if cur, ok := p.groups[b.GroupID]; !ok || rank(b.Role) > rank(cur) {
			p.groups[b.GroupID] = b.Role
		}
	}
	return &p
}

func rank(r Role) int {
	switch r {
	case RoleAdmin:
		return 4
	case RoleOwner:
		return 3
	case RoleOperator:
		return 2
	case RoleViewer:
		return 1
	}
	return 0
}

// Binding grants Role on GroupID (0 for admin) to a principal or to every
// member of an SSO group.
type Binding struct {
	ID          int64
	Role        Role
	GroupID     int64
	PrincipalID int64  // 0 when bound to SSOGroup
	SSOGroup    string // "" when bound to a principal
}

// IsAdmin reports whether the principal is an admin.
func (p *Principal) IsAdmin() bool { return p.admin }

// Can reports whether the principal holds perm on groupID (ignored for
// system permissions).
func (p *Principal) Can(perm Perm, groupID int64) bool {
	if p.admin {
		return true
	}
	if !perm.IsGroupPerm() {
		return false
	}
	r, ok := p.groups[groupID]
	return ok && RoleGrants(r, perm)
}

// CanSomewhere reports whether the principal holds perm on at least one
// group (or is admin): a list or a create is worth trying.
func (p *Principal) CanSomewhere(perm Perm) bool {
	if p.admin {
		return true
	}
	for _, r := range p.groups {
		if RoleGrants(r, perm) {
			return true
		}
	}
	return false
}

// GroupsWith lists the groups where the principal holds perm, sorted; all is
// true for an admin (every group, present and future).
func (p *Principal) GroupsWith(perm Perm) (ids []int64, all bool) {
	if p.admin {
		return nil, true
	}
	for g, r := range p.groups {
		if RoleGrants(r, perm) {
			ids = append(ids, g)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, false
}

// GroupRoles returns the principal's role per group (empty for an admin,
// who holds every permission everywhere).
func (p *Principal) GroupRoles() map[int64]Role {
	out := make(map[int64]Role, len(p.groups))
	for g, r := range p.groups {
		out[g] = r
	}
	return out
}

// Denied is the error of a refused permission check.
type Denied struct {
	Perm    Perm
	GroupID int64 // 0 for a system permission
}

func (d *Denied) Error() string {
	if d.GroupID != 0 {
		return fmt.Sprintf("permission denied: missing %s on group %d", d.Perm, d.GroupID)
	}
	if d.Perm.IsGroupPerm() {
		return fmt.Sprintf("permission denied: missing %s on any group", d.Perm)
	}
	return fmt.Sprintf("permission denied: missing %s (admin only)", d.Perm)
}

// Check returns a *Denied when the principal lacks perm on groupID.
func (p *Principal) Check(perm Perm, groupID int64) error {
	if p.Can(perm, groupID) {
		return nil
	}
	return &Denied{Perm: perm, GroupID: groupID}
}

// String names the principal for logs and audit rows.
func (p *Principal) String() string {
	var b strings.Builder
	b.WriteString(string(p.Kind))
	b.WriteString(":")
	b.WriteString(p.Name)
	return b.String()
}

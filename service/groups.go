package service

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// Group limits.
const (
	MinAppNameLen  = 4
	MaxAppNameLen  = 64
	MaxGroupTitle  = 128
	MaxGroupMember = 1000 // members per group
	MaxTargetLen   = 512  // characters of one target URI
)

var appNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// GroupCreateParams are the fields of a new group.
type GroupCreateParams struct {
	// AppName identifies the group (XXL-JOB's appname): 4..64 characters,
	// lowercase letters, digits and '-', starting with a letter; unique; fixed
	// once created.
	AppName string
	// Title is a display name, at most 128 characters.
	Title string
	// Members are static target URIs (local://NAME, http://host:port/,
	// lambda://REGION/FUNCTION ...), each checked with the target drivers.
	Members []string
	// ExecutorToken is the group's own XXL-JOB-ACCESS-TOKEN ("" = the global
	// executor token): 16..255 characters of letters, digits, '_' and '-'.
	ExecutorToken string
	// Protocol is "" (XXL-JOB 2.x–3.4 executors: /run) or "3.5" (/trigger,
	// XXL-JOB-APPNAME required).
	Protocol string
	// AcceptRegistrations lets HTTP executors register under AppName (with
	// ExecutorToken when set, else the global executor token). nil = the
	// default: yes when the group has no static members or an http(s) one,
	// no when its members are only Lambda functions or local commands, so
	// registrations never take such a group over.
	AcceptRegistrations *bool
	// FailureDestination receives the failure records of the group's jobs
	// that have none of their own (see JobSpec.FailureDestination); "" = none.
	FailureDestination string
}

// GroupUpdateParams replace a group's editable fields. The app name cannot
// change.
type GroupUpdateParams struct {
	ID int64
	// IfVersion makes the update conditional (If-Match): it is refused with
	// a *PreconditionError unless the group is still at this version (0: any).
	IfVersion int64
	// AppName is optional: "" or the group's current app name. Any other value
	// is refused, because the app name is fixed once the group exists.
	AppName string
	Title   string
	Members []string
	// ExecutorToken: nil keeps the group's token (which is never shown back,
	// so a form or an edited GET cannot carry it); "" clears it (the global
	// executor token applies). SetGroupExecutorToken and
	// RotateGroupExecutorToken change only the token.
	ExecutorToken *string
	Protocol      string
	// AcceptRegistrations: nil keeps the group's current setting.
	AcceptRegistrations *bool
	// FailureDestination: nil keeps the group's; "" clears it.
	FailureDestination *string
}

// defaultAcceptRegistrations is whether a new group takes registered
// executors when its creator did not say: only when it is (also) meant for
// executors, which register (a member whose targets speak the executor
// protocol, or no member at all).
func (s *Service) defaultAcceptRegistrations(members []string) bool {
	if len(members) == 0 {
		return true
	}
	for _, m := range members {
		if s.drivers.Capabilities(m).ExecutorProtocol {
			return true
		}
	}
	return false
}

// checkExecutorSettings validates a group's executor token and protocol.
func checkExecutorSettings(token, protocol string) (store.GroupExecutorSettings, error) {
	if token != "" {
		if len(token) < 16 || len(token) > 255 || strings.Trim(token, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			return store.GroupExecutorSettings{}, invalid("executor_token", "must be 16..255 characters of letters, digits, '_' and '-', or empty to use the global executor token")
		}
		if token == "default_token" {
			return store.GroupExecutorSettings{}, invalid("executor_token", "must not be XXL-JOB's shipped default_token")
		}
	}
	if !kind.Protocol(protocol).Valid() {
		return store.GroupExecutorSettings{}, invalid("protocol", "must be empty (XXL-JOB 2.x to 3.4 executors) or \"3.5\", got %q", protocol)
	}
	return store.GroupExecutorSettings{AccessToken: token, Protocol: protocol}, nil
}

// CreateGroup validates and creates a group. A taken app name is a
// *ConflictError.
func (s *Service) CreateGroup(ctx context.Context, p GroupCreateParams) (store.Group, error) {
	if err := s.checkAppName(p.AppName); err != nil {
		return store.Group{}, err
	}
	if err := checkText("title", p.Title, 0, MaxGroupTitle, false); err != nil {
		return store.Group{}, err
	}
	members, err := s.checkMembers(ctx, p.AppName, p.Members)
	if err != nil {
		return store.Group{}, err
	}
	es, err := checkExecutorSettings(p.ExecutorToken, p.Protocol)
	if err != nil {
		return store.Group{}, err
	}
	es.AcceptRegistrations = s.defaultAcceptRegistrations(members)
	if p.AcceptRegistrations != nil {
		es.AcceptRegistrations = *p.AcceptRegistrations
	}
	dest, err := checkFailureDestination(p.FailureDestination)
	if err != nil {
		return store.Group{}, err
	}
	var g store.Group
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		var err error
		if g, err = tx.GroupCreate(ctx, store.GroupCreateParams{AppName: p.AppName, Title: p.Title, Members: members, GroupExecutorSettings: es,
			FailureDestination: dest, NowMs: s.nowMs()}); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActGroupCreate, ObjectType: "group", ObjectID: g.ID, GroupID: g.ID, Changes: diffFields(nil, fieldsOf(g))})
	})
	if errors.Is(err, store.ErrConflict) {
		return store.Group{}, &ConflictError{Field: "app_name",
			Message: fmt.Sprintf("a group with app_name %q exists already; pick another app_name or update that group", p.AppName)}
	}
	if err != nil {
		return store.Group{}, fmt.Errorf("create group %q: %w", p.AppName, err)
	}
	s.changed()
	return g, nil
}

// GetGroup reads a group.
func (s *Service) GetGroup(ctx context.Context, id int64) (store.Group, error) {
	g, err := s.st.GroupGet(ctx, id)
	if err != nil {
		return store.Group{}, notFoundOr(err, "group", id, fmt.Sprintf("read group %d", id))
	}
	return g, nil
}

// GroupListParams page through groups (by id).
type GroupListParams struct {
	// OnlyGroups, when not nil, lists only these groups (what the caller may see).
	OnlyGroups []int64
	// NamePrefix keeps the groups whose app name or title starts with it.
	NamePrefix string
	Cursor     string
	Limit      int // 0 = DefaultPageLimit; at most MaxPageLimit
}

// ListGroups lists groups by id.
func (s *Service) ListGroups(ctx context.Context, p GroupListParams) (Page[store.Group], error) {
	limit, err := pageLimit(p.Limit)
	if err != nil {
		return Page[store.Group]{}, err
	}
	after, err := decodeCursor("g", p.Cursor)
	if err != nil {
		return Page[store.Group]{}, err
	}
	if err := checkText("name_prefix", p.NamePrefix, 0, MaxAppNameLen, false); err != nil {
		return Page[store.Group]{}, err
	}
	gs, err := s.st.GroupListPage(ctx, store.GroupListPageParams{AfterID: after, Limit: limit + 1, OnlyGroups: p.OnlyGroups, NamePrefix: p.NamePrefix})
	if err != nil {
		return Page[store.Group]{}, fmt.Errorf("list groups: %w", err)
	}
	return paginate(gs, limit, "g", func(g store.Group) int64 { return g.ID }), nil
}

// UpdateGroup replaces a group's title and members.
func (s *Service) UpdateGroup(ctx context.Context, p GroupUpdateParams) (store.Group, error) {
	if err := checkID("id", p.ID); err != nil {
		return store.Group{}, err
	}
	if err := checkText("title", p.Title, 0, MaxGroupTitle, false); err != nil {
		return store.Group{}, err
	}
	token := ""
	if p.ExecutorToken != nil {
		token = *p.ExecutorToken
	}
	es, err := checkExecutorSettings(token, p.Protocol)
	if err != nil {
		return store.Group{}, err
	}
	cur, err := s.GetGroup(ctx, p.ID)
	if err != nil {
		return store.Group{}, err
	}
	members, err := s.checkMembers(ctx, cur.AppName, p.Members)
	if err != nil {
		return store.Group{}, err
	}
	if p.ExecutorToken == nil {
		es.AccessToken = cur.AccessToken
	}
	if p.IfVersion != 0 && cur.Version != p.IfVersion {
		return store.Group{}, &PreconditionError{Resource: "group", ID: p.ID, Version: cur.Version}
	}
	if p.AppName != "" && p.AppName != cur.AppName {
		return store.Group{}, invalid("app_name", "cannot be changed (it is %q); leave it out, or create a new group with the new app_name and move the jobs", cur.AppName)
	}
	es.AcceptRegistrations = cur.AcceptRegistrations
	if p.AcceptRegistrations != nil {
		es.AcceptRegistrations = *p.AcceptRegistrations
	}
	dest := cur.FailureDestination
	if p.FailureDestination != nil {
		if dest, err = checkFailureDestination(*p.FailureDestination); err != nil {
			return store.Group{}, err
		}
	}
	var g store.Group
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		var err error
		if g, err = tx.GroupUpdate(ctx, store.GroupUpdateParams{ID: p.ID, IfVersion: p.IfVersion, Title: p.Title, Members: members, GroupExecutorSettings: es,
			FailureDestination: dest, NowMs: s.nowMs()}); err != nil {
			return err
		}
		changes := diffFields(fieldsOf(cur), fieldsOf(g))
		if how := tokenChange(cur.AccessToken, g.AccessToken, "set"); how != "" {
			changes["executor_token"] = how // both sides are masked: say what happened
		}
		return s.audit(ctx, tx, auditEntry{Action: ActGroupUpdate, ObjectType: "group", ObjectID: g.ID, GroupID: g.ID, Changes: changes})
	})
	if err != nil {
		return store.Group{}, notFoundOr(err, "group", p.ID, fmt.Sprintf("update group %d", p.ID))
	}
	s.changed()
	return g, nil
}

// tokenChange says how a group's executor token changed, for the audit log
// (which never holds the token): "" when it did not.
func tokenChange(before, after, how string) string {
	switch {
	case before == after:
		return ""
	case after == "":
		return "cleared"
	}
	return how
}

// SetGroupExecutorToken replaces only a group's executor token with one the
// caller chose (to match executors that already have an accessToken); ""
// clears it, so the global executor token applies. ifVersion as for
// UpdateGroup. The executor directory sees the new token at once:
// registrations and callbacks with the old one are refused from then on.
func (s *Service) SetGroupExecutorToken(ctx context.Context, id, ifVersion int64, token string) (store.Group, error) {
	if _, err := checkExecutorSettings(token, ""); err != nil {
		return store.Group{}, err
	}
	return s.replaceGroupToken(ctx, id, ifVersion, token, "set")
}

// RotateGroupExecutorToken gives a group a new executor token generated by
// the server and returns it: the only time it is shown. Executors of the
// group need it as their accessToken; with the old one they are refused
// from then on.
func (s *Service) RotateGroupExecutorToken(ctx context.Context, id, ifVersion int64) (store.Group, string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return store.Group{}, "", fmt.Errorf("generate an executor token: %w", err)
	}
	token := "rjg_" + base64.RawURLEncoding.EncodeToString(b)
	g, err := s.replaceGroupToken(ctx, id, ifVersion, token, "generated")
	return g, token, err
}

func (s *Service) replaceGroupToken(ctx context.Context, id, ifVersion int64, token, how string) (store.Group, error) {
	if err := checkID("id", id); err != nil {
		return store.Group{}, err
	}
	var g store.Group
	err := s.st.Tx(ctx, func(tx *store.Store) error {
		cur, err := tx.GroupGet(ctx, id)
		if err != nil {
			return err
		}
		if ifVersion != 0 && cur.Version != ifVersion {
			return &PreconditionError{Resource: "group", ID: id, Version: cur.Version}
		}
		es := cur.GroupExecutorSettings
		es.AccessToken = token
		if g, err = tx.GroupUpdate(ctx, store.GroupUpdateParams{ID: id, IfVersion: ifVersion, Title: cur.Title, Members: cur.Members,
			GroupExecutorSettings: es, NowMs: s.nowMs()}); err != nil {
			return err
		}
		if how = tokenChange(cur.AccessToken, token, how); how == "" {
			how = "unchanged"
		}
		return s.audit(ctx, tx, auditEntry{Action: ActGroupExecutorToken, ObjectType: "group", ObjectID: id, GroupID: id,
			Changes: map[string]any{"executor_token": how}})
	})
	if err != nil {
		var pe *PreconditionError
		if errors.As(err, &pe) {
			return store.Group{}, pe
		}
		return store.Group{}, notFoundOr(err, "group", id, fmt.Sprintf("set the executor token of group %d", id))
	}
	s.changed()
	return g, nil
}

// DeleteGroup deletes a group that has no jobs; one that has is a
// *ConflictError.
func (s *Service) DeleteGroup(ctx context.Context, id int64) error {
	return s.DeleteGroupIf(ctx, id, 0)
}

// DeleteGroupIf deletes a group if it is at version ifVersion (0: any),
// else answers a *PreconditionError and deletes nothing.
func (s *Service) DeleteGroupIf(ctx context.Context, id, ifVersion int64) error {
	err := s.st.Tx(ctx, func(tx *store.Store) error {
		cur, err := tx.GroupGet(ctx, id)
		if err != nil {
			return err
		}
		if err := tx.GroupDeleteIf(ctx, id, ifVersion); err != nil {
			return err
		}
		if err := tx.BindingDeleteGroup(ctx, id); err != nil {
			return err
		}
		if err := tx.AuthVersionBump(ctx); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActGroupDelete, ObjectType: "group", ObjectID: id, GroupID: id, Changes: map[string]any{"app_name": cur.AppName}})
	})
	switch {
	case err == nil:
		s.authChanged()
		s.changed()
		return nil
	case errors.Is(err, store.ErrConflict):
		return &ConflictError{Message: fmt.Sprintf("group %d still has jobs; delete them or move them to another group first", id)}
	default:
		return notFoundOr(err, "group", id, fmt.Sprintf("delete group %d", id))
	}
}

func (s *Service) checkAppName(name string) error {
	n := len(name)
	switch {
	case n == 0:
		return invalid("app_name", "is required: %d..%d lowercase letters, digits and '-', starting with a letter (e.g. \"billing-jobs\")", MinAppNameLen, MaxAppNameLen)
	case n < MinAppNameLen || n > MaxAppNameLen:
		return invalid("app_name", "must be %d..%d characters, got %d", MinAppNameLen, MaxAppNameLen, n)
	case !appNameRE.MatchString(name):
		return invalid("app_name", "%q: use lowercase letters, digits and '-', starting with a letter (e.g. \"billing-jobs\")", name)
	}
	return nil
}

// checkMembers validates each target of group appName with its driver, and
// refuses an address another group's executor registered; the field names the
// member's index. Duplicates are refused.
func (s *Service) checkMembers(ctx context.Context, appName string, members []string) ([]string, error) {
	if len(members) > MaxGroupMember {
		return nil, invalid("members", "has %d targets, more than the limit of %d", len(members), MaxGroupMember)
	}
	seen := make(map[string]int, len(members))
	out := make([]string, 0, len(members))
	for i, m := range members {
		field := fmt.Sprintf("members[%d]", i)
		if err := checkText(field, m, 1, MaxTargetLen, false); err != nil {
			return nil, err
		}
		if j, dup := seen[m]; dup {
			return nil, invalid(field, "%q repeats members[%d]; list each target once", m, j)
		}
		seen[m] = i
		if err := s.drivers.Validate(m); err != nil {
			if errors.Is(err, targets.ErrUnknownScheme) {
				return nil, invalid(field, "%v; use a target of a registered scheme", err)
			}
			return nil, invalid(field, "%v", err)
		}
		if s.registeredElsewhere != nil && s.drivers.Capabilities(m).ExecutorProtocol { // only executors register
			taken, err := s.registeredElsewhere(ctx, appName, m)
			if err != nil {
				return nil, fmt.Errorf("check %s: %w", field, err)
			}
			if taken {
				return nil, invalid(field, "%q is the address of an executor registered by another group; a group's members are its own targets (an operator may allow this with executors.allow_cross_group_members)", m)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

func checkID(field string, id int64) error {
	if id <= 0 {
		return invalid(field, "must be a positive id, got %d", id)
	}
	return nil
}

// GroupIDByAppName finds a group's id by its app name (a missing group is a
// *NotFoundError).
func (s *Service) GroupIDByAppName(ctx context.Context, appName string) (int64, error) {
	id, err := s.st.GroupIDByAppName(ctx, appName)
	if errors.Is(err, store.ErrNotFound) {
		return 0, &NotFoundError{Resource: "group", Name: appName}
	}
	return id, err
}

package identity

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/internal/principalname"
	"github.com/ringjob/ringjob/internal/servicekit"
	"github.com/ringjob/ringjob/store"
)

// Limits of account fields.
const (
	MaxPrincipalName = 64
	MaxTokenName     = 128
	MaxEmail         = 255
	MaxSSOGroup      = 255
)

// checkPrincipalName validates a user or service account name: 1..64
// characters of letters, digits and . _ @ -.
func checkPrincipalName(field, name string) error {
	if !utf8.ValidString(name) {
		return invalid(field, "is not valid UTF-8 text")
	}
	if name == "" {
		return invalid(field, "is required and must not be empty")
	}
	if n := utf8.RuneCountInString(name); n > MaxPrincipalName {
		return invalid(field, "must be at most %d characters, got %d", MaxPrincipalName, n)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '@' || r == '-') {
			return invalid(field, "may contain only letters, digits and . _ @ -, got %q", r)
		}
	}
	return nil
}

// UserCreateParams are a new local user.
type UserCreateParams struct {
	Name     string
	Password string
	Email    string
}

// CreateUser creates a local user with a password.
func (s *Service) CreateUser(ctx context.Context, p UserCreateParams) (store.Principal, error) {
	if err := checkPrincipalName("name", p.Name); err != nil {
		return store.Principal{}, err
	}
	if err := checkText("email", p.Email, 0, MaxEmail, false); err != nil {
		return store.Principal{}, err
	}
	if err := access.CheckPassword(p.Password); err != nil {
		return store.Principal{}, invalid("password", "%v", err)
	}
	hash, err := s.hashPassword(ctx, p.Password)
	if err != nil {
		return store.Principal{}, err
	}
	return s.createPrincipal(ctx, store.PrincipalCreateParams{Name: p.Name, Kind: store.PrincipalUser, Source: store.SourceLocal, Email: p.Email, PasswordHash: hash}, ActUserCreate)
}

// CreateServiceAccount creates a service account (it authenticates with
// tokens only).
func (s *Service) CreateServiceAccount(ctx context.Context, name string) (store.Principal, error) {
	if err := checkPrincipalName("name", name); err != nil {
		return store.Principal{}, err
	}
	return s.createPrincipal(ctx, store.PrincipalCreateParams{Name: name, Kind: store.PrincipalService, Source: store.SourceLocal}, ActServiceCreate)
}

func (s *Service) createPrincipal(ctx context.Context, p store.PrincipalCreateParams, action string) (store.Principal, error) {
	p.NowMs = s.nowMs()
	var pr store.Principal
	err := s.st.Tx(ctx, func(tx *store.Store) error {
		var err error
		if pr, err = tx.PrincipalCreate(ctx, p); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: action, ObjectType: p.Kind, ObjectID: pr.ID,
			Changes: map[string]any{"name": pr.Name, "email": pr.Email, "source": pr.Source}})
	})
	if errors.Is(err, store.ErrConflict) {
		return store.Principal{}, &servicekit.ConflictError{Field: "name", Message: fmt.Sprintf("the name %q is taken by a user or service account; pick another", p.Name)}
	}
	if err != nil {
		return store.Principal{}, fmt.Errorf("create %s %q: %w", p.Kind, p.Name, err)
	}
	return pr, nil
}

// GetPrincipal reads a user (kind "user") or service account (kind "service").
func (s *Service) GetPrincipal(ctx context.Context, kind string, id int64) (store.Principal, error) {
	pr, err := s.st.PrincipalGet(ctx, id)
	if err == nil && pr.Kind != kind {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Principal{}, notFoundOr(err, resourceOf(kind), id, fmt.Sprintf("read %s %d", kind, id))
	}
	return pr, nil
}

func resourceOf(kind string) string {
	if kind == store.PrincipalService {
		return "service account"
	}
	return "user"
}

// PrincipalListParams page through users or service accounts (by id).
type PrincipalListParams struct {
	// NamePrefix keeps those whose name starts with it (a name picker's search).
	NamePrefix string
	Cursor     string
	Limit      int // 0 = DefaultPageLimit; at most MaxPageLimit
}

// ListPrincipals lists users or service accounts by id.
func (s *Service) ListPrincipals(ctx context.Context, kind string, p PrincipalListParams) (servicekit.Page[store.Principal], error) {
	if err := checkText("name_prefix", p.NamePrefix, 0, 64, false); err != nil {
		return servicekit.Page[store.Principal]{}, err
	}
	limit, err := pageLimit(p.Limit)
	if err != nil {
		return servicekit.Page[store.Principal]{}, err
	}
	after, err := decodeCursor("p", p.Cursor)
	if err != nil {
		return servicekit.Page[store.Principal]{}, err
	}
	ps, err := s.st.PrincipalList(ctx, store.PrincipalListParams{Kind: kind, AfterID: after, Limit: limit + 1, NamePrefix: p.NamePrefix})
	if err != nil {
		return servicekit.Page[store.Principal]{}, fmt.Errorf("list %ss: %w", kind, err)
	}
	return paginate(ps, limit, "p", func(p store.Principal) int64 { return p.ID }), nil
}

// DeletePrincipal deletes a user or service account with its tokens,
// sessions and role bindings. Deleting the last admin user is a
// *servicekit.ConflictError.
func (s *Service) DeletePrincipal(ctx context.Context, kind string, id int64) error {
	pr, err := s.GetPrincipal(ctx, kind, id)
	if err != nil {
		return err
	}
	act := ActUserDelete
	if kind == store.PrincipalService {
		act = ActServiceDelete
	}
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		before, err := tx.BindingCountAdminUsers(ctx)
		if err != nil {
			return err
		}
		if err := tx.PrincipalDelete(ctx, id); err != nil {
			return err
		}
		if err := lastAdminCheck(ctx, tx, before); err != nil {
			return err
		}
		if err := tx.AuthVersionBump(ctx); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: act, ObjectType: kind, ObjectID: id, Changes: map[string]any{"name": pr.Name}})
	})
	if err != nil {
		return notFoundOr(err, resourceOf(kind), id, fmt.Sprintf("delete %s %d", kind, id))
	}
	s.authChanged()
	return nil
}

// errLastAdmin refuses a change that would leave no admin user.
var errLastAdmin = &servicekit.ConflictError{Message: "this would remove the last admin user; make another user admin first (or run `ringjob admin create-user NAME --role admin` on the server)"}

func lastAdminCheck(ctx context.Context, tx *store.Store, before int) error {
	if before == 0 {
		return nil
	}
	after, err := tx.BindingCountAdminUsers(ctx)
	if err != nil {
		return err
	}
	if after == 0 {
		return errLastAdmin
	}
	return nil
}

// SetPassword replaces a local user's password and ends the user's sessions.
func (s *Service) SetPassword(ctx context.Context, id int64, password string) error {
	pr, err := s.GetPrincipal(ctx, store.PrincipalUser, id)
	if err != nil {
		return err
	}
	if pr.Source != store.SourceLocal {
		return &servicekit.ConflictError{Message: fmt.Sprintf("user %q signs in through SSO and has no password here", pr.Name)}
	}
	if err := access.CheckPassword(password); err != nil {
		return invalid("password", "%v", err)
	}
	hash, err := s.hashPassword(ctx, password)
	if err != nil {
		return err
	}
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		if err := tx.PrincipalSetPassword(ctx, id, hash, s.nowMs()); err != nil {
			return err
		}
		if err := tx.SessionDeleteForPrincipal(ctx, id); err != nil {
			return err
		}
		if err := tx.AuthVersionBump(ctx); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActUserPassword, ObjectType: store.PrincipalUser, ObjectID: id, Changes: map[string]any{"password": "***"}})
	})
	if err != nil {
		return notFoundOr(err, "user", id, fmt.Sprintf("set password of user %d", id))
	}
	s.authChanged()
	return nil
}

// PrincipalUpdateParams change a user or service account; nil fields stay.
type PrincipalUpdateParams struct {
	Kind     string // store.PrincipalUser or store.PrincipalService
	ID       int64
	Name     *string
	Email    *string // users only
	Disabled *bool
}

// UpdatePrincipal renames, re-addresses, disables or enables a user or
// service account. Disabling ends its sessions and refuses its tokens on
// every replica (the auth version moves); disabling the last enabled admin
// user is a *servicekit.ConflictError.
func (s *Service) UpdatePrincipal(ctx context.Context, p PrincipalUpdateParams) (store.Principal, error) {
	if p.Name != nil {
		if err := checkPrincipalName("name", *p.Name); err != nil {
			return store.Principal{}, err
		}
	}
	if p.Email != nil {
		if p.Kind != store.PrincipalUser {
			return store.Principal{}, invalid("email", "a service account has no email")
		}
		if err := checkText("email", *p.Email, 0, MaxEmail, false); err != nil {
			return store.Principal{}, err
		}
	}
	cur, err := s.GetPrincipal(ctx, p.Kind, p.ID)
	if err != nil {
		return store.Principal{}, err
	}
	if p.Name != nil && *p.Name != cur.Name && cur.Source == store.SourceOIDC {
		return store.Principal{}, invalid("name", "user %q signs in through SSO: its name comes from the identity provider", cur.Name)
	}
	act := ActUserUpdate
	if p.Kind == store.PrincipalService {
		act = ActServiceUpdate
	}
	now := s.nowMs()
	changes := map[string]any{}
	authMoved := false
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		if p.Name != nil && *p.Name != cur.Name {
			if err := tx.PrincipalRename(ctx, p.ID, *p.Name, now); err != nil {
				return err
			}
			changes["name"] = map[string]any{"before": cur.Name, "after": *p.Name}
			authMoved = true // cached principals carry the name
		}
		if p.Email != nil && *p.Email != cur.Email {
			if err := tx.PrincipalSetEmail(ctx, p.ID, *p.Email, now); err != nil {
				return err
			}
			changes["email"] = map[string]any{"before": cur.Email, "after": *p.Email}
		}
		if p.Disabled != nil && *p.Disabled != (cur.DisabledMs != 0) {
			before, err := tx.BindingCountAdminUsers(ctx)
			if err != nil {
				return err
			}
			at := int64(0)
			if *p.Disabled {
				at = now
			}
			if err := tx.PrincipalSetDisabled(ctx, p.ID, at, now); err != nil {
				return err
			}
			if *p.Disabled {
				if err := lastAdminCheck(ctx, tx, before); err != nil {
					return err
				}
				if err := tx.SessionDeleteForPrincipal(ctx, p.ID); err != nil {
					return err
				}
			}
			changes["disabled"] = map[string]any{"before": cur.DisabledMs != 0, "after": *p.Disabled}
			authMoved = true
		}
		if len(changes) == 0 {
			return nil
		}
		if authMoved {
			if err := tx.AuthVersionBump(ctx); err != nil {
				return err
			}
		}
		return s.audit(ctx, tx, auditEntry{Action: act, ObjectType: p.Kind, ObjectID: p.ID, Changes: changes})
	})
	var ce *servicekit.ConflictError
	if p.Name != nil && errors.Is(err, store.ErrConflict) && !errors.As(err, &ce) {
		return store.Principal{}, &servicekit.ConflictError{Field: "name", Message: fmt.Sprintf("the name %q is taken by a user or service account; pick another", *p.Name)}
	}
	if err != nil {
		return store.Principal{}, notFoundOr(err, resourceOf(p.Kind), p.ID, fmt.Sprintf("update %s %d", p.Kind, p.ID))
	}
	if authMoved {
		s.authChanged()
	}
	return s.GetPrincipal(ctx, p.Kind, p.ID)
}

// ChangeOwnPasswordParams are a signed-in user's password change.
type ChangeOwnPasswordParams struct {
	UserID      int64
	OldPassword string
	NewPassword string
	// KeepSession is the caller's session (0 = none): it stays signed in;
	// every other session of the user ends.
	KeepSession int64
	ClientAddr  string
}

// ChangeOwnPassword replaces the caller's password when the old one is
// right. A wrong old password counts as a failed login for the limiter
// (so a stolen session cannot guess it quickly) and is an error naming
// old_password.
func (s *Service) ChangeOwnPassword(ctx context.Context, p ChangeOwnPasswordParams) error {
	pr, err := s.GetPrincipal(ctx, store.PrincipalUser, p.UserID)
	if err != nil {
		var nf *servicekit.NotFoundError
		if errors.As(err, &nf) {
			return invalid("", "only a user has a password; a service account signs in with tokens")
		}
		return err
	}
	if pr.Source != store.SourceLocal || pr.PasswordHash == "" {
		return invalid("", "user %q signs in through SSO and has no password here", pr.Name)
	}
	if p.OldPassword == "" {
		return invalid("old_password", "is required: give your current password")
	}
	if len(p.OldPassword) > 4*access.MaxPasswordLen {
		return invalid("old_password", "is wrong")
	}
	if err := access.CheckPassword(p.NewPassword); err != nil {
		return invalid("new_password", "%v", err)
	}
	keys := s.loginKeys(pr.Name, p.ClientAddr)
	release, clean, err := s.reserveLogin(ctx, keys, false)
	if err != nil {
		return err
	}
	outcome := attemptNotChecked
	defer func() { release(outcome) }()
	freeSlot, ok := s.tryHashSlot(clean)
	if !ok {
		s.noteBusy(keys)
		return &BusyError{RetryAfter: time.Second}
	}
	verr := access.VerifyPassword(pr.PasswordHash, p.OldPassword)
	freeSlot()
	if err := verr; err != nil {
		if !errors.Is(err, access.ErrPasswordMismatch) {
			return fmt.Errorf("change password: %w", err)
		}
		if err := s.countFailure(ctx, keys); err != nil {
			return fmt.Errorf("change password: %w", err)
		}
		outcome = attemptFailed
		return invalid("old_password", "is wrong")
	}
	if p.NewPassword == p.OldPassword {
		return invalid("new_password", "is the current password; choose a new one")
	}
	hash, err := s.hashPassword(ctx, p.NewPassword)
	if err != nil {
		return err
	}
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		if err := tx.PrincipalSetPassword(ctx, pr.ID, hash, s.nowMs()); err != nil {
			return err
		}
		if err := tx.SessionDeleteForPrincipal(ctx, pr.ID, p.KeepSession); err != nil {
			return err
		}
		if err := tx.AuthVersionBump(ctx); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActUserPassword, ObjectType: store.PrincipalUser, ObjectID: pr.ID,
			Changes: map[string]any{"password": "***", "by": "self"}})
	})
	if err != nil {
		return fmt.Errorf("change password of user %d: %w", pr.ID, err)
	}
	s.authChanged()
	return nil
}

// hashPassword hashes a new password in one of the bounded hashing slots
// the login checks use, so that creating users or setting passwords in
// bulk cannot take more memory than the pool allows either.
func (s *Service) hashPassword(ctx context.Context, pw string) (string, error) {
	release, err := s.hashSlot(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	c := s.hashCost
	if c == (access.HashParams{}) {
		c = access.DefaultHashParams
	}
	return access.HashPasswordWith(pw, c)
}

// TokenCreateParams are a new API token.
type TokenCreateParams struct {
	PrincipalID int64
	Name        string
	ExpiresAt   time.Time // zero = never
}

// MaxTokenLifetime caps a token's expiry, however it is given.
const MaxTokenLifetime = 10 * 365 * 24 * time.Hour

// CreateToken issues a token for a user or service account. The token is
// returned once; only its hash is stored.
func (s *Service) CreateToken(ctx context.Context, p TokenCreateParams) (string, store.AuthToken, error) {
	if err := checkText("name", p.Name, 1, MaxTokenName, false); err != nil {
		return "", store.AuthToken{}, err
	}
	now := s.clock.Now()
	if !p.ExpiresAt.IsZero() && !p.ExpiresAt.After(now) {
		return "", store.AuthToken{}, invalid("expires_at", "must be in the future, got %s", p.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if p.ExpiresAt.After(now.Add(MaxTokenLifetime)) {
		return "", store.AuthToken{}, invalid("expires_at", "must be at most ten years from now (%s), got %s; leave it out for a token that never expires",
			now.Add(MaxTokenLifetime).UTC().Format(time.RFC3339), p.ExpiresAt.UTC().Format(time.RFC3339))
	}
	pr, err := s.st.PrincipalGet(ctx, p.PrincipalID)
	if err != nil {
		return "", store.AuthToken{}, notFoundOr(err, "user or service account", p.PrincipalID, "create token")
	}
	tok, err := GenerateToken()
	if err != nil {
		return "", store.AuthToken{}, err
	}
	ip := store.TokenIssueParams{Name: p.Name, TokenHash: HashToken(tok), Prefix: tok[:len(TokenPrefix)+6], PrincipalID: pr.ID, NowMs: now.UnixMilli()}
	if !p.ExpiresAt.IsZero() {
		ip.ExpiresMs = p.ExpiresAt.UnixMilli()
	}
	var t store.AuthToken
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		var err error
		if t, err = tx.TokenIssue(ctx, ip); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActTokenCreate, ObjectType: "token", ObjectID: t.ID,
			Changes: map[string]any{"name": t.Name, "owner": pr.Name, "prefix": t.Prefix, "expires_ms": t.ExpiresMs}})
	})
	if err != nil {
		return "", store.AuthToken{}, fmt.Errorf("create token %q: %w", p.Name, err)
	}
	return tok, t, nil
}

// TokenOwnerNames names the owners of tokens ts (at most a page of them:
// one query); a server token's owner (0) or a deleted one has no name.
func (s *Service) TokenOwnerNames(ctx context.Context, ts ...store.AuthToken) (map[int64]string, error) {
	seen := make(map[int64]bool, len(ts))
	ids := make([]int64, 0, len(ts))
	for _, t := range ts {
		if t.PrincipalID > 0 && !seen[t.PrincipalID] {
			seen[t.PrincipalID] = true
			ids = append(ids, t.PrincipalID)
		}
	}
	names, err := s.st.PrincipalNames(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("name the owners of %d tokens: %w", len(ts), err)
	}
	return names, nil
}

// GetToken reads a token's record (never its value).
func (s *Service) GetToken(ctx context.Context, id int64) (store.AuthToken, error) {
	t, err := s.st.TokenGet(ctx, id)
	if err != nil {
		return store.AuthToken{}, notFoundOr(err, "token", id, fmt.Sprintf("read token %d", id))
	}
	return t, nil
}

// ListTokens lists the tokens of a principal, or every token when
// principalID is -1.
func (s *Service) ListTokens(ctx context.Context, principalID int64, cursor string, limit int) (servicekit.Page[store.AuthToken], error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return servicekit.Page[store.AuthToken]{}, err
	}
	after, err := decodeCursor("t", cursor)
	if err != nil {
		return servicekit.Page[store.AuthToken]{}, err
	}
	ts, err := s.st.TokenList(ctx, store.TokenListParams{PrincipalID: principalID, AfterID: after, Limit: limit + 1})
	if err != nil {
		return servicekit.Page[store.AuthToken]{}, fmt.Errorf("list tokens: %w", err)
	}
	return paginate(ts, limit, "t", func(t store.AuthToken) int64 { return t.ID }), nil
}

// RevokeToken revokes a token at once, on this replica and, within the auth
// poll interval, on every other. Revoking a revoked token changes nothing.
func (s *Service) RevokeToken(ctx context.Context, id int64) (store.AuthToken, error) {
	t, err := s.GetToken(ctx, id)
	if err != nil {
		return store.AuthToken{}, err
	}
	if t.RevokedMs != 0 {
		return t, nil
	}
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		ok, err := tx.TokenRevoke(ctx, id, s.nowMs())
		if err != nil || !ok {
			return err
		}
		if err := tx.AuthVersionBump(ctx); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActTokenRevoke, ObjectType: "token", ObjectID: id, Changes: map[string]any{"name": t.Name}})
	})
	if err != nil {
		return store.AuthToken{}, fmt.Errorf("revoke token %d: %w", id, err)
	}
	s.authChanged()
	return s.GetToken(ctx, id)
}

// BindingCreateParams grant a role: admin (GroupID 0) or a group role on
// GroupID, to a principal or to the members of an SSO group.
type BindingCreateParams struct {
	Role        string
	GroupID     int64
	PrincipalID int64
	SSOGroup    string
}

// CreateBinding grants a role.
func (s *Service) CreateBinding(ctx context.Context, p BindingCreateParams) (store.RoleBinding, error) {
	role, err := access.ParseRole(p.Role)
	if err != nil {
		return store.RoleBinding{}, invalid("role", "%v", err)
	}
	if role == access.RoleAdmin && p.GroupID != 0 {
		return store.RoleBinding{}, invalid("group_id", "admin is a global role; leave group_id out")
	}
	if role != access.RoleAdmin {
		if p.GroupID <= 0 {
			return store.RoleBinding{}, invalid("group_id", "is required for role %s (a group role)", role)
		}
		if _, err := s.st.GroupGet(ctx, p.GroupID); errors.Is(err, store.ErrNotFound) {
			return store.RoleBinding{}, invalid("group_id", "group %d does not exist", p.GroupID)
		} else if err != nil {
			return store.RoleBinding{}, fmt.Errorf("grant role %s: read group %d: %w", role, p.GroupID, err)
		}
	}
	switch {
	case p.PrincipalID != 0 && p.SSOGroup != "":
		return store.RoleBinding{}, invalid("sso_group", "give either principal_id or sso_group, not both")
	case p.PrincipalID == 0 && p.SSOGroup == "":
		return store.RoleBinding{}, invalid("principal_id", "is required (or sso_group, to grant the role to an SSO group)")
	case p.PrincipalID < 0:
		return store.RoleBinding{}, invalid("principal_id", "must be a positive id, got %d", p.PrincipalID)
	case p.PrincipalID > 0:
		if _, err := s.st.PrincipalGet(ctx, p.PrincipalID); errors.Is(err, store.ErrNotFound) {
			return store.RoleBinding{}, invalid("principal_id", "user or service account %d does not exist", p.PrincipalID)
		} else if err != nil {
			return store.RoleBinding{}, err
		}
	default:
		if err := checkText("sso_group", p.SSOGroup, 1, MaxSSOGroup, false); err != nil {
			return store.RoleBinding{}, err
		}
	}
	var b store.RoleBinding
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		var err error
		if b, err = tx.BindingCreate(ctx, store.RoleBinding{Role: string(role), GroupID: p.GroupID, PrincipalID: p.PrincipalID, SSOGroup: p.SSOGroup, CreatedMs: s.nowMs()}); err != nil {
			return err
		}
		if err := tx.AuthVersionBump(ctx); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActBindingCreate, ObjectType: "role_binding", ObjectID: b.ID, GroupID: b.GroupID,
			Changes: map[string]any{"role": b.Role, "group_id": b.GroupID, "principal_id": b.PrincipalID, "sso_group": b.SSOGroup}})
	})
	if errors.Is(err, store.ErrConflict) {
		return store.RoleBinding{}, &servicekit.ConflictError{Message: "this role is granted already"}
	}
	if err != nil {
		return store.RoleBinding{}, fmt.Errorf("grant role %s: %w", role, err)
	}
	s.authChanged()
	return b, nil
}

// ListBindings lists every role binding.
func (s *Service) ListBindings(ctx context.Context) ([]store.NamedBinding, error) {
	return s.st.BindingListNamed(ctx)
}

// DeleteBinding takes a role back. Taking admin from the last admin user is
// a *servicekit.ConflictError.
func (s *Service) DeleteBinding(ctx context.Context, id int64) error {
	b, err := s.st.BindingGet(ctx, id)
	if err != nil {
		return notFoundOr(err, "role binding", id, fmt.Sprintf("delete role binding %d", id))
	}
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		before, err := tx.BindingCountAdminUsers(ctx)
		if err != nil {
			return err
		}
		if err := tx.BindingDelete(ctx, id); err != nil {
			return err
		}
		if err := lastAdminCheck(ctx, tx, before); err != nil {
			return err
		}
		if err := tx.AuthVersionBump(ctx); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActBindingDelete, ObjectType: "role_binding", ObjectID: id, GroupID: b.GroupID,
			Changes: map[string]any{"role": b.Role, "group_id": b.GroupID, "principal_id": b.PrincipalID, "sso_group": b.SSOGroup}})
	})
	if err != nil {
		return notFoundOr(err, "role binding", id, fmt.Sprintf("delete role binding %d", id))
	}
	s.authChanged()
	return nil
}

// EnsureAdminUser creates the local user name, or resets its password, and
// makes it admin: the recovery path of `ringjob admin create-user`. The
// generated password is returned once.
func (s *Service) EnsureAdminUser(ctx context.Context, name string) (password string, created bool, err error) {
	if err := checkPrincipalName("name", name); err != nil {
		return "", false, err
	}
	pw, err := access.GeneratePassword()
	if err != nil {
		return "", false, err
	}
	hash, err := s.hashPassword(ctx, pw)
	if err != nil {
		return "", false, err
	}
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		pr, err := tx.PrincipalByName(ctx, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			if pr, err = tx.PrincipalCreate(ctx, store.PrincipalCreateParams{Name: name, Kind: store.PrincipalUser, Source: store.SourceLocal, PasswordHash: hash, NowMs: s.nowMs()}); err != nil {
				return err
			}
			created = true
			if err := s.audit(ctx, tx, auditEntry{Action: ActUserCreate, ObjectType: store.PrincipalUser, ObjectID: pr.ID, Changes: map[string]any{"name": name, "source": "cli"}}); err != nil {
				return err
			}
		case err != nil:
			return err
		case pr.Kind != store.PrincipalUser:
			return invalid("name", "%q is a service account, not a user; pick another name", name)
		default:
			if err := tx.PrincipalSetPassword(ctx, pr.ID, hash, s.nowMs()); err != nil {
				return err
			}
			if err := s.audit(ctx, tx, auditEntry{Action: ActUserPassword, ObjectType: store.PrincipalUser, ObjectID: pr.ID, Changes: map[string]any{"password": "***", "source": "cli"}}); err != nil {
				return err
			}
		}
		if _, err := tx.BindingCreate(ctx, store.RoleBinding{Role: string(access.RoleAdmin), PrincipalID: pr.ID, CreatedMs: s.nowMs()}); err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		} else if err == nil {
			if err := s.audit(ctx, tx, auditEntry{Action: ActBindingCreate, ObjectType: "role_binding", Changes: map[string]any{"role": "admin", "principal_id": pr.ID, "source": "cli"}}); err != nil {
				return err
			}
		}
		if err := tx.LoginFailureClearUser(ctx, limiterKey("user:", foldName(name)), "user+addr:"+foldName(name)+"|"); err != nil {
			return err
		}
		return tx.AuthVersionBump(ctx)
	})
	if err != nil {
		return "", false, fmt.Errorf("create admin user %q: %w", name, err)
	}
	s.authChanged()
	return pw, created, nil
}

// foldName is the one form in which principal names are compared (see
// principalname: NFKC, then case-folded; "Alice", "ALICE" and "ａｌｉｃｅ"
// are one name). The store indexes each name's key by the same rule, so a
// name that folds like a taken one is refused on every database.
func foldName(name string) string { return principalname.Fold(name) }

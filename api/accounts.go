package api

import (
	"sort"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/apitypes"
	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
)

// accountRoutes registers sessions, who-am-I, users, service accounts,
// tokens, role bindings and the audit log.
func (s *server) accountRoutes(v1 routes) {
	v1.post("/session", public(), s.login)
	v1.delete("/session", authenticated(), s.logout)
	v1.get("/me", authenticated(), s.me)
	v1.put("/me/password", authenticated(), s.changeOwnPassword)

	v1.get("/users", system(access.PermUsersManage), s.listUsers)
	v1.post("/users", system(access.PermUsersManage), s.createUser)
	v1.get("/users/:id", system(access.PermUsersManage), s.getUser)
	v1.patch("/users/:id", system(access.PermUsersManage), s.updateUser)
	v1.delete("/users/:id", system(access.PermUsersManage), s.deleteUser)
	v1.put("/users/:id/password", system(access.PermUsersManage), s.setPassword)

	v1.get("/service-accounts", system(access.PermUsersManage), s.listServiceAccounts)
	v1.post("/service-accounts", system(access.PermUsersManage), s.createServiceAccount)
	v1.get("/service-accounts/:id", system(access.PermUsersManage), s.getServiceAccount)
	v1.patch("/service-accounts/:id", system(access.PermUsersManage), s.updateServiceAccount)
	v1.delete("/service-accounts/:id", system(access.PermUsersManage), s.deleteServiceAccount)

	// Anyone may manage their own tokens; users.manage reaches everyone's.
	v1.get("/tokens", authenticated(), s.listTokens)
	v1.post("/tokens", authenticated(), s.createToken)
	v1.get("/tokens/:id", authenticated(), s.getToken)
	v1.delete("/tokens/:id", authenticated(), s.revokeToken)

	v1.get("/role-bindings", system(access.PermUsersManage), s.listBindings)
	v1.post("/role-bindings", system(access.PermUsersManage), s.createBinding)
	v1.delete("/role-bindings/:id", system(access.PermUsersManage), s.deleteBinding)

	v1.get("/audit", system(access.PermAuditRead), s.listAudit)
}

// ---- sessions

type loginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// sessionView answers a login: the CSRF token to send back in X-CSRF-Token.
type sessionView struct {
	User           meView  `json:"user"`
	CSRFToken      string  `json:"csrf_token"`
	ExpiresAt      *string `json:"expires_at"`
	IdleTimeoutSec int     `json:"idle_timeout_sec"`
}

func (s *server) login(c *fiber.Ctx) error {
	if !c.Is("json") {
		return &apiError{Status: fiber.StatusUnsupportedMediaType, Code: codeInvalidArgument,
			Message: "send the login as Content-Type: application/json"}
	}
	var req loginRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	res, err := s.id.Login(c.UserContext(), identity.LoginParams{Username: req.Username, Password: req.Password, ClientAddr: s.clientAddr(c),
		DeviceProof: c.Cookies(DeviceCookie)})
	if err != nil {
		return err
	}
	if res.DeviceProof != "" {
		c.Cookie(&fiber.Cookie{Name: DeviceCookie, Value: res.DeviceProof, Path: devicePath, Expires: res.DeviceProofExpires, HTTPOnly: true,
			Secure: s.secureCookies || c.Protocol() == "https", SameSite: fiber.CookieSameSiteStrictMode})
	}
	return s.startSession(c, res)
}

// startSession sets the session cookie and answers the session.
func (s *server) startSession(c *fiber.Ctx, res identity.LoginResult) error {
	c.Cookie(s.sessionCookie(c, res.Cookie, time.UnixMilli(res.Session.ExpiresMs)))
	idle, _ := s.id.SessionLifetimes()
	return c.Status(fiber.StatusCreated).JSON(sessionView{User: viewMe(res.Principal), CSRFToken: res.Session.CSRFToken,
		ExpiresAt: rfc3339(res.Session.ExpiresMs), IdleTimeoutSec: int(idle.Seconds())})
}

func (s *server) sessionCookie(c *fiber.Ctx, value string, expires time.Time) *fiber.Cookie {
	return &fiber.Cookie{Name: SessionCookie, Value: value, Path: "/", Expires: expires, HTTPOnly: true,
		Secure: s.secureCookies || c.Protocol() == "https", SameSite: fiber.CookieSameSiteLaxMode}
}

func (s *server) logout(c *fiber.Ctx) error {
	p := principal(c)
	if p.SessionID == 0 {
		return badRequest("", "this request is authenticated with an API token, not a session; revoke the token with DELETE /api/v1/tokens/{id} instead")
	}
	if err := s.id.Logout(c.UserContext(), p.SessionID); err != nil {
		return err
	}
	c.Cookie(s.sessionCookie(c, "", time.Unix(0, 0)))
	return c.SendStatus(fiber.StatusNoContent)
}

// ---- me

type meRole struct {
	GroupID int64  `json:"group_id"`
	Role    string `json:"role"`
}

// meView says who the caller is and what it may do: the console shapes its
// pages from it.
type meView struct {
	ID        int64    `json:"id"`
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	Auth      string   `json:"auth"` // "token" or "session"
	TokenName string   `json:"token_name,omitempty"`
	Admin     bool     `json:"admin"`
	SSOGroups []string `json:"sso_groups"`
	Roles     []meRole `json:"roles"`
	// SystemPermissions are held everywhere; GroupPermissions per group id.
	SystemPermissions []access.Perm            `json:"system_permissions"`
	GroupPermissions  map[string][]access.Perm `json:"group_permissions"`
	// CSRFToken is set for a session: send it as X-CSRF-Token on writes.
	CSRFToken string `json:"csrf_token,omitempty"`
}

func viewMe(p *access.Principal) meView {
	v := meView{ID: p.ID, Name: p.Name, Kind: string(p.Kind), Auth: "token", TokenName: p.TokenName, Admin: p.IsAdmin(),
		SSOGroups: nonNilStrings(p.SSOGroups), Roles: []meRole{}, SystemPermissions: []access.Perm{}, GroupPermissions: map[string][]access.Perm{}}
	if p.SessionID != 0 {
		v.Auth = "session"
		v.CSRFToken = p.CSRFToken
	}
	if p.IsAdmin() {
		v.Roles = append(v.Roles, meRole{Role: string(access.RoleAdmin)})
		v.SystemPermissions = access.PermsOf(access.RoleAdmin)
	}
	for g, r := range p.GroupRoles() {
		v.Roles = append(v.Roles, meRole{GroupID: g, Role: string(r)})
		v.GroupPermissions[strconv.FormatInt(g, 10)] = access.PermsOf(r)
	}
	sort.Slice(v.Roles, func(i, j int) bool { return v.Roles[i].GroupID < v.Roles[j].GroupID })
	return v
}

func (s *server) me(c *fiber.Ctx) error { return c.JSON(viewMe(principal(c))) }

// ---- users and service accounts

type principalView struct {
	ID          int64    `json:"id"`
	Name        string   `json:"name"`
	Kind        string   `json:"kind"`
	Source      string   `json:"source"`
	Email       string   `json:"email"`
	SSOGroups   []string `json:"sso_groups"`
	CreatedAt   *string  `json:"created_at"`
	UpdatedAt   *string  `json:"updated_at"`
	LastLoginAt *string  `json:"last_login_at"`
	Disabled    bool     `json:"disabled"`
	DisabledAt  *string  `json:"disabled_at"`
}

func viewPrincipal(p store.Principal) principalView {
	return principalView{ID: p.ID, Name: p.Name, Kind: p.Kind, Source: p.Source, Email: p.Email, SSOGroups: nonNilStrings(p.SSOGroups),
		CreatedAt: rfc3339(p.CreatedMs), UpdatedAt: rfc3339(p.UpdatedMs), LastLoginAt: rfc3339(p.LastLoginMs),
		Disabled: p.DisabledMs != 0, DisabledAt: rfc3339(p.DisabledMs)}
}

// principalPatch is the body of PATCH /users/{id} and
// /service-accounts/{id}: the fields given change, the others stay.
type principalPatch struct {
	Name     *string `json:"name"`
	Email    *string `json:"email"`
	Disabled *bool   `json:"disabled"`
}

func (s *server) updatePrincipal(c *fiber.Ctx, kind string) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var req principalPatch
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	p, err := s.id.UpdatePrincipal(c.UserContext(), identity.PrincipalUpdateParams{Kind: kind, ID: id, Name: req.Name, Email: req.Email, Disabled: req.Disabled})
	if err != nil {
		return err
	}
	return c.JSON(viewPrincipal(p))
}

func (s *server) updateUser(c *fiber.Ctx) error { return s.updatePrincipal(c, store.PrincipalUser) }
func (s *server) updateServiceAccount(c *fiber.Ctx) error {
	return s.updatePrincipal(c, store.PrincipalService)
}

type ownPasswordRequest struct {
	OldPassword string `json:"old_password"`
	NewPassword string `json:"new_password"`
}

// changeOwnPassword: a signed-in user replaces its password; its other
// sessions end, the one it calls from stays.
func (s *server) changeOwnPassword(c *fiber.Ctx) error {
	var req ownPasswordRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	p := principal(c)
	if p.Kind == access.KindToken {
		return badRequest("", "this request is authenticated with a server token, which belongs to no user; sign in as the user")
	}
	if err := s.id.ChangeOwnPassword(c.UserContext(), identity.ChangeOwnPasswordParams{UserID: p.ID, OldPassword: req.OldPassword,
		NewPassword: req.NewPassword, KeepSession: p.SessionID, ClientAddr: s.clientAddr(c)}); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

type userRequest struct {
	Name     string `json:"name"`
	Password string `json:"password"`
	Email    string `json:"email"`
}

type serviceAccountRequest struct {
	Name string `json:"name"`
}

type passwordRequest struct {
	Password string `json:"password"`
}

func (s *server) listPrincipals(c *fiber.Ctx, kind string) error {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	p, err := s.id.ListPrincipals(c.UserContext(), kind, identity.PrincipalListParams{NamePrefix: c.Query("name_prefix"), Cursor: c.Query("cursor"), Limit: limit})
	if err != nil {
		return err
	}
	return c.JSON(viewPage(p, viewPrincipal))
}

func (s *server) getPrincipal(c *fiber.Ctx, kind string) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	p, err := s.id.GetPrincipal(c.UserContext(), kind, id)
	if err != nil {
		return err
	}
	return c.JSON(viewPrincipal(p))
}

func (s *server) deletePrincipal(c *fiber.Ctx, kind string) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if err := s.id.DeletePrincipal(c.UserContext(), kind, id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (s *server) listUsers(c *fiber.Ctx) error  { return s.listPrincipals(c, store.PrincipalUser) }
func (s *server) getUser(c *fiber.Ctx) error    { return s.getPrincipal(c, store.PrincipalUser) }
func (s *server) deleteUser(c *fiber.Ctx) error { return s.deletePrincipal(c, store.PrincipalUser) }
func (s *server) listServiceAccounts(c *fiber.Ctx) error {
	return s.listPrincipals(c, store.PrincipalService)
}
func (s *server) getServiceAccount(c *fiber.Ctx) error {
	return s.getPrincipal(c, store.PrincipalService)
}
func (s *server) deleteServiceAccount(c *fiber.Ctx) error {
	return s.deletePrincipal(c, store.PrincipalService)
}

func (s *server) createUser(c *fiber.Ctx) error {
	var req userRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	p, err := s.id.CreateUser(c.UserContext(), identity.UserCreateParams{Name: req.Name, Password: req.Password, Email: req.Email})
	if err != nil {
		return err
	}
	c.Location("/api/v1/users/" + strconv.FormatInt(p.ID, 10))
	return c.Status(fiber.StatusCreated).JSON(viewPrincipal(p))
}

func (s *server) createServiceAccount(c *fiber.Ctx) error {
	var req serviceAccountRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	p, err := s.id.CreateServiceAccount(c.UserContext(), req.Name)
	if err != nil {
		return err
	}
	c.Location("/api/v1/service-accounts/" + strconv.FormatInt(p.ID, 10))
	return c.Status(fiber.StatusCreated).JSON(viewPrincipal(p))
}

func (s *server) setPassword(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var req passwordRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	if err := s.id.SetPassword(c.UserContext(), id, req.Password); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// ---- tokens

type tokenView struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	PrincipalID int64  `json:"principal_id"` // 0: a server token (first-start or configured)
	// PrincipalName is the owner's name: "" for a server token.
	PrincipalName string  `json:"principal_name"`
	Prefix        string  `json:"prefix"`
	CreatedAt     *string `json:"created_at"`
	LastUsedAt    *string `json:"last_used_at"`
	ExpiresAt     *string `json:"expires_at"`
	RevokedAt     *string `json:"revoked_at"`
	// Token is the secret, only in the answer to its creation.
	Token string `json:"token,omitempty"`
}

func viewToken(t store.AuthToken, owners map[int64]string) tokenView {
	return tokenView{ID: t.ID, Name: t.Name, PrincipalID: t.PrincipalID, PrincipalName: owners[t.PrincipalID], Prefix: t.Prefix, CreatedAt: rfc3339(t.CreatedMs),
		LastUsedAt: rfc3339(t.LastUsedMs), ExpiresAt: rfc3339(t.ExpiresMs), RevokedAt: rfc3339(t.RevokedMs)}
}

// viewTokenOf is viewToken with its owner's name read.
func (s *server) viewTokenOf(c *fiber.Ctx, t store.AuthToken) (tokenView, error) {
	owners, err := s.id.TokenOwnerNames(c.UserContext(), t)
	if err != nil {
		return tokenView{}, err
	}
	return viewToken(t, owners), nil
}

type tokenRequest struct {
	Name string `json:"name"`
	// PrincipalID issues the token for another user or service account
	// (users.manage); 0 = for the caller.
	PrincipalID int64  `json:"principal_id"`
	ExpiresAt   string `json:"expires_at"`
	// ExpiresInSec is an alternative to ExpiresAt (1 s to ten years; absent
	// = never expires, which 0 does not mean).
	ExpiresInSec *int64 `json:"expires_in_sec"`
}

// tokenOwner is whose tokens the caller may reach: its own, or (admin) anyone's.
func tokenAccess(c *fiber.Ctx, owner int64) error {
	p := principal(c)
	if p.Can(access.PermUsersManage, 0) || (owner != 0 && owner == p.ID) {
		return nil
	}
	return &access.Denied{Perm: access.PermUsersManage}
}

func (s *server) createToken(c *fiber.Ctx) error {
	var req tokenRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	p := principal(c)
	owner := req.PrincipalID
	if owner < 0 {
		return badRequest("principal_id", "must be a positive id, got %d", owner)
	}
	if owner == 0 {
		if p.ID == 0 {
			return badRequest("principal_id", "a server token has no user of its own; give the principal_id of the user or service account the token is for")
		}
		owner = p.ID
	}
	if err := tokenAccess(c, owner); err != nil {
		return err
	}
	var exp time.Time
	switch {
	case req.ExpiresAt != "" && req.ExpiresInSec != nil:
		return badRequest("expires_at", "give expires_at or expires_in_sec, not both")
	case req.ExpiresAt != "":
		t, err := time.Parse(time.RFC3339, req.ExpiresAt)
		if err != nil {
			return badRequest("expires_at", "must be an RFC 3339 time such as 2030-01-02T15:04:05Z, got %q", req.ExpiresAt)
		}
		exp = t
	case req.ExpiresInSec != nil:
		sec := *req.ExpiresInSec
		if sec < 1 || sec > int64(identity.MaxTokenLifetime/time.Second) {
			return badRequest("expires_in_sec", "must be 1 to %d seconds (ten years), got %d; leave it out for a token that never expires", int64(identity.MaxTokenLifetime/time.Second), sec)
		}
		exp = s.now().Add(time.Duration(sec) * time.Second)
	}
	tok, t, err := s.id.CreateToken(c.UserContext(), identity.TokenCreateParams{PrincipalID: owner, Name: req.Name, ExpiresAt: exp})
	if err != nil {
		return err
	}
	v, err := s.viewTokenOf(c, t)
	if err != nil {
		return err
	}
	v.Token = tok
	c.Location("/api/v1/tokens/" + strconv.FormatInt(t.ID, 10))
	return c.Status(fiber.StatusCreated).JSON(v)
}

func (s *server) listTokens(c *fiber.Ctx) error {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	owner, err := queryID(c, "principal_id")
	if err != nil {
		return err
	}
	p := principal(c)
	switch {
	case owner != 0:
		if err := tokenAccess(c, owner); err != nil {
			return err
		}
	case p.Can(access.PermUsersManage, 0):
		owner = -1 // everyone's
	case p.ID == 0:
		return &access.Denied{Perm: access.PermUsersManage}
	default:
		owner = p.ID
	}
	page, err := s.id.ListTokens(c.UserContext(), owner, c.Query("cursor"), limit)
	if err != nil {
		return err
	}
	owners, err := s.id.TokenOwnerNames(c.UserContext(), page.Items...)
	if err != nil {
		return err
	}
	return c.JSON(viewPage(page, func(t store.AuthToken) tokenView { return viewToken(t, owners) }))
}

func (s *server) getToken(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	t, err := s.id.GetToken(c.UserContext(), id)
	if err != nil {
		if !principal(c).Can(access.PermUsersManage, 0) {
			return &access.Denied{Perm: access.PermUsersManage} // do not tell who has which token ids
		}
		return err
	}
	if err := tokenAccess(c, t.PrincipalID); err != nil {
		return err
	}
	v, err := s.viewTokenOf(c, t)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

// revokeToken is DELETE /tokens/{id}: the token stays listed as revoked.
func (s *server) revokeToken(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	t, err := s.id.GetToken(c.UserContext(), id)
	if err != nil {
		if !principal(c).Can(access.PermUsersManage, 0) {
			return &access.Denied{Perm: access.PermUsersManage}
		}
		return err
	}
	if err := tokenAccess(c, t.PrincipalID); err != nil {
		return err
	}
	t, err = s.id.RevokeToken(c.UserContext(), id)
	if err != nil {
		return err
	}
	v, err := s.viewTokenOf(c, t)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

// ---- role bindings

type bindingView struct {
	ID          int64   `json:"id"`
	Role        string  `json:"role"`
	GroupID     int64   `json:"group_id"`
	PrincipalID int64   `json:"principal_id"`
	SSOGroup    string  `json:"sso_group"`
	CreatedAt   *string `json:"created_at"`
	// The names of what is bound, in the list (GET): "" when not known.
	PrincipalName string `json:"principal_name,omitempty"`
	PrincipalKind string `json:"principal_kind,omitempty"`
	GroupAppName  string `json:"group_app_name,omitempty"`
}

func viewBinding(b store.RoleBinding) bindingView {
	return bindingView{ID: b.ID, Role: b.Role, GroupID: b.GroupID, PrincipalID: b.PrincipalID, SSOGroup: b.SSOGroup, CreatedAt: rfc3339(b.CreatedMs)}
}

func viewNamedBinding(b store.NamedBinding) bindingView {
	v := viewBinding(b.RoleBinding)
	v.PrincipalName, v.PrincipalKind, v.GroupAppName = b.PrincipalName, b.PrincipalKind, b.GroupAppName
	return v
}

type bindingRequest struct {
	Role        string `json:"role"`
	GroupID     int64  `json:"group_id"`
	PrincipalID int64  `json:"principal_id"`
	SSOGroup    string `json:"sso_group"`
}

func (s *server) listBindings(c *fiber.Ctx) error {
	bs, err := s.id.ListBindings(c.UserContext())
	if err != nil {
		return err
	}
	out := make([]bindingView, 0, len(bs))
	for _, b := range bs {
		out = append(out, viewNamedBinding(b))
	}
	return c.JSON(apitypes.Page[bindingView]{Items: out})
}

func (s *server) createBinding(c *fiber.Ctx) error {
	var req bindingRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	b, err := s.id.CreateBinding(c.UserContext(), identity.BindingCreateParams{Role: req.Role, GroupID: req.GroupID, PrincipalID: req.PrincipalID, SSOGroup: req.SSOGroup})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(viewBinding(b))
}

func (s *server) deleteBinding(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if err := s.id.DeleteBinding(c.UserContext(), id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// ---- audit

type auditView struct {
	ID         int64          `json:"id"`
	At         *string        `json:"at"`
	Principal  string         `json:"principal"`
	TokenName  string         `json:"token_name"`
	ClientAddr string         `json:"client_addr"`
	RequestID  string         `json:"request_id"`
	Action     string         `json:"action"`
	ObjectType string         `json:"object_type"`
	ObjectID   string         `json:"object_id"`
	GroupID    int64          `json:"group_id"`
	Changes    map[string]any `json:"changes"`
}

func viewAudit(e store.AuditEvent) auditView {
	v := auditView{ID: e.ID, At: rfc3339(e.AtMs), Principal: e.Principal, TokenName: e.TokenName, ClientAddr: e.ClientAddr, RequestID: e.RequestID,
		Action: e.Action, ObjectType: e.ObjectType, ObjectID: e.ObjectID, GroupID: e.GroupID, Changes: map[string]any{}}
	_ = jsonUnmarshal(e.Changes, &v.Changes)
	return v
}

func (s *server) listAudit(c *fiber.Ctx) error {
	var p service.AuditListParams
	var err error
	if p.Limit, err = queryInt(c, "limit"); err != nil {
		return err
	}
	if p.From, err = queryTime(c, "from"); err != nil {
		return err
	}
	if p.To, err = queryTime(c, "to"); err != nil {
		return err
	}
	p.Principal, p.ObjectType, p.ObjectID, p.Action, p.Cursor = c.Query("principal"), c.Query("object_type"), c.Query("object_id"), c.Query("action"), c.Query("cursor")
	page, err := s.svc.ListAudit(c.UserContext(), p)
	if err != nil {
		return err
	}
	return c.JSON(viewPage(page, viewAudit))
}

func timeMs(ms int64) time.Time { return time.UnixMilli(ms) }

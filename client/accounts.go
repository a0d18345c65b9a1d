package client

import (
	"context"
	"encoding/json"
	"net/http"
)

// Principal is a user or a service account (GET /api/v1/users/{id}).
type Principal struct {
	ID          int64    `json:"id"`
	Name        string   `json:"name"`
	Kind        string   `json:"kind"`   // user or service
	Source      string   `json:"source"` // local or oidc
	Email       string   `json:"email"`
	SSOGroups   []string `json:"sso_groups"`
	CreatedAt   *string  `json:"created_at"`
	UpdatedAt   *string  `json:"updated_at"`
	LastLoginAt *string  `json:"last_login_at"`
	Disabled    bool     `json:"disabled"`
	DisabledAt  *string  `json:"disabled_at"`
}

// UserInput is the body of POST /api/v1/users.
type UserInput struct {
	Name     string `json:"name"`
	Password string `json:"password"`
	Email    string `json:"email,omitempty"`
}

// PrincipalPatch changes a user or service account; nil fields stay.
type PrincipalPatch struct {
	Name     *string `json:"name,omitempty"`
	Email    *string `json:"email,omitempty"`
	Disabled *bool   `json:"disabled,omitempty"`
}

// Token is an API token's record; Token (the secret) is set only in the
// answer to its creation.
type Token struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	PrincipalID int64  `json:"principal_id"`
	// PrincipalName is the owner's name; "" for a server token.
	PrincipalName string  `json:"principal_name"`
	Prefix        string  `json:"prefix"`
	CreatedAt     *string `json:"created_at"`
	LastUsedAt    *string `json:"last_used_at"`
	ExpiresAt     *string `json:"expires_at"`
	RevokedAt     *string `json:"revoked_at"`
	Token         string  `json:"token"`
}

// TokenInput is the body of POST /api/v1/tokens.
type TokenInput struct {
	Name         string `json:"name"`
	PrincipalID  int64  `json:"principal_id,omitempty"`
	ExpiresAt    string `json:"expires_at,omitempty"`
	ExpiresInSec int64  `json:"expires_in_sec,omitempty"`
}

// RoleBinding grants a role to a principal or an SSO group.
type RoleBinding struct {
	ID          int64   `json:"id"`
	Role        string  `json:"role"`
	GroupID     int64   `json:"group_id"`
	PrincipalID int64   `json:"principal_id"`
	SSOGroup    string  `json:"sso_group"`
	CreatedAt   *string `json:"created_at"`
	// In lists: the names behind the ids (empty where there is none).
	PrincipalName string `json:"principal_name,omitempty"`
	PrincipalKind string `json:"principal_kind,omitempty"`
	GroupAppName  string `json:"group_app_name,omitempty"`
}

// RoleBindingInput is the body of POST /api/v1/role-bindings.
type RoleBindingInput struct {
	Role        string `json:"role"`
	GroupID     int64  `json:"group_id,omitempty"`
	PrincipalID int64  `json:"principal_id,omitempty"`
	SSOGroup    string `json:"sso_group,omitempty"`
}

// AuditEvent is one entry of the audit log.
type AuditEvent struct {
	ID         int64           `json:"id"`
	At         string          `json:"at"`
	Principal  string          `json:"principal"`
	TokenName  string          `json:"token_name"`
	ClientAddr string          `json:"client_addr"`
	RequestID  string          `json:"request_id"`
	Action     string          `json:"action"`
	ObjectType string          `json:"object_type"`
	ObjectID   string          `json:"object_id"`
	GroupID    int64           `json:"group_id"`
	Changes    json.RawMessage `json:"changes"`
}

// ChangeOwnPassword replaces the password of the token's user.
func (c *Client) ChangeOwnPassword(ctx context.Context, oldPassword, newPassword string) error {
	_, err := c.do(ctx, http.MethodPut, "/api/v1/me/password", nil, map[string]string{"old_password": oldPassword, "new_password": newPassword}, nil)
	return err
}

// principals: users ("/api/v1/users") or service accounts ("/api/v1/service-accounts").
func (c *Client) listPrincipals(ctx context.Context, base string, o ListOptions) (Page[Principal], error) {
	var p Page[Principal]
	_, err := c.do(ctx, http.MethodGet, base+o.query(), nil, nil, &p)
	return p, err
}

func (c *Client) principal(ctx context.Context, method, path string, body any) (Principal, error) {
	var p Principal
	_, err := c.do(ctx, method, path, nil, body, &p)
	return p, err
}

// ListUsers lists users by id.
func (c *Client) ListUsers(ctx context.Context, o ListOptions) (Page[Principal], error) {
	return c.listPrincipals(ctx, "/api/v1/users", o)
}

// GetUser reads a user.
func (c *Client) GetUser(ctx context.Context, userID int64) (Principal, error) {
	return c.principal(ctx, http.MethodGet, "/api/v1/users/"+id(userID), nil)
}

// CreateUser creates a local user.
func (c *Client) CreateUser(ctx context.Context, in UserInput) (Principal, error) {
	return c.principal(ctx, http.MethodPost, "/api/v1/users", in)
}

// UpdateUser renames, re-addresses, disables or enables a user.
func (c *Client) UpdateUser(ctx context.Context, userID int64, in PrincipalPatch) (Principal, error) {
	return c.principal(ctx, http.MethodPatch, "/api/v1/users/"+id(userID), in)
}

// SetUserPassword sets a local user's password (admin); its sessions end.
func (c *Client) SetUserPassword(ctx context.Context, userID int64, password string) error {
	_, err := c.do(ctx, http.MethodPut, "/api/v1/users/"+id(userID)+"/password", nil, map[string]string{"password": password}, nil)
	return err
}

// DeleteUser deletes a user with its tokens, sessions and role bindings.
func (c *Client) DeleteUser(ctx context.Context, userID int64) error {
	_, err := c.do(ctx, http.MethodDelete, "/api/v1/users/"+id(userID), nil, nil, nil)
	return err
}

// ListServiceAccounts lists service accounts by id.
func (c *Client) ListServiceAccounts(ctx context.Context, o ListOptions) (Page[Principal], error) {
	return c.listPrincipals(ctx, "/api/v1/service-accounts", o)
}

// CreateServiceAccount creates a service account (it signs in with tokens).
func (c *Client) CreateServiceAccount(ctx context.Context, name string) (Principal, error) {
	return c.principal(ctx, http.MethodPost, "/api/v1/service-accounts", map[string]string{"name": name})
}

// UpdateServiceAccount renames, disables or enables a service account.
func (c *Client) UpdateServiceAccount(ctx context.Context, accountID int64, in PrincipalPatch) (Principal, error) {
	return c.principal(ctx, http.MethodPatch, "/api/v1/service-accounts/"+id(accountID), in)
}

// DeleteServiceAccount deletes a service account with its tokens and bindings.
func (c *Client) DeleteServiceAccount(ctx context.Context, accountID int64) error {
	_, err := c.do(ctx, http.MethodDelete, "/api/v1/service-accounts/"+id(accountID), nil, nil, nil)
	return err
}

// ListTokens lists the client's own tokens; an admin's lists everyone's,
// or those of Filters["principal_id"].
func (c *Client) ListTokens(ctx context.Context, o ListOptions) (Page[Token], error) {
	var p Page[Token]
	_, err := c.do(ctx, http.MethodGet, "/api/v1/tokens"+o.query(), nil, nil, &p)
	return p, err
}

// CreateToken issues a token; its secret is in the answer's Token, once.
func (c *Client) CreateToken(ctx context.Context, in TokenInput) (Token, error) {
	var t Token
	_, err := c.do(ctx, http.MethodPost, "/api/v1/tokens", nil, in, &t)
	return t, err
}

// RevokeToken revokes a token on every replica.
func (c *Client) RevokeToken(ctx context.Context, tokenID int64) (Token, error) {
	var t Token
	_, err := c.do(ctx, http.MethodDelete, "/api/v1/tokens/"+id(tokenID), nil, nil, &t)
	return t, err
}

// ListRoleBindings lists every role binding.
func (c *Client) ListRoleBindings(ctx context.Context) ([]RoleBinding, error) {
	var p Page[RoleBinding]
	_, err := c.do(ctx, http.MethodGet, "/api/v1/role-bindings", nil, nil, &p)
	return p.Items, err
}

// CreateRoleBinding grants a role.
func (c *Client) CreateRoleBinding(ctx context.Context, in RoleBindingInput) (RoleBinding, error) {
	var b RoleBinding
	_, err := c.do(ctx, http.MethodPost, "/api/v1/role-bindings", nil, in, &b)
	return b, err
}

// DeleteRoleBinding takes a role back (not admin from the last admin).
func (c *Client) DeleteRoleBinding(ctx context.Context, bindingID int64) error {
	_, err := c.do(ctx, http.MethodDelete, "/api/v1/role-bindings/"+id(bindingID), nil, nil, nil)
	return err
}

// ListAudit lists audit events, newest first; Filters are principal,
// object_type, object_id, action, from and to (RFC 3339).
func (c *Client) ListAudit(ctx context.Context, o ListOptions) (Page[AuditEvent], error) {
	var p Page[AuditEvent]
	_, err := c.do(ctx, http.MethodGet, "/api/v1/audit"+o.query(), nil, nil, &p)
	return p, err
}

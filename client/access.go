package client

import (
	"context"
	"fmt"
	"net/http"
)

// GetServiceAccount reads a service account.
func (c *Client) GetServiceAccount(ctx context.Context, accountID int64) (Principal, error) {
	return c.principal(ctx, http.MethodGet, "/api/v1/service-accounts/"+id(accountID), nil)
}

// GetToken reads a token's record (never its secret).
func (c *Client) GetToken(ctx context.Context, tokenID int64) (Token, error) {
	var t Token
	_, err := c.do(ctx, http.MethodGet, "/api/v1/tokens/"+id(tokenID), nil, nil, &t)
	return t, err
}

// GetRoleBinding reads one role binding. The server lists bindings but
// has no route for one, so it is found in the list; a binding that is not
// there is a 404 *Error, as from any other Get.
func (c *Client) GetRoleBinding(ctx context.Context, bindingID int64) (RoleBinding, error) {
	all, err := c.ListRoleBindings(ctx)
	if err != nil {
		return RoleBinding{}, err
	}
	for _, b := range all {
		if b.ID == bindingID {
			return b, nil
		}
	}
	return RoleBinding{}, &Error{Status: http.StatusNotFound, Code: "not_found", Message: fmt.Sprintf("role binding %d does not exist", bindingID)}
}

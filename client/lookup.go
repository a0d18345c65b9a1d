package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// GetGroupByAppName reads a group by its app name. The server finds groups
// by id; the name is looked up in its list (name_prefix narrows it), and a
// name no group has is a 404 *Error, as from GetGroup.
func (c *Client) GetGroupByAppName(ctx context.Context, appName string) (Group, error) {
	cur := ""
	for {
		p, err := c.ListGroups(ctx, ListOptions{Limit: 500, Cursor: cur, Filters: map[string]string{"name_prefix": appName}})
		if err != nil {
			return Group{}, err
		}
		for _, g := range p.Items {
			if g.AppName == appName {
				return c.GetGroup(ctx, g.ID) // with its ETag
			}
		}
		if p.NextCursor == "" {
			return Group{}, &Error{Status: http.StatusNotFound, Code: "not_found", Message: fmt.Sprintf("group %q does not exist", appName)}
		}
		cur = p.NextCursor
	}
}

// SetGroupExecutorToken replaces only a group's executor token ("" clears
// it: the server's global executor token applies); ifMatch as for
// UpdateGroup.
func (c *Client) SetGroupExecutorToken(ctx context.Context, groupID int64, token, ifMatch string) (Group, error) {
	return c.group(ctx, http.MethodPut, "/api/v1/groups/"+id(groupID)+"/executor-token", map[string]string{"If-Match": ifMatch},
		map[string]string{"executor_token": token})
}

// JobNextFires answers a saved job's next n fire times (n 0: the server's
// default).
func (c *Client) JobNextFires(ctx context.Context, jobID int64, n int) (NextFires, error) {
	path := "/api/v1/jobs/" + id(jobID) + "/next-fires"
	if n > 0 {
		path += "?" + url.Values{"n": {strconv.Itoa(n)}}.Encode()
	}
	var nf NextFires
	_, err := c.do(ctx, http.MethodGet, path, nil, nil, &nf)
	return nf, err
}

// UpdateJobByID is UpdateJob for a job known by id (PUT /api/v1/jobs/{id}),
// for callers that keep ids, such as the Terraform provider: a rename or a
// move to another group in the same request does not change the path.
func (c *Client) UpdateJobByID(ctx context.Context, jobID int64, in JobInput, ifMatch string) (Job, error) {
	return c.job(ctx, http.MethodPut, "/api/v1/jobs/"+id(jobID), map[string]string{"If-Match": ifMatch}, in)
}

// DeleteJobByID is DeleteJob for a job known by id.
func (c *Client) DeleteJobByID(ctx context.Context, jobID int64, ifMatch string) error {
	_, err := c.do(ctx, http.MethodDelete, "/api/v1/jobs/"+id(jobID), map[string]string{"If-Match": ifMatch}, nil, nil)
	return err
}

package api

import (
	"encoding/json"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/apitypes"
	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
)

// groupRequest is the body of POST and PUT /api/v1/groups[/{id}].
type groupRequest struct {
	AppName string   `json:"app_name"`
	Title   string   `json:"title"`
	Members []string `json:"members"`
	// ExecutorToken: on update, omitted (or null) keeps the group's token,
	// which GET never shows; "" clears it.
	ExecutorToken *string `json:"executor_token"`
	Protocol      string  `json:"protocol"`
	// AcceptRegistrations: omitted = the default (create) or unchanged (update).
	AcceptRegistrations *bool `json:"accept_registrations"`
	// FailureDestination: on update, omitted keeps the group's; "" clears it.
	FailureDestination *string `json:"failure_destination"`

	// The read-only fields of a group's GET output are accepted and
	// ignored, so GET-edit-PUT works; id, when sent, must be the group's own.
	ID               int64           `json:"id"`
	ExecutorTokenSet json.RawMessage `json:"executor_token_set"`
	CreatedAt        json.RawMessage `json:"created_at"`
	UpdatedAt        json.RawMessage `json:"updated_at"`
}

// sendGroup answers a group with its ETag (for If-Match).
func sendGroup(c *fiber.Ctx, g store.Group) error {
	c.Set(fiber.HeaderETag, objectETag(g.ID, g.Version))
	return c.JSON(viewGroup(g))
}

func (s *server) createGroup(c *fiber.Ctx) error {
	var req groupRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	token := ""
	if req.ExecutorToken != nil {
		token = *req.ExecutorToken
	}
	g, err := s.svc.CreateGroup(c.UserContext(), service.GroupCreateParams{AppName: req.AppName, Title: req.Title, Members: req.Members,
		ExecutorToken: token, Protocol: req.Protocol, AcceptRegistrations: req.AcceptRegistrations, FailureDestination: deref(req.FailureDestination)})
	if err != nil {
		return err
	}
	c.Location("/api/v1/groups/" + strconv.FormatInt(g.ID, 10))
	c.Status(fiber.StatusCreated)
	return sendGroup(c, g)
}

func (s *server) listGroups(c *fiber.Ctx) error {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	p, err := s.svc.ListGroups(c.UserContext(), service.GroupListParams{Cursor: c.Query("cursor"), Limit: limit, OnlyGroups: visibleGroups(c, access.PermGroupsRead),
		NamePrefix: c.Query("name_prefix")})
	if err != nil {
		return err
	}
	return c.JSON(viewPage(p, viewGroup))
}

func (s *server) getGroup(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	g, err := s.svc.GetGroup(c.UserContext(), id)
	if err != nil {
		return err
	}
	return sendGroup(c, g)
}

func (s *server) updateGroup(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	ifVersion, err := ifMatchVersion(c, "group", id)
	if err != nil {
		return err
	}
	var req groupRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	if req.ID != 0 && req.ID != id {
		return badRequest("id", "is read-only: it is %d in the body but the path names group %d; leave it out or send the group's own id", req.ID, id)
	}
	// PUT replaces the group: a field left out would be wiped, so the
	// fields it replaces must be there (GET the group, edit, PUT it back).
	var present map[string]json.RawMessage
	if err := json.Unmarshal(c.Body(), &present); err != nil {
		return badRequest("", "the body must be a JSON object: %v", err)
	}
	for _, f := range []string{"title", "members"} {
		if _, ok := present[f]; !ok {
			return badRequest(f, "is required: PUT replaces the group's title and members, so send both (\"\" and [] to empty them); GET the group, edit it and PUT it back")
		}
	}
	g, err := s.svc.UpdateGroup(c.UserContext(), service.GroupUpdateParams{ID: id, IfVersion: ifVersion, AppName: req.AppName, Title: req.Title, Members: req.Members,
		ExecutorToken: req.ExecutorToken, Protocol: req.Protocol, AcceptRegistrations: req.AcceptRegistrations, FailureDestination: req.FailureDestination})
	if err != nil {
		return err
	}
	return sendGroup(c, g)
}

func (s *server) deleteGroup(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	ifVersion, err := ifMatchVersion(c, "group", id)
	if err != nil {
		return err
	}
	if err := s.svc.DeleteGroupIf(c.UserContext(), id, ifVersion); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// executorTokenRequest is the body of PUT /api/v1/groups/{id}/executor-token.
type executorTokenRequest struct {
	ExecutorToken *string `json:"executor_token"`
}

// setExecutorToken replaces only the group's executor token with the one
// given ("" clears it: the global executor token applies).
func (s *server) setExecutorToken(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	ifVersion, err := ifMatchVersion(c, "group", id)
	if err != nil {
		return err
	}
	var req executorTokenRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	if req.ExecutorToken == nil {
		return badRequest("executor_token", "is required: the new token (16..255 letters, digits, '_' and '-'), or \"\" to use the global executor token; POST .../executor-token/rotate generates one")
	}
	g, err := s.svc.SetGroupExecutorToken(c.UserContext(), id, ifVersion, *req.ExecutorToken)
	if err != nil {
		return err
	}
	return sendGroup(c, g)
}

// rotatedTokenView answers a rotation: the new token, shown this once.
type rotatedTokenView struct {
	ExecutorToken string         `json:"executor_token"`
	Group         apitypes.Group `json:"group"`
}

// rotateExecutorToken gives the group a new executor token generated by the
// server.
func (s *server) rotateExecutorToken(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	ifVersion, err := ifMatchVersion(c, "group", id)
	if err != nil {
		return err
	}
	g, token, err := s.svc.RotateGroupExecutorToken(c.UserContext(), id, ifVersion)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderETag, objectETag(g.ID, g.Version))
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(rotatedTokenView{ExecutorToken: token, Group: viewGroup(g)})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

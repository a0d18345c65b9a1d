package api

import (
	"encoding/json"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/access"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
)

// groupRequest is the body of POST and PUT /api/v1/groups[/{id}].
type groupRequest struct {
	AppName       string   `json:"app_name"`
	Title         string   `json:"title"`
	Members       []string `json:"members"`
	ExecutorToken string   `json:"executor_token"`
	Protocol      string   `json:"protocol"`
	// AcceptRegistrations: omitted = the default (create) or unchanged (update).
	AcceptRegistrations *bool `json:"accept_registrations"`

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
	g, err := s.svc.CreateGroup(c.UserContext(), service.GroupCreateParams{AppName: req.AppName, Title: req.Title, Members: req.Members,
		ExecutorToken: req.ExecutorToken, Protocol: req.Protocol, AcceptRegistrations: req.AcceptRegistrations})
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
	p, err := s.svc.ListGroups(c.UserContext(), service.GroupListParams{Cursor: c.Query("cursor"), Limit: limit, OnlyGroups: visibleGroups(c, access.PermGroupsRead)})
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
	g, err := s.svc.UpdateGroup(c.UserContext(), service.GroupUpdateParams{ID: id, IfVersion: ifVersion, AppName: req.AppName, Title: req.Title, Members: req.Members,
		ExecutorToken: req.ExecutorToken, Protocol: req.Protocol, AcceptRegistrations: req.AcceptRegistrations})
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

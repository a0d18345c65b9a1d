package api

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/access"
	"github.com/ringjob/ringjob/service"
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
	return c.Status(fiber.StatusCreated).JSON(viewGroup(g))
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
	return c.JSON(viewGroup(g))
}

func (s *server) updateGroup(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var req groupRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	g, err := s.svc.UpdateGroup(c.UserContext(), service.GroupUpdateParams{ID: id, AppName: req.AppName, Title: req.Title, Members: req.Members,
		ExecutorToken: req.ExecutorToken, Protocol: req.Protocol, AcceptRegistrations: req.AcceptRegistrations})
	if err != nil {
		return err
	}
	return c.JSON(viewGroup(g))
}

func (s *server) deleteGroup(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if err := s.svc.DeleteGroup(c.UserContext(), id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

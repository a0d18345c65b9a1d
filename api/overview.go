package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/auth/access"
)

// The overview routes serve the console's dashboard and executors page:
// scheduler replicas, registered executors and job counts.

type replicaView struct {
	ID             string  `json:"id"`
	Host           string  `json:"host"`
	StartedAt      *string `json:"started_at"`
	HeartbeatAt    *string `json:"heartbeat_at"`
	HeartbeatAgeMs int64   `json:"heartbeat_age_ms"`
	StoppedAt      *string `json:"stopped_at"`
	DeclaredDeadAt *string `json:"declared_dead_at"`
	Partitions     []int   `json:"partitions"`
}

func (s *server) listReplicas(c *fiber.Ctx) error {
	rs, err := s.svc.Replicas(c.UserContext())
	if err != nil {
		return err
	}
	now := s.now().UnixMilli()
	out := make([]replicaView, 0, len(rs))
	for _, r := range rs {
		ps := r.Partitions
		if ps == nil {
			ps = []int{}
		}
		out = append(out, replicaView{ID: r.ID, Host: r.Host, StartedAt: rfc3339(r.StartedMs), HeartbeatAt: rfc3339(r.HeartbeatMs),
			HeartbeatAgeMs: max(0, now-r.HeartbeatMs), StoppedAt: rfc3339(r.StoppedMs), DeclaredDeadAt: rfc3339(r.ReapedMs), Partitions: ps})
	}
	return c.JSON(fiber.Map{"items": out})
}

type registeredExecutorView struct {
	GroupID        int64   `json:"group_id"`
	AppName        string  `json:"app_name"`
	Address        string  `json:"address"`
	Protocol       string  `json:"protocol"`
	RegisteredAt   *string `json:"registered_at"`
	HeartbeatAt    *string `json:"heartbeat_at"`
	HeartbeatAgeMs int64   `json:"heartbeat_age_ms"`
	// Running counts the runs running on the executor; Busy is Running > 0.
	Running int  `json:"running"`
	Busy    bool `json:"busy"`
}

func (s *server) listExecutors(c *fiber.Ctx) error {
	groupID, err := queryID(c, "group_id")
	if err != nil {
		return err
	}
	if groupID > 0 {
		if err := require(c, access.PermGroupsRead, groupID); err != nil {
			return err
		}
	}
	es, err := s.svc.RegisteredExecutors(c.UserContext(), groupID, visibleGroups(c, access.PermGroupsRead))
	if err != nil {
		return err
	}
	now := s.now().UnixMilli()
	out := make([]registeredExecutorView, 0, len(es))
	for _, e := range es {
		out = append(out, registeredExecutorView{GroupID: e.GroupID, AppName: e.AppName, Address: e.Address, Protocol: e.Protocol,
			RegisteredAt: rfc3339(e.RegisteredMs), HeartbeatAt: rfc3339(e.UpdatedMs), HeartbeatAgeMs: max(0, now-e.UpdatedMs),
			Running: e.Running, Busy: e.Running > 0})
	}
	return c.JSON(fiber.Map{"items": out})
}

func (s *server) jobCounts(c *fiber.Ctx) error {
	groupID, err := queryID(c, "group_id")
	if err != nil {
		return err
	}
	if groupID > 0 {
		if err := require(c, access.PermJobsRead, groupID); err != nil {
			return err
		}
	}
	jobs, enabled, err := s.svc.JobCounts(c.UserContext(), groupID, visibleGroups(c, access.PermJobsRead))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"jobs": jobs, "enabled": enabled})
}

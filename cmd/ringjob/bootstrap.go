package main

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
)

// bootstrap creates the configured groups and jobs that do not exist yet
// (groups by app name, jobs by name within their group). Existing ones are
// left as they are, so edits made through the API survive restarts.
func bootstrap(ctx context.Context, svc *service.Service, b Bootstrap, log *logrus.Entry) error {
	if len(b.Groups) == 0 && len(b.Jobs) == 0 {
		return nil
	}
	groups := map[string]store.Group{}
	cursor := ""
	for {
		page, err := svc.ListGroups(ctx, service.GroupListParams{Cursor: cursor, Limit: service.MaxPageLimit})
		if err != nil {
			return fmt.Errorf("bootstrap: list groups: %w", err)
		}
		for _, g := range page.Items {
			groups[g.AppName] = g
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	for i, bg := range b.Groups {
		if _, ok := groups[bg.AppName]; ok {
			continue
		}
		g, err := svc.CreateGroup(ctx, service.GroupCreateParams{AppName: bg.AppName, Title: bg.Title, Members: bg.Members,
			AcceptRegistrations: bg.AcceptRegistrations})
		if err != nil {
			return fmt.Errorf("bootstrap.groups[%d] (%s): %w", i, bg.AppName, err)
		}
		groups[g.AppName] = g
		log.WithField("group", g.AppName).Info("bootstrap: created group")
	}
	for i, bj := range b.Jobs {
		g, ok := groups[bj.Group]
		if !ok {
			return fmt.Errorf("bootstrap.jobs[%d] (%s): group %q does not exist; declare it under bootstrap.groups", i, bj.Name, bj.Group)
		}
		page, err := svc.ListJobs(ctx, service.JobListParams{GroupID: g.ID, Name: bj.Name, Limit: service.MaxPageLimit})
		if err != nil {
			return fmt.Errorf("bootstrap: list jobs: %w", err)
		}
		exists := false
		for _, j := range page.Items {
			exists = exists || j.Name == bj.Name
		}
		if exists {
			continue
		}
		j, err := svc.CreateJob(ctx, service.JobCreateParams{Enabled: bj.Enabled, JobSpec: service.JobSpec{
			GroupID: g.ID, Name: bj.Name, ScheduleType: bj.ScheduleType, ScheduleConf: bj.ScheduleConf, TimeZone: bj.TimeZone,
			MisfirePolicy: bj.MisfirePolicy, Handler: bj.Handler, Params: bj.Params, TimeoutSec: bj.TimeoutSec,
		}})
		if err != nil {
			return fmt.Errorf("bootstrap.jobs[%d] (%s): %w", i, bj.Name, err)
		}
		log.WithFields(logrus.Fields{"job": j.Name, "job_id": j.ID}).Info("bootstrap: created job")
	}
	return nil
}

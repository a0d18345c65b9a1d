package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ringjob/ringjob/client"
)

// resolveJob reads the job an argument names: GROUP/NAME (its group's app
// name and its name) or its numeric id.
func resolveJob(ctx context.Context, c *client.Client, arg string) (client.Job, client.JobRef, error) {
	if id, err := strconv.ParseInt(arg, 10, 64); err == nil {
		j, err := c.GetJob(ctx, id)
		if err != nil {
			return j, client.JobRef{}, err // the server's message names the job
		}
		g, err := c.GetGroup(ctx, j.GroupID)
		if err != nil {
			return j, client.JobRef{}, fmt.Errorf("group %d of job %d: %w", j.GroupID, id, err)
		}
		return j, client.JobRef{AppName: g.AppName, Name: j.Name}, nil
	}
	ref, err := parseJobArg(arg)
	if err != nil {
		return client.Job{}, ref, err
	}
	j, err := c.GetJobByName(ctx, ref)
	if err != nil {
		return j, ref, err
	}
	return j, ref, nil
}

func parseJobArg(arg string) (client.JobRef, error) {
	ref, err := client.ParseJobRef(arg)
	if err != nil {
		return ref, usageErrorf("%q: name a job as GROUP/NAME (its group's app name and its name) or by its id", arg)
	}
	return ref, nil
}

// resolveGroup reads the group an argument names: its app name or its id.
func resolveGroup(ctx context.Context, c *client.Client, arg string) (client.Group, error) {
	if id, err := strconv.ParseInt(arg, 10, 64); err == nil {
		return c.GetGroup(ctx, id)
	}
	groups, err := c.AllGroups(ctx)
	if err != nil {
		return client.Group{}, fmt.Errorf("list groups: %w", err)
	}
	for _, g := range groups {
		if g.AppName == arg {
			// Read it alone for its ETag.
			return c.GetGroup(ctx, g.ID)
		}
	}
	return client.Group{}, fmt.Errorf("no group with app name %q (see `ringjob groups list`)", arg)
}

// groupNames maps group ids to app names, for tables.
func groupNames(ctx context.Context, c *client.Client) (map[int64]string, error) {
	groups, err := c.AllGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	m := make(map[int64]string, len(groups))
	for _, g := range groups {
		m[g.ID] = g.AppName
	}
	return m, nil
}

func schedule(j client.Job) string {
	if j.ScheduleType == "" || j.ScheduleType == "none" {
		return "none"
	}
	return strings.TrimSpace(j.ScheduleType + " " + j.ScheduleConf)
}

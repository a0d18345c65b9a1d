package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringjob/ringjob/client"
)

// executorRow is one target of a group, as `executors list` shows it:
// a static member (an address, a Lambda function, a local command) or an
// executor registered by heartbeat.
type executorRow struct {
	Group          string  `json:"group"`
	Address        string  `json:"address"`
	Source         string  `json:"source"` // member or registered
	Protocol       string  `json:"protocol"`
	HeartbeatAt    *string `json:"heartbeat_at,omitempty"`
	HeartbeatAgeMs *int64  `json:"heartbeat_age_ms,omitempty"`
}

func (a *app) newExecutorsCommand() *cobra.Command {
	exe := groupCommand("executors", "List the targets that run jobs")
	exe.Aliases = []string{"executor"}
	addClientFlags(exe)
	var out outputFormat
	var group string
	list := &cobra.Command{
		Use:   "list [--group APP_NAME]",
		Short: "List every group's targets: its members and the executors registered by heartbeat",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			var groups []client.Group
			var groupID int64
			if group != "" {
				g, err := resolveGroup(ctx, c, group)
				if err != nil {
					return err
				}
				groups, groupID = []client.Group{g}, g.ID
			} else if groups, err = c.AllGroups(ctx); err != nil {
				return fmt.Errorf("list groups: %w", err)
			}
			rows := []executorRow{}
			for _, g := range groups {
				for _, m := range g.Members {
					rows = append(rows, executorRow{Group: g.AppName, Address: m, Source: "member", Protocol: g.Protocol})
				}
			}
			registered, err := c.ListExecutors(ctx, groupID)
			if err != nil {
				return fmt.Errorf("list registered executors: %w", err)
			}
			for _, e := range registered {
				age := e.HeartbeatAgeMs
				rows = append(rows, executorRow{Group: e.AppName, Address: e.Address, Source: "registered", Protocol: e.Protocol,
					HeartbeatAt: e.HeartbeatAt, HeartbeatAgeMs: &age})
			}
			return printObjects(a.stdout, out, rows, func() *table {
				t := &table{header: []string{"GROUP", "ADDRESS", "SOURCE", "PROTOCOL", "LAST HEARTBEAT"}}
				for _, r := range rows {
					var hb any
					if r.HeartbeatAgeMs != nil {
						hb = (time.Duration(*r.HeartbeatAgeMs) * time.Millisecond).Round(time.Second).String() + " ago"
					}
					t.add(r.Group, r.Address, r.Source, r.Protocol, hb)
				}
				return t
			})
		},
	}
	list.Flags().StringVar(&group, "group", "", "only this group's targets (app name or id)")
	_ = list.RegisterFlagCompletionFunc("group", a.completeGroups)
	addOutputFlag(list, &out)
	exe.AddCommand(list)
	return exe
}

func (a *app) newNextFiresCommand() *cobra.Command {
	var out outputFormat
	var tz, typ string
	var n int
	cmd := &cobra.Command{
		Use:   `next-fires "CRON" [--tz ZONE] [-n N]`,
		Short: "Show the next fire times of a schedule (checked by the server)",
		Args:  exactArgs(1, `one schedule, e.g. "0 0 3 * * ?"`),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			nf, err := c.PreviewSchedule(cmd.Context(), client.PreviewInput{ScheduleType: typ, ScheduleConf: args[0], TimeZone: tz, N: n})
			if err != nil {
				return fmt.Errorf("next fires of %q: %w", args[0], err)
			}
			return printObjects(a.stdout, out, nf, func() *table {
				t := &table{header: []string{"UTC", "LOCAL (" + nf.TimeZone + ")"}}
				for i, at := range nf.Items {
					local := ""
					if i < len(nf.Local) {
						local = nf.Local[i]
					}
					t.add(at, local)
				}
				return t
			})
		},
	}
	addClientFlags(cmd)
	cmd.Flags().StringVar(&tz, "tz", "", "the time zone of the schedule (e.g. Europe/Paris; default the server's default)")
	cmd.Flags().StringVar(&typ, "type", "cron", "cron, fixed_rate or at")
	cmd.Flags().IntVarP(&n, "count", "n", 5, "how many fire times")
	addOutputFlag(cmd, &out)
	return cmd
}

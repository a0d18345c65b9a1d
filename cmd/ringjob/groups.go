package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/internal/kind"
)

func (a *app) newGroupsCommand() *cobra.Command {
	groups := groupCommand("groups", "List, show, create, edit and delete groups of targets")
	groups.Aliases = []string{"group"}
	addClientFlags(groups)
	groups.AddCommand(a.newGroupsListCommand(), a.newGroupsGetCommand(), a.newGroupsCreateCommand(),
		a.newGroupsEditCommand(), a.newGroupsDeleteCommand())
	return groups
}

func groupsTable(groups []client.Group) *table {
	t := &table{header: []string{"ID", "APP NAME", "TITLE", "PROTOCOL", "REGISTRATIONS", "MEMBERS"}}
	for _, g := range groups {
		reg := "refused"
		if g.AcceptRegistrations {
			reg = "accepted"
		}
		t.add(g.ID, g.AppName, g.Title, g.Protocol, reg, g.Members)
	}
	return t
}

func (a *app) newGroupsListCommand() *cobra.Command {
	var out outputFormat
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List groups",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			groups, err := c.AllGroups(cmd.Context())
			if err != nil {
				return fmt.Errorf("list groups: %w", err)
			}
			if groups == nil {
				groups = []client.Group{}
			}
			return printObjects(a.stdout, out, groups, func() *table { return groupsTable(groups) })
		},
	}
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) withGroup(f func(ctx context.Context, c *client.Client, g client.Group) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := a.apiClient(cmd)
		if err != nil {
			return err
		}
		g, err := resolveGroup(cmd.Context(), c, args[0])
		if err != nil {
			return err
		}
		return f(cmd.Context(), c, g)
	}
}

func (a *app) newGroupsGetCommand() *cobra.Command {
	var out outputFormat
	cmd := &cobra.Command{
		Use:               "get APP_NAME|ID",
		Short:             "Show a group",
		Args:              exactArgs(1, "one group, its app name or id"),
		ValidArgsFunction: a.completeGroups,
		RunE: a.withGroup(func(_ context.Context, _ *client.Client, g client.Group) error {
			return printObjects(a.stdout, out, g, func() *table { return groupsTable([]client.Group{g}) })
		}),
	}
	addOutputFlag(cmd, &out)
	return cmd
}

// groupFlags are the flags that set a group's fields.
type groupFlags struct {
	title, protocol, token string
	members                []string
	register               bool
}

func (f *groupFlags) addTo(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.title, "title", "", "a title for people")
	fs.StringVar(&f.protocol, "protocol", "", "how its executors are called, one of "+protocolHelp())
	fs.StringVar(&f.token, "executor-token", "", "the group's own executor access token")
	fs.StringArrayVar(&f.members, "member", nil, "a target of the group: an executor address, lambda://ARN or local://NAME (repeatable)")
	fs.BoolVar(&f.register, "accept-registrations", false, "let executors register themselves into the group")
}

// apply sets the fields whose flags were given.
func (f *groupFlags) apply(cmd *cobra.Command, in *client.GroupInput) {
	fs := cmd.Flags()
	if fs.Changed("title") {
		in.Title = f.title
	}
	if fs.Changed("protocol") {
		in.Protocol = f.protocol
	}
	if fs.Changed("executor-token") {
		in.ExecutorToken = f.token
	}
	if fs.Changed("member") {
		in.Members = f.members
	}
	if fs.Changed("accept-registrations") {
		in.AcceptRegistrations = &f.register
	}
}

func (a *app) newGroupsCreateCommand() *cobra.Command {
	var out outputFormat
	var fl groupFlags
	cmd := &cobra.Command{
		Use:   "create APP_NAME [--title T] [--member ADDR ...]",
		Short: "Create a group",
		Args:  exactArgs(1, "the new group's app name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			in := client.GroupInput{AppName: args[0]}
			fl.apply(cmd, &in)
			g, err := c.CreateGroup(cmd.Context(), in)
			if err != nil {
				return fmt.Errorf("create group %s: %w", args[0], err)
			}
			return printObjects(a.stdout, out, g, func() *table { return groupsTable([]client.Group{g}) })
		},
	}
	fl.addTo(cmd)
	addOutputFlag(cmd, &out)
	return cmd
}

// groupInputOf is the input that leaves g as it is.
func groupInputOf(g client.Group) client.GroupInput {
	reg := g.AcceptRegistrations
	return client.GroupInput{AppName: g.AppName, Title: g.Title, Members: g.Members, Protocol: g.Protocol, AcceptRegistrations: &reg}
}

func (a *app) newGroupsEditCommand() *cobra.Command {
	var out outputFormat
	var fl groupFlags
	cmd := &cobra.Command{
		Use:   "edit APP_NAME|ID [flags]",
		Short: "Edit a group in $EDITOR, or change the fields given as flags",
		Long: `Edit a group. With flags, only those fields change. Without, the group opens
as YAML in $VISUAL or $EDITOR (default vi); what you save is sent. Either
way the change is refused if someone else changed the group since it was
read (If-Match). The editor needs a terminal; when the change is refused,
your edit stays in the file the error names.`,
		Args:              exactArgs(1, "one group, its app name or id"),
		ValidArgsFunction: a.completeGroups,
		RunE: func(cmd *cobra.Command, args []string) error {
			fieldFlags := cmd.Flags().NFlag() - countChanged(cmd, "output", "context")
			if fieldFlags == 0 && !a.stdinIsTerminal() {
				return usageErrorf("without flags, groups edit opens an editor, and standard input is not a terminal; give the fields to change as flags, or use ringjob apply -f FILE")
			}
			return a.withGroup(func(ctx context.Context, c *client.Client, g client.Group) error {
				in := groupInputOf(g)
				kept := ""
				if fieldFlags > 0 {
					fl.apply(cmd, &in)
				} else {
					var patch map[string]any
					var err error
					patch, kept, err = a.editInEditor(ctx, g, "group-"+g.AppName)
					if err != nil || patch == nil {
						return err
					}
					doc := mergeJSON(toMap(g), patch)
					for _, ro := range []string{"id", "executor_token_set", "created_at", "updated_at"} {
						delete(doc, ro)
					}
					b, _ := json.Marshal(doc)
					in = client.GroupInput{}
					if err := fromYAMLOrJSON(b, &in); err != nil {
						return fmt.Errorf("your edit (kept in %s): %w", kept, err)
					}
				}
				ng, err := c.UpdateGroup(ctx, g.ID, in, g.ETag)
				if err != nil {
					err = fmt.Errorf("edit group %s: %w", g.AppName, err)
					if kept != "" {
						return editKept(err, kept, "ringjob groups edit "+g.AppName)
					}
					return err
				}
				if kept != "" {
					_ = os.Remove(kept)
				}
				return printObjects(a.stdout, out, ng, func() *table { return groupsTable([]client.Group{ng}) })
			})(cmd, args)
		},
	}
	fl.addTo(cmd)
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newGroupsDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "delete APP_NAME|ID",
		Short:             "Delete an empty group",
		Args:              exactArgs(1, "one group, its app name or id"),
		ValidArgsFunction: a.completeGroups,
		RunE: a.withGroup(func(ctx context.Context, c *client.Client, g client.Group) error {
			if err := c.DeleteGroup(ctx, g.ID, g.ETag); err != nil {
				return fmt.Errorf("delete group %s: %w", g.AppName, err)
			}
			fmt.Fprintf(a.stdout, "deleted group %s (id %d)\n", g.AppName, g.ID)
			return nil
		}),
	}
}

// protocolHelp lists the executor protocols the server takes, quoted (one
// is empty), each with who speaks it.
func protocolHelp() string {
	parts := make([]string, len(kind.Protocols))
	for i, p := range kind.Protocols {
		parts[i] = fmt.Sprintf("%q (%s)", string(p), p.Describe())
	}
	return strings.Join(parts, ", ")
}

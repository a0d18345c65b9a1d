package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// completeJobs completes a job argument with GROUP/NAME of the server's
// jobs (cobra's ValidArgsFunction). An unreachable server completes
// nothing rather than an error in the user's shell.
func (a *app) completeJobs(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 { // the commands take one job
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
	defer cancel()
	c, err := a.apiClient(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names, err := groupNames(ctx, c)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	jobs, err := c.AllJobs(ctx, nil)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, j := range jobs {
		ref := names[j.GroupID] + "/" + j.Name
		if strings.HasPrefix(ref, toComplete) {
			out = append(out, ref+"\t"+schedule(j))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeGroups completes a group argument with the server's app names.
func (a *app) completeGroups(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
	defer cancel()
	c, err := a.apiClient(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	groups, err := c.AllGroups(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, g := range groups {
		if strings.HasPrefix(g.AppName, toComplete) {
			out = append(out, g.AppName+"\t"+g.Title)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeContexts completes a context name from the config file.
func (a *app) completeContexts(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	cfg, _, err := a.loadCLIConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, x := range cfg.Contexts {
		if strings.HasPrefix(x.Name, toComplete) {
			out = append(out, x.Name+"\t"+x.Server)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeJobFlag completes a flag that names a job (--child), whatever
// the command's arguments.
func (a *app) completeJobFlag(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return a.completeJobs(cmd, nil, toComplete)
}

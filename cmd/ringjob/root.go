package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes scripts can rely on.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// app holds what every command shares: its streams and the environment.
// Commands reach it through the closures that build them; there are no
// package-level variables.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

func newApp(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
}

// run executes args in-process with a background context (tests).
func run(args []string, stdout, stderr io.Writer) int {
	return newApp(os.Stdin, stdout, stderr, os.Getenv).execute(context.Background(), args)
}

// commandGroups build the root's subcommands, one file per group. A new
// group of commands (e.g. jobs as code: export/apply/diff/sync) adds its
// constructor here and lives in its own file.
func (a *app) commandGroups() []func() *cobra.Command {
	return []func() *cobra.Command{
		// On the server host, with the database.
		a.newServerCommand, a.newMigrateCommand, a.newAdminCommand, a.newDevCommand, a.newVersionCommand,
		// Clients of the REST API (contexts.go: apiClient).
		a.newLoginCommand, a.newContextCommand, a.newJobsCommand, a.newRunsCommand, a.newGroupsCommand,
		a.newExecutorsCommand, a.newNextFiresCommand, a.newWorkflowsCommand,
		// Access (access.go, audit.go).
		a.newUsersCommand, a.newServiceAccountsCommand, a.newTokensCommand, a.newRoleBindingsCommand, a.newAuditCommand,
		// Jobs as code (jobsascode.go).
		a.newExportCommand, a.newApplyCommand, a.newDiffCommand, a.newSyncCommand,
		// From other schedulers to jobs as code (importcmd.go).
		a.newImportCommand,
	}
}

func (a *app) newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "ringjob",
		Short: "Ringjob: a distributed job scheduler",
		Long: `Ringjob: a distributed job scheduler.

The server commands (server, migrate, admin, dev) read their configuration
from the YAML file (--config), then RINGJOB_* environment variables, then
flags; see README.md for every option.`,
		Version:       version,
		SilenceErrors: true,
		SilenceUsage:  true,
		// With no command, the help goes to stderr and it is a usage error.
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(a.stderr)
			_ = cmd.Help()
			return usageError{errors.New("give a command")}
		},
	}
	root.SetVersionTemplate("ringjob {{.Version}}\n")
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetIn(a.stdin)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	for _, build := range a.commandGroups() {
		root.AddCommand(build())
	}
	return root
}

// execute runs the command line and answers the process's exit code.
func (a *app) execute(ctx context.Context, args []string) int {
	root := a.newRootCommand()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ec exitCode
	if errors.As(err, &ec) {
		if ec.msg != "" {
			fmt.Fprintln(a.stderr, ec.msg)
		}
		return ec.code
	}
	name := "ringjob"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	var ue usageError
	if errors.As(err, &ue) || isCobraUsageError(err) {
		fmt.Fprintf(a.stderr, "%s: %v\nRun '%s --help' for usage.\n", name, err, name)
		return exitUsage
	}
	fmt.Fprintf(a.stderr, "%s: %v\n", name, err)
	return exitFailure
}

// usageError is a wrong command line: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitCode ends the command with code after printing msg (if any) on
// stderr, e.g. `trigger --wait` exiting with the run's outcome.
type exitCode struct {
	code int
	msg  string
}

func (e exitCode) Error() string { return fmt.Sprintf("exit %d: %s", e.code, e.msg) }

// isCobraUsageError recognises the argument errors cobra makes itself
// (unknown command, wrong number of arguments).
func isCobraUsageError(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "received ", "invalid argument"} {
		if strings.HasPrefix(s, p) || strings.Contains(s, " "+p) {
			return true
		}
	}
	return false
}

// groupCommand is a command that only holds subcommands: without one, or
// with an unknown one, it is a usage error (exit 2), not a silent help.
func groupCommand(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				cmd.SetOut(cmd.ErrOrStderr())
				_ = cmd.Help()
				return usageErrorf("give a subcommand")
			}
			return usageErrorf("unknown command %q", args[0])
		},
	}
}

// exactArgs is cobra.ExactArgs naming what is expected, as a usage error.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("want %s, got %d argument(s)", what, len(args))
		}
		return nil
	}
}

func (a *app) newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "ringjob %s\n", version)
			return nil
		},
	}
}

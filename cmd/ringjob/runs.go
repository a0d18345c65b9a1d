package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/servicekit"
)

func (a *app) newRunsCommand() *cobra.Command {
	runs := groupCommand("runs", "List and show runs, read their logs, kill them")
	runs.Aliases = []string{"run"}
	addClientFlags(runs)
	runs.AddCommand(a.newRunsListCommand(), a.newRunsGetCommand(), a.newRunsLogsCommand(), a.newRunsKillCommand())
	return runs
}

func runsTable(runs []client.Run) *table {
	t := &table{header: []string{"ID", "JOB", "STATE", "TRIGGER", "SCHEDULED", "FINISHED", "TARGET", "MESSAGE"}}
	for _, r := range runs {
		msg := r.Message
		if len(msg) > 60 {
			msg = msg[:57] + "..."
		}
		t.add(r.ID, runJobName(r), r.State, r.TriggerType, r.ScheduledAt, r.FinishedAt, r.Target, msg)
	}
	return t
}

// runJobName names a run's job as GROUP/NAME, the form --job takes; a run
// whose job is gone keeps its id.
func runJobName(r client.Run) string {
	if r.JobName == "" {
		return fmt.Sprintf("job %d", r.JobID)
	}
	return r.AppName + "/" + r.JobName
}

func parseRunID(arg string) (int64, error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id <= 0 {
		return 0, usageErrorf("%q: a run is named by its id (a number)", arg)
	}
	return id, nil
}

func (a *app) newRunsListCommand() *cobra.Command {
	var out outputFormat
	var job, group, state, trigger, cursor string
	var limit int
	var every bool
	cmd := &cobra.Command{
		Use:   "list [--job GROUP/NAME|ID] [--state S] [--limit N] [--cursor C | --all]",
		Short: "List runs, newest first",
		Long: `List runs, newest first, --limit at a time. When more follow, the command
that shows the next page is printed on stderr (its --cursor); --all lists
every page (in pages of --limit, or of the server's largest page when
--limit is not given).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if every && cursor != "" {
				return usageErrorf("give --cursor or --all, not both")
			}
			if limit < 1 || limit > servicekit.MaxPageLimit {
				return usageErrorf("--limit must be between 1 and %d, got %d; page with --cursor or --all for more", servicekit.MaxPageLimit, limit)
			}
			if every && !cmd.Flags().Changed("limit") {
				limit = servicekit.MaxPageLimit
			}
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			filters := map[string]string{}
			if job != "" {
				j, _, err := resolveJob(ctx, c, job)
				if err != nil {
					return err
				}
				filters["job_id"] = strconv.FormatInt(j.ID, 10)
			}
			if group != "" {
				g, err := resolveGroup(ctx, c, group)
				if err != nil {
					return err
				}
				filters["group_id"] = strconv.FormatInt(g.ID, 10)
			}
			if state != "" {
				filters["state"] = state
			}
			if trigger != "" {
				filters["trigger_type"] = trigger
			}
			runs := []client.Run{}
			for {
				p, err := c.ListRuns(ctx, client.ListOptions{Limit: limit, Cursor: cursor, Filters: filters})
				if err != nil {
					return fmt.Errorf("list runs: %w", err)
				}
				runs = append(runs, p.Items...)
				cursor = p.NextCursor
				if cursor == "" || !every {
					break
				}
			}
			if cursor != "" {
				fmt.Fprintf(a.stderr, "More runs follow: add --cursor %s (or --all)\n", cursor)
			}
			return printObjects(a.stdout, out, runs, func() *table { return runsTable(runs) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&job, "job", "", "only the runs of this job (GROUP/NAME or id)")
	f.StringVar(&group, "group", "", "only the runs of this group (app name or id)")
	f.StringVar(&state, "state", "", "only runs in these states (comma-separated), one of "+kindJoin(kind.RunStates))
	f.StringVar(&trigger, "trigger", "", "only runs fired this way, one of "+kindJoin(kind.Triggers))
	f.IntVar(&limit, "limit", 50, fmt.Sprintf("at most this many runs (a page; 1 to %d)", servicekit.MaxPageLimit))
	f.StringVar(&cursor, "cursor", "", "the page after this cursor (printed by the previous page)")
	f.BoolVar(&every, "all", false, "every run that matches, page after page")
	_ = cmd.RegisterFlagCompletionFunc("job", a.completeJobs)
	_ = cmd.RegisterFlagCompletionFunc("group", a.completeGroups)
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(kindNames(kind.RunStates), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("trigger", cobra.FixedCompletions(kindNames(kind.Triggers), cobra.ShellCompDirectiveNoFileComp))
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) withRun(f func(ctx context.Context, c *client.Client, id int64) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		id, err := parseRunID(args[0])
		if err != nil {
			return err
		}
		c, err := a.apiClient(cmd)
		if err != nil {
			return err
		}
		return f(cmd.Context(), c, id)
	}
}

func (a *app) newRunsGetCommand() *cobra.Command {
	var out outputFormat
	cmd := &cobra.Command{
		Use:   "get RUN_ID",
		Short: "Show a run",
		Args:  exactArgs(1, "one run id"),
		RunE: a.withRun(func(ctx context.Context, c *client.Client, id int64) error {
			r, err := c.GetRun(ctx, id)
			if err != nil {
				return fmt.Errorf("run %d: %w", id, err)
			}
			return printObjects(a.stdout, out, r, func() *table { return runsTable([]client.Run{r}) })
		}),
	}
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newRunsLogsCommand() *cobra.Command {
	var follow bool
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "logs RUN_ID [--follow]",
		Short: "Print a run's log",
		Long: `Print a run's log. With --follow, keep printing it as it is written until
the run ends, then exit with its outcome (0 succeeded, 1 otherwise). When the
run failed and the scheduler retries it, --follow says so on standard error
(the attempt, the retry's run id and when it is due) and follows the retry,
until the last attempt ends.`,
		Args: exactArgs(1, "one run id"),
		RunE: a.withRun(func(ctx context.Context, c *client.Client, id int64) error {
			if !follow {
				ch, err := c.RunLog(ctx, id, 1)
				if err != nil {
					return fmt.Errorf("log of run %d: %w", id, err)
				}
				a.writeLog(ch.Content)
				return nil
			}
			r, err := a.followAttempts(ctx, c, id, poll, true)
			if err != nil {
				return err
			}
			return runOutcome(r)
		}),
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing until the run ends, following its retries")
	cmd.Flags().DurationVar(&poll, "poll", 500*time.Millisecond, "how often to ask the server for more")
	return cmd
}

func (a *app) writeLog(s string) {
	if s == "" {
		return
	}
	fmt.Fprint(a.stdout, s)
	if !strings.HasSuffix(s, "\n") {
		fmt.Fprintln(a.stdout)
	}
}

// followLog prints a run's log as it grows until the server says it has
// ended (the run is final and every line was read).
func (a *app) followLog(ctx context.Context, c *client.Client, id int64, poll time.Duration) error {
	from := 1
	for {
		ch, err := c.RunLog(ctx, id, from)
		if err != nil {
			return fmt.Errorf("log of run %d: %w", id, err)
		}
		a.writeLog(ch.Content)
		if ch.Content != "" && ch.ToLine >= from {
			from = ch.ToLine + 1
		}
		if ch.IsEnd {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// followAttempts waits for run id to end (printing its log as it is
// written when withLog) and, while the scheduler retries it, for each retry
// in turn; it answers the last attempt. A failure is final only once the
// server has decided what follows it (the run's retry), so a run that
// failed with retries left is never taken for the fire's outcome.
func (a *app) followAttempts(ctx context.Context, c *client.Client, id int64, poll time.Duration, withLog bool) (client.Run, error) {
	for {
		if withLog {
			if err := a.followLog(ctx, c, id, poll); err != nil {
				return client.Run{}, err
			}
		}
		r, err := c.WaitRun(ctx, id, poll)
		for err == nil && r.Retry == string(kind.RetryPending) {
			select {
			case <-ctx.Done():
				return r, ctx.Err()
			case <-time.After(poll):
			}
			r, err = c.GetRun(ctx, id)
		}
		if err != nil {
			return r, fmt.Errorf("wait for run %d: %w", id, err)
		}
		if r.Retry != string(kind.RetryScheduled) || r.RetryRunID == 0 {
			return r, nil
		}
		next, err := c.GetRun(ctx, r.RetryRunID)
		if err != nil {
			return r, fmt.Errorf("run %d failed and is retried by run %d, which cannot be read: %w; follow it with: ringjob runs logs --follow %d",
				r.ID, r.RetryRunID, err, r.RetryRunID)
		}
		due := "now"
		if next.ScheduledAt != nil {
			due = "at " + *next.ScheduledAt
		}
		fmt.Fprintf(a.stderr, "Run %d %s (attempt %d); the scheduler retries it: attempt %d is run %d, due %s. Following it.\n",
			r.ID, strings.ReplaceAll(r.State, "_", " "), r.Attempt+1, next.Attempt+1, next.ID, due)
		id = next.ID
	}
}

func (a *app) newRunsKillCommand() *cobra.Command {
	var out outputFormat
	var yes bool
	cmd := &cobra.Command{
		Use:   "kill RUN_ID [--yes]",
		Short: "Ask a run's target to kill it, after showing what the kill stops",
		Long: `Ask a run's target to kill it.

First shows what the kill will stop and asks for confirmation: on a target
that kills by job (XXL-JOB executors) a kill also stops the job's other runs
running or queued on that executor. --yes kills without asking; without a
terminal to ask on, --yes is required.`,
		Args: exactArgs(1, "one run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseRunID(args[0])
			if err != nil {
				return err
			}
			if !yes && !isTerminal(a.stdin) {
				return usageErrorf("not killing run %d without confirmation: standard input is not a terminal to ask on; pass --yes to kill it without asking", id)
			}
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if !yes {
				ok, err := a.confirmKill(ctx, c, id)
				if err != nil || !ok {
					return err
				}
			}
			r, err := c.KillRun(ctx, id)
			if err != nil {
				return fmt.Errorf("kill run %d: %w", id, err)
			}
			return printObjects(a.stdout, out, r, func() *table { return runsTable([]client.Run{r}) })
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "kill without showing what the kill stops and asking first")
	addOutputFlag(cmd, &out)
	return cmd
}

// confirmKill shows on stderr what a kill of run id stops and asks on the
// terminal; false (with an exitCode) when the user did not say yes or there
// is nothing to kill.
func (a *app) confirmKill(ctx context.Context, c *client.Client, id int64) (bool, error) {
	scope, err := c.RunKillScope(ctx, id)
	if err != nil {
		return false, fmt.Errorf("ask what a kill of run %d stops: %w", id, err)
	}
	if !scope.Killable {
		return false, exitCode{code: exitFailure, msg: scope.Summary}
	}
	fmt.Fprintln(a.stderr, scope.Summary)
	t := &table{header: []string{"RUN", "JOB", "SHARD", "STATE", "TARGET"}}
	for _, r := range scope.Stops {
		shard := "-"
		if r.ShardTotal > 1 {
			shard = fmt.Sprintf("%d of %d", r.ShardIndex+1, r.ShardTotal)
		}
		t.add(r.ID, runJobName(r), shard, r.State, r.Target)
	}
	if err := t.write(a.stderr); err != nil {
		return false, err
	}
	fmt.Fprintf(a.stderr, "Kill %s? Only 'yes' kills: ", runsNoun(len(scope.Stops)))
	answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
	if strings.TrimSpace(answer) != "yes" {
		return false, exitCode{code: exitFailure, msg: "Not killed."}
	}
	return true, nil
}

func runsNoun(n int) string {
	if n == 1 {
		return "this run"
	}
	return fmt.Sprintf("these %d runs", n)
}

// isTerminal tells whether r is a terminal a question can be asked on.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

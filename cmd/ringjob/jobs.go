package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/internal/kind"
	schedulepkg "github.com/ringjob/ringjob/schedule"
	"github.com/ringjob/ringjob/service"
)

func (a *app) newJobsCommand() *cobra.Command {
	jobs := groupCommand("jobs", "List, show, create, edit, delete, start, stop and trigger jobs")
	jobs.Aliases = []string{"job"}
	addClientFlags(jobs)
	jobs.AddCommand(a.newJobsListCommand(), a.newJobsGetCommand(), a.newJobsCreateCommand(), a.newJobsEditCommand(),
		a.newJobsDeleteCommand(), a.newJobsStartStopCommand("start"), a.newJobsStartStopCommand("stop"), a.newJobsTriggerCommand())
	return jobs
}

func jobsTable(jobs []client.Job, groups map[int64]string) *table {
	t := &table{header: []string{"ID", "JOB", "SCHEDULE", "TZ", "HANDLER", "ENABLED", "NEXT FIRE", "LAST RUN"}}
	for _, j := range jobs {
		t.add(j.ID, groups[j.GroupID]+"/"+j.Name, schedule(j), j.TimeZone, j.Handler, j.Enabled, j.NextFireAt, lastRun(j))
	}
	return t
}

// lastRun is a job's last finished run: its outcome and id for `runs get`,
// or that retention has deleted it (the outcome is still the job's).
func lastRun(j client.Job) string {
	switch {
	case j.LastOutcome == "":
		return "-"
	case j.LastRunPurged:
		return fmt.Sprintf("%s (run %d purged by retention)", j.LastOutcome, j.LastRunID)
	default:
		return fmt.Sprintf("%s (run %d)", j.LastOutcome, j.LastRunID)
	}
}

func (a *app) newJobsListCommand() *cobra.Command {
	var out outputFormat
	var group, name, scheduleType, lastOutcome string
	var enabled bool
	cmd := &cobra.Command{
		Use:   "list [--group APP_NAME] [--name S] [--enabled] [--schedule-type T] [--last-outcome O]",
		Short: "List jobs",
		Long: `List jobs, with the console's filters: a group, a part of the name, started
or stopped, the schedule type, and the outcome of each job's newest finished
run (never: jobs that have not finished a run).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			filters := map[string]string{}
			if group != "" {
				g, err := resolveGroup(ctx, c, group)
				if err != nil {
					return err
				}
				filters["group_id"] = strconv.FormatInt(g.ID, 10)
			}
			if name != "" {
				filters["name"] = name
			}
			if cmd.Flags().Changed("enabled") {
				filters["enabled"] = strconv.FormatBool(enabled)
			}
			filters["schedule_type"], filters["last_outcome"] = scheduleType, lastOutcome
			jobs, err := c.AllJobs(ctx, filters)
			if err != nil {
				return fmt.Errorf("list jobs: %w", err)
			}
			if jobs == nil {
				jobs = []client.Job{}
			}
			names, err := groupNames(ctx, c)
			if err != nil {
				return err
			}
			return printObjects(a.stdout, out, jobs, func() *table { return jobsTable(jobs, names) })
		},
	}
	cmd.Flags().StringVar(&group, "group", "", "only the jobs of this group (app name or id)")
	cmd.Flags().StringVar(&name, "name", "", "only jobs whose name contains this")
	cmd.Flags().BoolVar(&enabled, "enabled", false, "only started (--enabled) or stopped (--enabled=false) jobs")
	cmd.Flags().StringVar(&scheduleType, "schedule-type", "", "only jobs scheduled this way, one of "+kindJoin(schedulepkg.Kinds))
	outcomes := append(kindNames(kind.FinalRunStates), service.LastOutcomeNever)
	cmd.Flags().StringVar(&lastOutcome, "last-outcome", "", "only jobs whose newest finished run ended so, one of "+strings.Join(outcomes, ", "))
	_ = cmd.RegisterFlagCompletionFunc("group", a.completeGroups)
	_ = cmd.RegisterFlagCompletionFunc("schedule-type", cobra.FixedCompletions(kindNames(schedulepkg.Kinds), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("last-outcome", cobra.FixedCompletions(outcomes, cobra.ShellCompDirectiveNoFileComp))
	addOutputFlag(cmd, &out)
	return cmd
}

// withJob is the RunE of commands on one job named by their argument.
func (a *app) withJob(f func(ctx context.Context, c *client.Client, j client.Job, ref client.JobRef) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := a.apiClient(cmd)
		if err != nil {
			return err
		}
		j, ref, err := resolveJob(cmd.Context(), c, args[0])
		if err != nil {
			return err
		}
		return f(cmd.Context(), c, j, ref)
	}
}

func (a *app) printJob(ctx context.Context, c *client.Client, out outputFormat, j client.Job, ref client.JobRef) error {
	if err := printObjects(a.stdout, out, j, func() *table {
		return jobsTable([]client.Job{j}, map[int64]string{j.GroupID: ref.AppName})
	}); err != nil {
		return err
	}
	if out == "table" && len(j.ChildJobs) > 0 {
		fmt.Fprintf(a.stdout, "Child jobs (run after a success): %s\n", strings.Join(j.ChildJobs, ", "))
	}
	return nil
}

func (a *app) newJobsGetCommand() *cobra.Command {
	var out outputFormat
	cmd := &cobra.Command{
		Use:               "get GROUP/NAME|ID",
		Short:             "Show a job",
		Args:              exactArgs(1, "one job, GROUP/NAME or id"),
		ValidArgsFunction: a.completeJobs,
		RunE: a.withJob(func(ctx context.Context, c *client.Client, j client.Job, ref client.JobRef) error {
			return a.printJob(ctx, c, out, j, ref)
		}),
	}
	addOutputFlag(cmd, &out)
	return cmd
}

// jobFieldFlag is a flag that sets a job's field, named by its JSON name.
type jobFieldFlag struct{ flag, field, usage string }

// jobFieldFlags are the flags of jobs create and jobs edit.
func jobFieldFlags() []jobFieldFlag {
	return []jobFieldFlag{
		{"description", "description", "what the job is for"},
		{"schedule-type", "schedule_type", "how the job is scheduled, one of " + kindJoin(schedulepkg.Kinds)},
		{"schedule", "schedule_conf", "the schedule: a cron expression (with seconds), seconds between fires, or a time"},
		{"tz", "time_zone", "the time zone of a cron schedule (e.g. Europe/Paris)"},
		{"misfire", "misfire_policy", "what to do with a missed fire, one of " + kindJoin(kind.Misfires)},
		{"handler", "handler", "what runs: the executor handler name, a Lambda ARN or a local command name"},
		{"params", "params", "the parameters given to every run"},
		{"route", "route_strategy", "which target of the group runs it, one of " + kindJoin(kind.Routes())},
		{"block", "block_strategy", "what a run does while the last one still runs on its target, one of " + kindJoin(kind.Blocks)},
		{"timeout", "timeout_sec", "seconds a run may take (0: no limit)"},
		{"retries", "retry_count", "retries of a failed run"},
		{"retry-backoff", "retry_backoff", "how the wait between retries grows, one of " + kindJoin(kind.Backoffs)},
		{"retry-delay", "retry_delay_sec", "seconds before the first retry"},
		{"retry-max-delay", "retry_max_delay_sec", "longest wait between retries, in seconds"},
		{"shards", "shard_count", "runs per fire for sharding broadcast"},
		{"max-in-flight", "max_in_flight", "runs of this job at once (0: no limit)"},
		{"pinned-target", "pinned_targets", "run only on these targets (repeatable)"},
		{"child", "child_jobs", "a job to trigger after a success, GROUP/NAME or id (repeatable; --child= alone clears them)"},
		{"alarm-channel", "alarm_channels", "alarm channels to notify (repeatable)"},
		{"active-from", "active_from", "no fire before this time (RFC 3339, e.g. 2027-01-01T00:00:00Z; empty: open)"},
		{"active-until", "active_until", "no fire after this time (RFC 3339; empty: open)"},
		{"flexible-window", "flexible_window_min", "minutes (1-1440) within which each fire may move after its schedule time (0: off)"},
		{"max-event-age", "max_event_age_sec", "seconds (60-86400) after which a fire is neither retried nor caught up (0: no limit)"},
		{"after-completion", "after_completion", "none or delete: delete the job once its schedule has no fire left"},
		{"failure-destination", "failure_destination", "where failed runs are reported: an SQS, SNS or EventBridge bus ARN, or a webhook URL"},
		{"enabled", "enabled", "whether the schedule fires (a new job starts stopped unless --enabled)"},
	}
}

func addJobFieldFlags(fs *pflag.FlagSet) {
	for _, f := range jobFieldFlags() {
		switch f.field {
		case "timeout_sec", "retry_count", "retry_delay_sec", "retry_max_delay_sec", "shard_count", "max_in_flight", "flexible_window_min", "max_event_age_sec":
			fs.Int(f.flag, 0, f.usage)
		case "pinned_targets", "alarm_channels", "child_jobs":
			fs.StringArray(f.flag, nil, f.usage)
		case "enabled":
			fs.Bool(f.flag, false, f.usage)
		default:
			fs.String(f.flag, "", f.usage)
		}
	}
}

// jobFieldPatch is a JSON merge patch of the fields whose flags were given.
func jobFieldPatch(fs *pflag.FlagSet) map[string]any {
	patch := map[string]any{}
	for _, f := range jobFieldFlags() {
		if !fs.Changed(f.flag) {
			continue
		}
		switch f.field {
		case "timeout_sec", "retry_count", "retry_delay_sec", "retry_max_delay_sec", "shard_count", "max_in_flight", "flexible_window_min", "max_event_age_sec":
			patch[f.field], _ = fs.GetInt(f.flag)
		case "pinned_targets", "alarm_channels", "child_jobs":
			patch[f.field], _ = fs.GetStringArray(f.flag)
		case "enabled":
			patch[f.field], _ = fs.GetBool(f.flag)
		default:
			patch[f.field], _ = fs.GetString(f.flag)
		}
	}
	return patch
}

// namedChildren turns the child jobs named in a job document or patch
// (child_jobs: GROUP/NAME or id each, from --child, a file or the editor)
// into the child_job_ids the API sets them with. A document that also
// changes child_job_ids to other jobs is refused: which one was meant
// cannot be told.
func namedChildren(ctx context.Context, c *client.Client, doc map[string]any) error {
	raw, ok := doc["child_jobs"]
	if !ok {
		return nil
	}
	delete(doc, "child_jobs")
	var refs []string
	switch v := raw.(type) {
	case nil:
	case []string:
		refs = v
	case []any:
		for _, x := range v {
			refs = append(refs, fmt.Sprint(x))
		}
	default:
		return usageErrorf("child_jobs: want a list of jobs (GROUP/NAME or id), got %v", raw)
	}
	ids := []int64{}
	for _, r := range refs {
		if r = strings.TrimSpace(r); r == "" {
			continue // --child= clears the children
		}
		j, _, err := resolveJob(ctx, c, r)
		if err != nil {
			return fmt.Errorf("child_jobs: %s: %w", r, err)
		}
		ids = append(ids, j.ID)
	}
	if prev, ok := doc["child_job_ids"]; ok && fmt.Sprint(toIDs(prev)) != fmt.Sprint(ids) {
		return usageErrorf("child_jobs and child_job_ids name different jobs; give the children one way (child_jobs by name, or child_job_ids)")
	}
	doc["child_job_ids"] = ids
	return nil
}

// toIDs reads a list of ids decoded from JSON or YAML (numbers).
func toIDs(v any) []int64 {
	out := []int64{}
	if xs, ok := v.([]any); ok {
		for _, x := range xs {
			if f, ok := x.(float64); ok {
				out = append(out, int64(f))
			}
		}
	}
	return out
}

// readDocument reads -f PATH ("-" is stdin).
func (a *app) readDocument(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(a.stdin)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

func (a *app) newJobsCreateCommand() *cobra.Command {
	var out outputFormat
	var file string
	cmd := &cobra.Command{
		Use:   "create GROUP/NAME [field flags] | create -f FILE",
		Short: "Create a job from flags or a YAML/JSON file",
		Long: `Create a job. Either name it GROUP/NAME and give its fields as flags, or
give a YAML or JSON document with -f (the fields of GET /api/v1/jobs/{id};
"-" reads standard input); flags then override the file's fields.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 || (len(args) == 0 && file == "") {
				return usageErrorf("give the job as GROUP/NAME, or a file with -f")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			doc := map[string]any{}
			if file != "" {
				b, err := a.readDocument(file)
				if err != nil {
					return err
				}
				// A file may name the children (child_jobs) as jobs as
				// code and job views do.
				var in struct {
					client.JobInput
					ChildJobs []string `json:"child_jobs"`
				}
				if err := fromYAMLOrJSON(b, &in); err != nil {
					return fmt.Errorf("%s: %w", file, err)
				}
				doc = toMap(in.JobInput)
				if in.ChildJobs != nil {
					doc["child_jobs"] = in.ChildJobs
				}
			}
			for k, v := range jobFieldPatch(cmd.Flags()) {
				if k == "child_jobs" {
					delete(doc, "child_job_ids") // --child overrides the file's children
				}
				doc[k] = v
			}
			if err := namedChildren(ctx, c, doc); err != nil {
				return err
			}
			var ref client.JobRef
			if len(args) == 1 {
				if ref, err = parseJobArg(args[0]); err != nil {
					return err
				}
				g, err := resolveGroup(ctx, c, ref.AppName)
				if err != nil {
					return err
				}
				doc["group_id"], doc["name"] = g.ID, ref.Name
			} else {
				gid, _ := doc["group_id"].(float64)
				g, err := c.GetGroup(ctx, int64(gid))
				if err != nil {
					return fmt.Errorf("group_id %v: %w", doc["group_id"], err)
				}
				ref = client.JobRef{AppName: g.AppName, Name: fmt.Sprint(doc["name"])}
			}
			var in client.JobInput
			b, _ := json.Marshal(doc)
			if err := json.Unmarshal(b, &in); err != nil {
				return err
			}
			j, err := c.CreateJob(ctx, in)
			if err != nil {
				return fmt.Errorf("create job %s: %w", ref, err)
			}
			return a.printJob(ctx, c, out, j, ref)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "YAML or JSON document of the job (- for stdin)")
	addJobFieldFlags(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("child", a.completeJobFlag)
	addOutputFlag(cmd, &out)
	return cmd
}

func toMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	m := map[string]any{}
	_ = json.Unmarshal(b, &m)
	return m
}

func (a *app) newJobsEditCommand() *cobra.Command {
	var out outputFormat
	cmd := &cobra.Command{
		Use:   "edit GROUP/NAME|ID [field flags]",
		Short: "Edit a job in $EDITOR, or change the fields given as flags",
		Long: `Edit a job. With field flags, only those fields change. Without, the job
opens as YAML in $VISUAL or $EDITOR (default vi); what you save is sent,
and that needs a terminal (a script gives field flags, or uses
'ringjob apply'). Either way the change is refused if someone else changed
the job since it was read (If-Match). When the change is refused, or what
you saved does not parse, your edit stays in the file the error names.`,
		Args:              exactArgs(1, "one job, GROUP/NAME or id"),
		ValidArgsFunction: a.completeJobs,
		RunE: func(cmd *cobra.Command, args []string) error {
			patch := jobFieldPatch(cmd.Flags())
			if len(patch) == 0 && !a.stdinIsTerminal() {
				return usageErrorf("without field flags, jobs edit opens an editor, and standard input is not a terminal; give the fields to change as flags (e.g. --retries 3), or use ringjob apply -f FILE")
			}
			return a.withJob(func(ctx context.Context, c *client.Client, j client.Job, ref client.JobRef) error {
				kept := ""
				if len(patch) == 0 {
					var err error
					patch, kept, err = a.editInEditor(ctx, j, "job-"+strings.ReplaceAll(ref.String(), "/", "-"))
					if err != nil || patch == nil {
						return err
					}
				}
				if err := namedChildren(ctx, c, patch); err != nil {
					if kept != "" {
						return editKept(fmt.Errorf("edit job %s: %w", ref, err), kept, "ringjob jobs edit "+ref.String())
					}
					return err
				}
				nj, err := c.PatchJob(ctx, ref, patch, j.ETag)
				if err != nil {
					err = fmt.Errorf("edit job %s: %w", ref, err)
					if kept != "" {
						return editKept(err, kept, "ringjob jobs edit "+ref.String())
					}
					return err
				}
				if kept != "" {
					_ = os.Remove(kept)
				}
				return a.printJob(ctx, c, out, nj, ref)
			})(cmd, args)
		},
	}
	addJobFieldFlags(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("child", a.completeJobFlag)
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newJobsDeleteCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "delete GROUP/NAME|ID",
		Short:             "Delete a job and its runs",
		Args:              exactArgs(1, "one job, GROUP/NAME or id"),
		ValidArgsFunction: a.completeJobs,
		RunE: a.withJob(func(ctx context.Context, c *client.Client, j client.Job, ref client.JobRef) error {
			if err := c.DeleteJob(ctx, ref, j.ETag); err != nil {
				return fmt.Errorf("delete job %s: %w", ref, err)
			}
			fmt.Fprintf(a.stdout, "deleted job %s (id %d)\n", ref, j.ID)
			return nil
		}),
	}
	return cmd
}

func (a *app) newJobsStartStopCommand(verb string) *cobra.Command {
	var out outputFormat
	short := "Start a job's schedule"
	if verb == "stop" {
		short = "Stop a job's schedule (running runs go on)"
	}
	cmd := &cobra.Command{
		Use:               verb + " GROUP/NAME|ID",
		Short:             short,
		Args:              exactArgs(1, "one job, GROUP/NAME or id"),
		ValidArgsFunction: a.completeJobs,
		RunE: a.withJob(func(ctx context.Context, c *client.Client, _ client.Job, ref client.JobRef) error {
			op := c.StartJob
			if verb == "stop" {
				op = c.StopJob
			}
			j, err := op(ctx, ref)
			if err != nil {
				return fmt.Errorf("%s job %s: %w", verb, ref, err)
			}
			return a.printJob(ctx, c, out, j, ref)
		}),
	}
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newJobsTriggerCommand() *cobra.Command {
	var out outputFormat
	var params, key, target string
	var wait, follow bool
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "trigger GROUP/NAME|ID [--param P] [--wait] [--follow]",
		Short: "Run a job once now",
		Long: `Run a job once now. With --wait, wait for the run's outcome, print it and
exit with it (0 succeeded, 1 any other end); --follow also prints the run's
log as it is written.

When the run fails and the job has retries left, --wait and --follow say so
on standard error (the attempt, the retry's run id and when it is due) and
wait for the retry, until the last attempt ends: the outcome printed and the
exit code are those of the last attempt.`,
		Args:              exactArgs(1, "one job, GROUP/NAME or id"),
		ValidArgsFunction: a.completeJobs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			ref, err := a.jobRef(ctx, c, args[0])
			if err != nil {
				return err
			}
			in := client.TriggerInput{Target: target}
			if cmd.Flags().Changed("param") {
				in.Params = &params
			}
			r, err := c.TriggerJob(ctx, ref, in, key)
			if err != nil {
				return fmt.Errorf("trigger job %s: %w", ref, err)
			}
			if !wait && !follow {
				return printObjects(a.stdout, out, r, func() *table { return runsTable([]client.Run{r}) })
			}
			r, err = a.followAttempts(ctx, c, r.ID, poll, follow)
			if err != nil {
				return err
			}
			w := a.stdout
			if follow && out == "table" {
				w = a.stderr // stdout holds the log
			}
			if err := printObjects(w, out, r, func() *table { return runsTable([]client.Run{r}) }); err != nil {
				return err
			}
			return runOutcome(r)
		},
	}
	f := cmd.Flags()
	f.StringVar(&params, "param", "", "parameters of this run instead of the job's")
	f.StringVar(&target, "target", "", "run on this target of the group instead of routing")
	f.StringVar(&key, "idempotency-key", "", "a key that makes a retried trigger return the first run instead of a new one")
	f.BoolVar(&wait, "wait", false, "wait for the outcome, through the retries, and exit with it (0 succeeded, 1 otherwise)")
	f.BoolVar(&follow, "follow", false, "print the run's log as it is written, then its outcome (implies --wait)")
	f.DurationVar(&poll, "poll", 500*time.Millisecond, "how often to ask the server while waiting")
	addOutputFlag(cmd, &out)
	return cmd
}

// jobRef names the job without reading it when the argument is GROUP/NAME.
func (a *app) jobRef(ctx context.Context, c *client.Client, arg string) (client.JobRef, error) {
	if _, err := strconv.ParseInt(arg, 10, 64); err == nil {
		_, ref, err := resolveJob(ctx, c, arg)
		return ref, err
	}
	return parseJobArg(arg)
}

// runOutcome is the exit of a command that waited for a run: 0 when it
// succeeded, 1 for any other end.
func runOutcome(r client.Run) error {
	if r.State == "succeeded" {
		return nil
	}
	return exitCode{code: exitFailure, msg: fmt.Sprintf("run %d %s", r.ID, r.State)}
}

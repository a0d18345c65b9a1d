package importer

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/client/jobspec"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/schedule"
)

// XXLOptions say how an XXL-JOB admin database becomes jobs as code.
type XXLOptions struct {
	// TimeZone is the zone the XXL-JOB admin ran in (its JVM's default
	// zone, in which it read every cron expression); "" = UTC.
	TimeZone string
	// AlarmChannel is the Ringjob alarm channel a job with an alarm e-mail
	// gets; "" lists each alarm e-mail as not carried over.
	AlarmChannel string
	// KeepEnabled keeps the jobs that were running (trigger_status 1)
	// running; otherwise every job is imported stopped.
	KeepEnabled bool
}

// Limits of Ringjob's job fields that XXL-JOB's are wider than.
const (
	maxTimeoutSec = 86400
	maxRetryCount = 10
	maxShardCount = 1000
)

// xxlGroup is a row of xxl_job_group.
type xxlGroup struct {
	id                 int64
	appName, title     string
	addressType        int64
	addressList, token string
	hasToken           bool
}

// xxlJob is a row of xxl_job_info, whatever the schema's version.
type xxlJob struct {
	id, group                           int64
	desc, author, alarmEmail            string
	scheduleType, scheduleConf, misfire string
	route, handler, param, block        string
	timeout, retries                    int64
	glueType, glueSource, childIDs      string
	triggerStatus                       int64
}

// xxlColumns are the columns of XXL-JOB's two tables in the database.
type xxlColumns map[string]bool

func (c xxlColumns) has(table, col string) bool { return c[table+"."+col] }

// readColumns learns which schema the database has: 2.0-2.2 (job_cron),
// 2.3-3.4 (schedule_type, title, job_desc) or 3.5 (name, access_token).
func readColumns(ctx context.Context, db *sql.DB) (xxlColumns, error) {
	rows, err := db.QueryContext(ctx, `SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ('xxl_job_group', 'xxl_job_info')`)
	if err != nil {
		return nil, fmt.Errorf("read the columns of xxl_job_group and xxl_job_info: %w", err)
	}
	defer rows.Close()
	cols := xxlColumns{}
	for rows.Next() {
		var t, c string
		if err := rows.Scan(&t, &c); err != nil {
			return nil, fmt.Errorf("read the columns of xxl_job_group and xxl_job_info: %w", err)
		}
		cols[strings.ToLower(t)+"."+strings.ToLower(c)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the columns of xxl_job_group and xxl_job_info: %w", err)
	}
	for _, t := range []string{"xxl_job_group", "xxl_job_info"} {
		if !cols.has(t, "id") {
			return nil, fmt.Errorf("the database has no table %s: give the DSN of the XXL-JOB admin's database (the one its tables_xxl_job.sql created)", t)
		}
	}
	if !cols.has("xxl_job_info", "schedule_conf") && !cols.has("xxl_job_info", "job_cron") {
		return nil, fmt.Errorf("xxl_job_info has neither schedule_conf (XXL-JOB 2.3 and later) nor job_cron (2.0-2.2): not a schema this command knows")
	}
	return cols, nil
}

// col is the column when the table has it, else the literal.
func (c xxlColumns) col(table, name, literal string) string {
	if c.has(table, name) {
		return "`" + name + "`"
	}
	return literal
}

func (c xxlColumns) readGroups(ctx context.Context, db *sql.DB) ([]xxlGroup, error) {
	const t = "xxl_job_group"
	title := c.col(t, "title", c.col(t, "name", "''"))
	q := fmt.Sprintf("SELECT id, app_name, COALESCE(%s, ''), address_type, COALESCE(address_list, ''), COALESCE(%s, '') FROM xxl_job_group ORDER BY id",
		title, c.col(t, "access_token", "''"))
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read xxl_job_group: %w", err)
	}
	defer rows.Close()
	var out []xxlGroup
	for rows.Next() {
		g := xxlGroup{hasToken: c.has(t, "access_token")}
		if err := rows.Scan(&g.id, &g.appName, &g.title, &g.addressType, &g.addressList, &g.token); err != nil {
			return nil, fmt.Errorf("read xxl_job_group: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

func (c xxlColumns) readJobs(ctx context.Context, db *sql.DB) ([]xxlJob, error) {
	const t = "xxl_job_info"
	schedType, schedConf := c.col(t, "schedule_type", "'CRON'"), c.col(t, "schedule_conf", "`job_cron`")
	q := fmt.Sprintf(`SELECT id, job_group, COALESCE(%s, ''), COALESCE(author, ''), COALESCE(alarm_email, ''),
		COALESCE(%s, ''), COALESCE(%s, ''), COALESCE(%s, ''),
		COALESCE(executor_route_strategy, ''), COALESCE(executor_handler, ''), COALESCE(executor_param, ''), COALESCE(executor_block_strategy, ''),
		executor_timeout, executor_fail_retry_count,
		COALESCE(%s, ''), COALESCE(%s, ''), COALESCE(child_jobid, ''), trigger_status
		FROM xxl_job_info ORDER BY id`,
		c.col(t, "job_desc", c.col(t, "name", "''")), schedType, schedConf, c.col(t, "misfire_strategy", "''"),
		c.col(t, "glue_type", "'BEAN'"), c.col(t, "glue_source", "''"))
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read xxl_job_info: %w", err)
	}
	defer rows.Close()
	var out []xxlJob
	for rows.Next() {
		var j xxlJob
		if err := rows.Scan(&j.id, &j.group, &j.desc, &j.author, &j.alarmEmail, &j.scheduleType, &j.scheduleConf, &j.misfire,
			&j.route, &j.handler, &j.param, &j.block, &j.timeout, &j.retries, &j.glueType, &j.glueSource, &j.childIDs, &j.triggerStatus); err != nil {
			return nil, fmt.Errorf("read xxl_job_info: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// ReadXXL reads the executor groups and jobs of an XXL-JOB admin database
// (xxl_job_group, xxl_job_info; the schemas of 2.0 to 3.5) into a
// declaration. It only reads.
func ReadXXL(ctx context.Context, db *sql.DB, opts XXLOptions) (*Result, error) {
	if _, err := schedule.LoadZone(opts.TimeZone); err != nil {
		return nil, fmt.Errorf("--time-zone: %w", err)
	}
	cols, err := readColumns(ctx, db)
	if err != nil {
		return nil, err
	}
	groups, err := cols.readGroups(ctx, db)
	if err != nil {
		return nil, err
	}
	jobs, err := cols.readJobs(ctx, db)
	if err != nil {
		return nil, err
	}
	return convertXXL(groups, jobs, opts), nil
}

// xxlConverter holds what converting needs across rows.
type xxlConverter struct {
	opts   XXLOptions
	res    *Result
	apps   map[int64]string   // group id -> app name
	manual map[int64][]string // group id -> members of a manual group
	refs   map[int64]string   // job id -> app_name/name
}

func (x *xxlConverter) note(ref, source, field, value string, k NoteKind, why string, args ...any) {
	x.res.Notes = append(x.res.Notes, Note{Ref: ref, Source: source, Field: field, Value: value, Kind: k, Why: fmt.Sprintf(why, args...)})
}

func convertXXL(groups []xxlGroup, jobs []xxlJob, opts XXLOptions) *Result {
	x := &xxlConverter{opts: opts, res: &Result{Set: &jobspec.Set{}, From: "XXL-JOB", Origin: map[string]string{}},
		apps: map[int64]string{}, manual: map[int64][]string{}, refs: map[int64]string{}}
	taken := map[string]bool{}
	for _, g := range groups {
		x.group(g, taken)
	}
	// Names first, so children can name jobs of any group.
	names := map[string]map[string]bool{}
	for _, j := range jobs {
		app, ok := x.apps[j.group]
		if !ok {
			continue
		}
		if names[app] == nil {
			names[app] = map[string]bool{}
		}
		name := jobName(j.desc)
		if name == "" {
			name = fmt.Sprintf("job-%d", j.id)
		}
		if names[app][name] {
			name = cut(name, maxJobName-12) + fmt.Sprintf(" #%d", j.id)
		}
		names[app][name] = true
		x.refs[j.id] = app + "/" + name
	}
	for _, j := range jobs {
		x.job(j)
	}
	return x.res
}

func (x *xxlConverter) group(g xxlGroup, taken map[string]bool) {
	src := fmt.Sprintf("xxl_job_group %d", g.id)
	app := uniqueApp(appName(g.appName), taken)
	x.apps[g.id] = app
	x.res.Origin[app] = fmt.Sprintf("from %s (app_name %s)", src, g.appName)
	if app != g.appName {
		x.note(app, src, "app_name", g.appName, Changed, "Ringjob app names are lowercase letters, digits and '-' (4-64); executors register by app name, so set their xxl.job.executor.appname to %s", app)
	}
	ag := client.ApplyGroup{AppName: app, Title: cut(strings.TrimSpace(g.title), maxTitle)}
	if g.hasToken {
		ag.Protocol = "3.5" // XXL-JOB 3.5 executors send their app name and a group token
	}
	if g.token != "" {
		x.note(app, src, "access_token", "(set)", NotCarried, "a secret, never in the files: set it on the group with PUT /api/v1/groups/{id} (executor_token)")
	}
	accept := g.addressType == 0
	ag.AcceptRegistrations = &accept
	if g.addressType == 0 {
		if g.addressList != "" {
			x.res.Origin[app] += "; executors registered then: " + g.addressList
		}
	} else {
		for _, a := range strings.Split(g.addressList, ",") {
			a = strings.TrimSpace(a)
			if a == "" {
				continue
			}
			if !strings.Contains(a, "://") {
				x.note(app, src, "address_list", a, Changed, "an address without a scheme; written as http://%s", a)
				a = "http://" + a
			}
			ag.Members = append(ag.Members, a)
		}
		x.manual[g.id] = ag.Members
	}
	x.res.Set.Groups = append(x.res.Set.Groups, ag)
}

// xxlRoutes are XXL-JOB's routing strategies (ExecutorRouteStrategyEnum):
// each has a Ringjob route of the same meaning.
func xxlRoute(name string) (kind.Route, bool) {
	if strings.TrimSpace(name) == "" {
		return kind.RouteFirst, true
	}
	r, err := kind.ParseRoute(name)
	return r, err == nil
}

func (x *xxlConverter) job(j xxlJob) {
	src := fmt.Sprintf("xxl_job_info %d", j.id)
	ref, ok := x.refs[j.id]
	if !ok {
		x.note("", src+" "+j.desc, "job_group", strconv.FormatInt(j.group, 10), NotCarried, "the job's executor group does not exist in xxl_job_group; the job is not imported")
		return
	}
	app, name, _ := strings.Cut(ref, "/")
	note := func(field, value string, k NoteKind, why string, args ...any) {
		x.note(ref, src, field, value, k, why, args...)
	}
	origin := src
	if a := strings.TrimSpace(j.author); a != "" {
		origin += ", author " + a
	}
	if jobName(j.desc) != name {
		note("job_desc", j.desc, Changed, "the job's name is %q (job names are unique in a group, one line, without '/')", name)
	}
	aj := client.ApplyJob{Group: app, Name: name}
	aj.Description = strings.TrimSpace(j.desc)
	if aj.Description == name {
		aj.Description = ""
	}

	// Schedule.
	runnable := true
	conf := strings.TrimSpace(j.scheduleConf)
	switch typ := strings.ToUpper(strings.TrimSpace(j.scheduleType)); typ {
	case "CRON":
		aj.ScheduleType, aj.ScheduleConf = string(schedule.KindCron), conf
	case "FIX_RATE":
		aj.ScheduleType, aj.ScheduleConf = string(schedule.KindFixedRate), conf
	case "NONE", "":
	default:
		note("schedule_type", typ+" "+conf, NotCarried, "not a schedule type of XXL-JOB 2.3+ (CRON, FIX_RATE, NONE); the job is imported without a schedule")
	}
	if aj.ScheduleType != "" {
		if _, err := schedule.Parse(schedule.Kind(aj.ScheduleType), aj.ScheduleConf, x.opts.TimeZone); err != nil {
			note("schedule_conf", conf, NotCarried, "%v; the job is imported without a schedule", err)
			aj.ScheduleType, aj.ScheduleConf = "", ""
		}
	}

	// Cron is read on the admin's wall clock; a rate counts elapsed time.
	if tz := strings.TrimSpace(x.opts.TimeZone); aj.ScheduleType == string(schedule.KindCron) && tz != "UTC" {
		aj.TimeZone = tz
	}

	switch m := strings.ToUpper(strings.TrimSpace(j.misfire)); m {
	case "", "DO_NOTHING":
	case "FIRE_ONCE_NOW":
		aj.MisfirePolicy = string(kind.MisfireFireOnceNow)
	default:
		note("misfire_strategy", j.misfire, NotCarried, "unknown; XXL-JOB treats it as DO_NOTHING, and so does Ringjob (the default)")
	}

	// How it runs.
	aj.Handler = strings.TrimSpace(j.handler)
	if gt := strings.ToUpper(strings.TrimSpace(j.glueType)); gt != "" && gt != "BEAN" {
		lines := 0
		if j.glueSource != "" {
			lines = strings.Count(strings.TrimRight(j.glueSource, "\n"), "\n") + 1
		}
		note("glue_source", fmt.Sprintf("%s, %d line(s)", gt, lines), NotCarried,
			"Ringjob keeps no code: move the script into an executor as a BEAN handler (or a local command) and set handler; the job is imported stopped")
		runnable = false
	}
	aj.Params = j.param

	route, ok := xxlRoute(j.route)
	if !ok {
		note("executor_route_strategy", j.route, NotCarried, "unknown routing strategy; imported as first (%s)", kind.Join(kind.Routes()))
		route = kind.RouteFirst
	}
	if route != kind.RouteFirst {
		aj.RouteStrategy = string(route)
	}
	if route == kind.RouteSharding {
		// XXL-JOB fans a broadcast out to every address of the group.
		// Ringjob does the same for registered executors; static members
		// count through shard_count.
		if members := x.manual[j.group]; len(members) > 1 {
			aj.ShardCount = min(len(members), maxShardCount)
		}
	}
	if b, err := kind.ParseBlock(j.block); err != nil {
		note("executor_block_strategy", j.block, NotCarried, "unknown; imported as SERIAL_EXECUTION (the default)")
	} else if b != kind.BlockSerial {
		aj.BlockStrategy = string(b)
	}
	switch {
	case j.timeout > maxTimeoutSec:
		note("executor_timeout", strconv.FormatInt(j.timeout, 10), Changed, "more than Ringjob's %d s; imported as %d", maxTimeoutSec, maxTimeoutSec)
		aj.TimeoutSec = maxTimeoutSec
	case j.timeout > 0:
		aj.TimeoutSec = int(j.timeout)
	}
	switch {
	case j.retries > maxRetryCount:
		note("executor_fail_retry_count", strconv.FormatInt(j.retries, 10), Changed, "more than Ringjob's %d retries; imported as %d", maxRetryCount, maxRetryCount)
		aj.RetryCount = maxRetryCount
	case j.retries > 0:
		aj.RetryCount = int(j.retries)
	}

	// Children by name.
	for _, c := range strings.Split(j.childIDs, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		id, err := strconv.ParseInt(c, 10, 64)
		kid, ok := x.refs[id]
		switch {
		case err != nil || !ok:
			note("child_jobid", c, NotCarried, "no job with that id (XXL-JOB skips it too)")
		case id == j.id:
			note("child_jobid", c, NotCarried, "the job itself (XXL-JOB skips it too)")
		default:
			aj.Children = append(aj.Children, kid)
		}
	}

	if mail := strings.TrimSpace(j.alarmEmail); mail != "" {
		if x.opts.AlarmChannel != "" {
			aj.AlarmChannels = []string{x.opts.AlarmChannel}
			origin += "; alarm e-mail " + mail + " -> channel " + x.opts.AlarmChannel
		} else {
			note("alarm_email", mail, NotCarried, "Ringjob alarms go to channels of the server's config: pass --alarm-channel NAME to give these jobs one")
		}
	}

	running := j.triggerStatus == 1
	if running {
		origin += "; running in XXL-JOB"
	}
	switch {
	case running && !x.opts.KeepEnabled:
		x.res.Running++
	case running && aj.ScheduleType == "":
		note("trigger_status", "1", Changed, "a job without a schedule cannot be started; imported stopped")
	case running && !runnable:
	case running:
		aj.Enabled = true
	}
	x.res.Origin[ref] = "from " + origin
	x.res.Set.Jobs = append(x.res.Set.Jobs, aj)
}

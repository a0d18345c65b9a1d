package service

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// RunListParams filter and page a run listing, newest first.
type RunListParams struct {
	JobID   int64
	GroupID int64
	// OnlyGroups, when not nil, lists only runs of these groups (what the caller may see).
	OnlyGroups  []int64
	States      []kind.RunState // any of kind.RunStates; empty = all
	TriggerType kind.Trigger    // one of kind.Triggers; "" = all
	From        time.Time       // scheduled at or after; zero = no bound
	To          time.Time       // scheduled before; zero = no bound
	// Target keeps runs sent to this target URI (an executor address, a
	// function, a local command); "" = all. A trailing "/" does not
	// matter. No index serves it: a page looks at no more than
	// Options.RunScanWindow runs.
	Target string
	Cursor string
	Limit  int // 0 = DefaultPageLimit; at most MaxPageLimit
}

// defaultRunScanWindow is how many runs one page of a run list filtered by
// target looks at: a primary-key range, tens of milliseconds on MariaDB.
const defaultRunScanWindow = 100_000

// maxTargetChars is the width of runs.target.
const maxTargetChars = 512

// ListRuns lists runs, newest first. With a target filter a page looks at
// no more than Options.RunScanWindow runs by id, so it may hold fewer items
// than the limit, even none, and still have a next cursor.
func (s *Service) ListRuns(ctx context.Context, p RunListParams) (Page[store.Run], error) {
	limit, err := pageLimit(p.Limit)
	if err != nil {
		return Page[store.Run]{}, err
	}
	before, err := decodeCursor("r", p.Cursor)
	if err != nil {
		return Page[store.Run]{}, err
	}
	if p.JobID < 0 {
		return Page[store.Run]{}, invalid("job_id", "must be a positive id, got %d", p.JobID)
	}
	if p.GroupID < 0 {
		return Page[store.Run]{}, invalid("group_id", "must be a positive id, got %d", p.GroupID)
	}
	for _, st := range p.States {
		if !st.Valid() {
			return Page[store.Run]{}, invalid("state", "%q is not a run state; use one or more of %s", st, kind.Join(kind.RunStates))
		}
	}
	if p.TriggerType != "" && !p.TriggerType.Valid() {
		return Page[store.Run]{}, invalid("trigger_type", "%q is not a trigger type; use one of %s", p.TriggerType, kind.Join(kind.Triggers))
	}
	if !p.From.IsZero() && !p.To.IsZero() && !p.To.After(p.From) {
		return Page[store.Run]{}, invalid("to", "must be after from (%s), got %s", p.From.UTC().Format(time.RFC3339), p.To.UTC().Format(time.RFC3339))
	}
	if err := checkText("target", p.Target, 0, maxTargetChars, false); err != nil {
		return Page[store.Run]{}, err
	}
	q := store.RunListParams{JobID: p.JobID, GroupID: p.GroupID, OnlyGroups: p.OnlyGroups, States: p.States, TriggerType: p.TriggerType, BeforeID: before, Limit: limit + 1}
	if t := strings.TrimSuffix(p.Target, "/"); t != "" {
		q.Targets = []string{t, t + "/"}
		// A window of ids below the cursor: the scan is bounded, however
		// rare the target.
		if before == 0 {
			top, err := s.st.RunMaxID(ctx)
			if err != nil {
				return Page[store.Run]{}, err
			}
			if top == 0 {
				return Page[store.Run]{Items: []store.Run{}}, nil
			}
			before = top + 1
			q.BeforeID = before
		}
		q.FromID = max(1, before-int64(s.runScan))
	}
	if !p.From.IsZero() {
		q.FromMs = p.From.UnixMilli()
	}
	if !p.To.IsZero() {
		q.ToMs = p.To.UnixMilli()
	}
	rs, err := s.st.RunList(ctx, q)
	if err != nil {
		return Page[store.Run]{}, fmt.Errorf("list runs: %w", err)
	}
	page := paginate(rs, limit, "r", func(r store.Run) int64 { return r.ID })
	if page.NextCursor == "" && q.FromID > 1 {
		page.NextCursor = encodeCursor("r", q.FromID) // the next window
	}
	return page, nil
}

// GetRun reads a run.
func (s *Service) GetRun(ctx context.Context, id int64) (store.Run, error) {
	r, err := s.st.RunGet(ctx, id)
	if err != nil {
		err = notFoundOr(err, "run", id, fmt.Sprintf("read run %d", id))
		var nf *NotFoundError
		if errors.As(err, &nf) {
			nf.Hint = RunGoneHint
		}
		return store.Run{}, err
	}
	return r, nil
}

// RunGoneHint follows "run N does not exist": finished runs do not stay
// forever (links to old runs, such as a job's last run, outlive them).
const RunGoneHint = "finished runs are deleted once older than the retention (retention.runs, 30 days by default), and with their job"

// RunLog reads a run's log from a 1-based line through the driver of the
// run's target. A run without a target yet (not dispatched), or whose
// target's scheme has no driver on this server any more, reads the central
// log in the store.
func (s *Service) RunLog(ctx context.Context, id int64, fromLine int) (targets.LogChunk, error) {
	if fromLine < 1 {
		return targets.LogChunk{}, invalid("from_line", "must be 1 or more (lines are numbered from 1), got %d", fromLine)
	}
	r, err := s.GetRun(ctx, id)
	if err != nil {
		return targets.LogChunk{}, err
	}
	if r.Target != "" {
		if drv, derr := s.drivers.For(r.Target); derr == nil {
			c, err := drv.Log(targets.WithGroup(ctx, r.GroupID), r.Target, r.ID, fromLine)
			if err != nil {
				return targets.LogChunk{}, &TargetError{Target: r.Target, Op: fmt.Sprintf("read log of run %d", r.ID), Err: err}
			}
			c.End = logEnd(r.State, fromLine, c)
			// What the server wrote on the run (a later outcome it ignored,
			// an alarm's result) is not in the target's log: it goes with a
			// finished run's first page and the page that ends the log.
			if r.State.Final() && (fromLine == 1 || c.End) {
				sc, err := s.st.RunLogRead(ctx, r.ID, 1)
				if err != nil {
					return targets.LogChunk{}, notFoundOr(err, "run", id, fmt.Sprintf("read the server's log of run %d", id))
				}
				c.ServerLog = sc.Content
			}
			return c, nil
		}
	}
	c, err := s.st.RunLogRead(ctx, r.ID, fromLine)
	if err != nil {
		return targets.LogChunk{}, notFoundOr(err, "run", id, fmt.Sprintf("read log of run %d", id))
	}
	out := targets.LogChunk{FromLine: c.FromLine, ToLine: c.ToLine, Content: c.Content, End: c.Finished}
	out.End = logEnd(r.State, fromLine, out)
	return out, nil
}

// logEnd is the server's answer to "is this the end of the log": the run
// has its final outcome (read before the log, so a run that ends meanwhile
// is seen at the next read) and the caller has the last line, because the
// target says so or because a read from fromLine brought nothing new. What
// a target says alone is not enough: XXL-JOB's Java executors always say
// isEnd=false, and a target cannot know the run's outcome was recorded.
// This is XXL-JOB's admin rule too.
func logEnd(state kind.RunState, fromLine int, c targets.LogChunk) bool {
	if !state.Final() {
		return false
	}
	return c.End || c.Content == "" || c.ToLine < fromLine
}

// KillScope lists the other runs a kill of run id stops with it: on a
// target that kills by job, every other run of its job going on there
// (running, or queued behind it). Empty for targets that kill one run.
func (s *Service) KillScope(ctx context.Context, id int64) ([]store.Run, error) {
	r, err := s.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.State != kind.RunDispatching && r.State != kind.RunRunning || r.Target == "" {
		return nil, nil
	}
	if _, err := s.drivers.For(r.Target); err != nil {
		return nil, &TargetError{Target: r.Target, Op: fmt.Sprintf("kill run %d", id), Err: err}
	}
	return s.killsAlso(ctx, r)
}

// killsAlso is KillScope for a run going on at its target: on a target
// that kills by job (XXL-JOB's /kill takes a job id), every other run of
// the job going on there.
func (s *Service) killsAlso(ctx context.Context, r store.Run) ([]store.Run, error) {
	if !s.drivers.Capabilities(r.Target).KillsWholeJob {
		return nil, nil
	}
	rs, err := s.st.RunList(ctx, store.RunListParams{JobID: r.JobID, States: []kind.RunState{kind.RunDispatching, kind.RunRunning},
		Targets: []string{r.Target}, Limit: 1000})
	if err != nil {
		return nil, fmt.Errorf("list the runs of job %d on %s: %w", r.JobID, r.Target, err)
	}
	var out []store.Run
	for _, o := range rs {
		if o.ID != r.ID {
			out = append(out, o)
		}
	}
	return out, nil
}

func runIDs(rs []store.Run) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// KillRun stops a run. A run still scheduled becomes killed at once and is
// never dispatched. For a dispatching or running run the target's driver is
// asked to kill it; once the target accepts, the run is killed (a local
// process is reported killed by its replica when it has ended, so the
// returned run may still be running); a driver that cannot is a
// *TargetError. A run that has ended is a *ConflictError, and so is one
// whose kill is in flight already (a kill is sent once); one whose own
// outcome was recorded before its kill took effect is returned as it ended:
// the kill was a no-op. KillPreview says beforehand what a kill stops.
func (s *Service) KillRun(ctx context.Context, id int64) (store.Run, error) {
	for attempt := 0; ; attempt++ {
		r, err := s.GetRun(ctx, id)
		if err != nil {
			return store.Run{}, err
		}
		switch r.State {
		case kind.RunScheduled:
			var ok bool
			err := s.st.Tx(ctx, func(tx *store.Store) error {
				var err error
				ok, err = tx.RunSetState(ctx, id, kind.RunScheduled, kind.RunKilled, "killed by request before it was dispatched", s.nowMs())
				if err != nil || !ok {
					return err
				}
				return s.audit(ctx, tx, auditEntry{Action: ActRunKill, ObjectType: "run", ObjectID: id, GroupID: r.GroupID,
					Changes: map[string]any{"state": map[string]any{"before": r.State, "after": kind.RunKilled}}})
			})
			if err != nil {
				return store.Run{}, fmt.Errorf("kill run %d: %w", id, err)
			}
			if ok || attempt >= 3 {
				return s.GetRun(ctx, id)
			}
			// It moved on meanwhile (claimed for dispatch): look again.
		case kind.RunDispatching, kind.RunRunning:
			if r.Target == "" {
				return store.Run{}, &ConflictError{Message: fmt.Sprintf(
					"run %d is being dispatched and its target is not recorded yet; try again in a moment", id)}
			}
			// The replica that owns the run carries the request out too:
			// a local process runs on one replica only. For a local run the
			// recorded request is the change (it stands until the process
			// ends), so it is audited with it; for any other target the
			// kill is audited when the target has accepted it, with the
			// run's killed outcome.
			onNode := s.drivers.Capabilities(r.Target).OnDispatchingNode
			audit := auditEntry{Action: ActRunKill, ObjectType: "run", ObjectID: id, GroupID: r.GroupID,
				Changes: map[string]any{"state": map[string]any{"before": r.State, "after": kind.RunKilled}, "target": r.Target}}
			drv, err := s.drivers.For(r.Target)
			if err != nil {
				return store.Run{}, &TargetError{Target: r.Target, Op: fmt.Sprintf("kill run %d", id), Err: err}
			}
			others, err := s.killsAlso(ctx, r)
			if err != nil {
				return store.Run{}, fmt.Errorf("kill run %d: %w", id, err)
			}
			if len(others) > 0 {
				audit.Changes["also_killed"] = runIDs(others)
			}
			if !onNode {
				k, ended, err := s.killRemote(ctx, r, drv, others, audit)
				if ended && attempt < 3 {
					continue // it ended before the claim: say how
				}
				if ended {
					return s.GetRun(ctx, id)
				}
				return k, err
			}
			if err := s.st.Tx(ctx, func(tx *store.Store) error {
				if _, err := tx.RunRequestKill(ctx, id); err != nil {
					return err
				}
				return s.audit(ctx, tx, auditEntry{Action: ActRunKill, ObjectType: "run", ObjectID: id, GroupID: r.GroupID,
					Changes: map[string]any{"kill_requested": true, "state": r.State, "target": r.Target}})
			}); err != nil {
				return store.Run{}, fmt.Errorf("kill run %d: %w", id, err)
			}
			if err := drv.Kill(targets.WithGroup(ctx, r.GroupID), r.Target, r.ID, r.JobID); err != nil {
				return store.Run{}, &TargetError{Target: r.Target, Op: fmt.Sprintf("kill run %d", id), Err: err}
			}
			return s.GetRun(ctx, id)
		default:
			return store.Run{}, &ConflictError{Message: fmt.Sprintf("run %d has already ended (state %s); there is nothing to kill", id, r.State)}
		}
	}
}

// killAnswerWait bounds how long a kill's sender waits for the target's
// answer; no answer by then is a kill not accepted. killClaimLife is how
// long a kill's claim holds: past it, any replica settles the kill as not
// accepted (its sender died before the answer; a live sender has decided
// by then).
const (
	killAnswerWait = 5 * time.Second
	killClaimLife  = 2 * killAnswerWait
)

// killRemote carries out the kill of r on a target other than a local
// process, which stops others with it. The kill is claimed in the database
// first (once: a kill of any of these runs in flight is a *ConflictError),
// then sent once, and its answer recorded with what the target reported
// meanwhile (store.RunKillSettle): accepted, the runs are killed and their
// reports only logged; refused, or no answer within killAnswerWait, the
// runs go on and a result reported meanwhile is recorded as it came.
// ended: r ended before the claim, nothing was sent.
func (s *Service) killRemote(ctx context.Context, r store.Run, drv targets.Driver, others []store.Run, audit auditEntry) (_ store.Run, ended bool, _ error) {
	// The answer is awaited and recorded whatever becomes of the request
	// that asked for the kill: a caller that hangs up must not leave a
	// sent kill undecided until its claim expires.
	ctx = context.WithoutCancel(ctx)
	claimed, err := s.st.RunKillClaim(ctx, append([]int64{r.ID}, runIDs(others)...), s.nowMs()+killClaimLife.Milliseconds())
	if errors.Is(err, store.ErrKillInFlight) {
		return store.Run{}, false, &ConflictError{Message: fmt.Sprintf(
			"a kill that stops run %d is already in flight; a kill is sent once, and its answer decides the run's outcome", r.ID)}
	}
	if err != nil {
		return store.Run{}, false, fmt.Errorf("kill run %d: %w", r.ID, err)
	}
	if len(claimed) == 0 {
		return store.Run{}, true, nil
	}
	kctx, cancel := context.WithTimeout(ctx, killAnswerWait)
	kerr := drv.Kill(targets.WithGroup(kctx, r.GroupID), r.Target, r.ID, r.JobID)
	cancel()
	if kerr != nil {
		// The run goes on (or has ended): its own result counts.
		settled, err := s.st.RunKillSettle(ctx, claimed, nil)
		if err != nil {
			return store.Run{}, false, errors.Join(&TargetError{Target: r.Target, Op: fmt.Sprintf("kill run %d", r.ID), Err: kerr}, err)
		}
		if h := settled[0].Held; h == nil || settled[0].State != h.State {
			return store.Run{}, false, &TargetError{Target: r.Target, Op: fmt.Sprintf("kill run %d", r.ID), Err: kerr}
		}
		// The run ended with the result its executor reported while the
		// kill was in flight, and the kill was not accepted: that result
		// stands and the kill was a no-op.
		audit.Changes["state"] = map[string]any{"before": r.State, "after": settled[0].State}
		audit.Changes["no_op"] = "the target refused the kill (" + kerr.Error() + "); the run's own outcome, reported meanwhile, stands"
		if err := s.st.TxRetry(ctx, func(tx *store.Store) error { return s.audit(ctx, tx, audit) }); err != nil {
			return store.Run{}, false, fmt.Errorf("kill run %d: audit it: %w", r.ID, err)
		}
		k, err := s.GetRun(ctx, r.ID)
		return k, false, err
	}
	// An executor that accepted the kill has stopped the run: it is killed,
	// and what it reported meanwhile or reports afterwards (the Go client
	// reports 200) is logged on the run, not applied. An executor that
	// kills by job has stopped the job's other runs there too (running or
	// queued): killed, not failed.
	now := s.nowMs()
	outs := make([]store.RunResult, len(claimed))
	for i, id := range claimed {
		outs[i] = store.KilledResult(id, now)
		if id != r.ID {
			outs[i].Message = fmt.Sprintf("killed with run %d: the executor kills every run of the job it holds (XXL-JOB /kill is per job)", r.ID)
		}
	}
	// Again after a lock conflict: the kill was accepted, and a claim left
	// behind would settle it as refused.
	if err := s.st.TxRetry(ctx, func(tx *store.Store) error {
		settled, err := tx.RunKillSettle(ctx, claimed, outs)
		if err != nil {
			return err
		}
		a := audit
		a.Changes = maps.Clone(audit.Changes)
		if st := settled[0].State; st != kind.RunKilled {
			// Another outcome came first (a success the executor reported
			// before the kill was claimed): it stands, the kill was a no-op.
			a.Changes["state"] = map[string]any{"before": r.State, "after": st}
			a.Changes["no_op"] = "the run had ended before the kill took effect; its own outcome stands"
		}
		return s.audit(ctx, tx, a)
	}); err != nil {
		return store.Run{}, false, fmt.Errorf("kill run %d: record it killed: %w", r.ID, err)
	}
	k, err := s.GetRun(ctx, r.ID)
	return k, false, err
}

// RunJobNames names the jobs of runs (group app name and job name) in one
// read, for views that show "app/job" rather than a job id.
func (s *Service) RunJobNames(ctx context.Context, runs ...store.Run) (map[int64]store.JobName, error) {
	seen := make(map[int64]bool, len(runs))
	ids := make([]int64, 0, len(runs))
	for _, r := range runs {
		if r.JobID > 0 && !seen[r.JobID] {
			seen[r.JobID] = true
			ids = append(ids, r.JobID)
		}
	}
	if len(ids) == 0 {
		return map[int64]store.JobName{}, nil
	}
	names, err := s.st.JobNamesGet(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("name the jobs of %d runs: %w", len(runs), err)
	}
	return names, nil
}

package service

import (
	"context"
	"fmt"
	"strings"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
)

// KillPlan is what a kill of a run would stop, said before it is sent so
// that a user confirms knowing it: the console and the CLI show it.
type KillPlan struct {
	Run store.Run
	// Killable: a kill would be carried out now (the run has not ended, and
	// if it is being dispatched its target is known).
	Killable bool
	// KillsWholeJob: the run's target stops every run of the job it holds,
	// as its driver declares (XXL-JOB's /kill is by job id).
	KillsWholeJob bool
	// Stops is every run the kill stops, the run itself first; empty when
	// the run is not killable.
	Stops []store.Run
	// Summary says all of it in one or two sentences.
	Summary string
}

// KillPreview says what a kill of run id would stop. It changes nothing.
func (s *Service) KillPreview(ctx context.Context, id int64) (KillPlan, error) {
	r, err := s.GetRun(ctx, id)
	if err != nil {
		return KillPlan{}, err
	}
	p := KillPlan{Run: r}
	switch {
	case r.State.Final():
		p.Summary = fmt.Sprintf("Run %d has already ended (%s): there is nothing to kill.", id, r.State)
		return p, nil
	case r.State == kind.RunScheduled:
		p.Killable, p.Stops = true, []store.Run{r}
		p.Summary = fmt.Sprintf("Run %d%s has not been sent to a target yet: the kill stops it before it starts, and nothing else.", id, shardOf(r))
		return p, nil
	case r.Target == "":
		p.Summary = fmt.Sprintf("Run %d is being dispatched and its target is not recorded yet; try again in a moment.", id)
		return p, nil
	}
	others, err := s.KillScope(ctx, id)
	if err != nil {
		return KillPlan{}, err
	}
	p.Killable = true
	p.KillsWholeJob = s.drivers.Capabilities(r.Target).KillsWholeJob
	p.Stops = append([]store.Run{r}, others...)
	switch {
	case !p.KillsWholeJob:
		p.Summary = fmt.Sprintf("The kill stops run %d%s on %s, and nothing else.", id, shardOf(r), r.Target)
	case len(others) == 0:
		p.Summary = fmt.Sprintf("The kill stops run %d%s on %s. This target stops every run of job %d it holds (XXL-JOB's /kill is per job); it holds no other run of that job now.",
			id, shardOf(r), r.Target, r.JobID)
	default:
		names := make([]string, len(others))
		for i, o := range others {
			names[i] = fmt.Sprintf("%d%s", o.ID, shardOf(o))
		}
		p.Summary = fmt.Sprintf("The kill stops %d runs on %s: run %d%s and, because this target stops every run of job %d it holds (XXL-JOB's /kill is per job), also run%s %s (running or queued behind it there). All of them end killed.",
			len(p.Stops), r.Target, id, shardOf(r), r.JobID, plural(len(others)), strings.Join(names, ", "))
	}
	return p, nil
}

// shardOf names a run's shard, " (shard 2 of 3)", or "" for a run that is
// not sharded.
func shardOf(r store.Run) string {
	if r.ShardTotal <= 1 {
		return ""
	}
	return fmt.Sprintf(" (shard %d of %d)", r.ShardIndex+1, r.ShardTotal)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

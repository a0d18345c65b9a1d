package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
)

// RunRelations are the runs a run is linked to, found exactly through the
// idempotency keys the follow-up services create them with
// (store.RetryRunKey, store.ParentRunKey).
type RunRelations struct {
	// RetryChain is every attempt of the run's fire, first to last, the run
	// itself included (one run when it was never retried). A run removed
	// by retention ends the chain on its side.
	RetryChain []store.Run
	// Children are the runs this run's success triggered, one per child
	// job of the run's job (as the job lists them now), oldest first.
	Children []store.Run
	// ChildrenHidden counts children in groups the caller may not read.
	ChildrenHidden int
	// Parent is the run whose success triggered this one (nil when the
	// run was not triggered by a parent, or the caller may not read it).
	Parent *store.Run
}

// maxRetryChain bounds the walk along a retry chain (retry_count is far
// lower): a corrupt link cannot make it loop.
const maxRetryChain = 1000

// RunRelations finds a run's retry chain, its child runs and its parent
// run. onlyGroups, when not nil, are the groups whose runs the caller may
// read (the run itself is checked by the caller).
func (s *Service) RunRelations(ctx context.Context, id int64, onlyGroups []int64) (RunRelations, error) {
	r, err := s.GetRun(ctx, id)
	if err != nil {
		return RunRelations{}, err
	}
	var out RunRelations
	visible := func(g int64) bool { return onlyGroups == nil || slices.Contains(onlyGroups, g) }

	// Back along retry_of, then forward through the retry keys.
	chain := []store.Run{r}
	for cur := r; cur.RetryOf != 0 && len(chain) < maxRetryChain; {
		prev, err := s.st.RunGet(ctx, cur.RetryOf)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return RunRelations{}, fmt.Errorf("read the retry chain of run %d: %w", id, err)
		}
		chain = append([]store.Run{prev}, chain...)
		cur = prev
	}
	for cur := r; len(chain) < maxRetryChain; {
		next, ok, err := s.runByKey(ctx, store.RunKey{JobID: cur.JobID, Key: store.RetryRunKey(cur.ID)})
		if err != nil {
			return RunRelations{}, fmt.Errorf("read the retry chain of run %d: %w", id, err)
		}
		if !ok {
			break
		}
		chain = append(chain, next)
		cur = next
	}
	out.RetryChain = chain

	// Children: the key of this run in each child job of its job.
	job, err := s.st.JobGet(ctx, r.JobID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return RunRelations{}, fmt.Errorf("read the job of run %d: %w", id, err)
	}
	keys := make([]store.RunKey, len(job.ChildJobIDs))
	for i, c := range job.ChildJobIDs {
		keys[i] = store.RunKey{JobID: c, Key: store.ParentRunKey(r.ID)}
	}
	found, err := s.st.RunIDsByKeys(ctx, keys)
	if err != nil {
		return RunRelations{}, fmt.Errorf("find the child runs of run %d: %w", id, err)
	}
	ids := make([]int64, 0, len(found))
	for _, cid := range found {
		ids = append(ids, cid)
	}
	children, err := s.st.RunGetMany(ctx, ids)
	if err != nil {
		return RunRelations{}, fmt.Errorf("read the child runs of run %d: %w", id, err)
	}
	slices.SortFunc(children, func(a, b store.Run) int { return cmp.Compare(a.ID, b.ID) })
	out.Children = []store.Run{}
	for _, c := range children {
		if visible(c.GroupID) {
			out.Children = append(out.Children, c)
		} else {
			out.ChildrenHidden++
		}
	}

	if r.TriggerType == kind.TriggerParent {
		if pid := store.ParentRunOfKey(r.IdempotencyKey); pid > 0 {
			p, err := s.st.RunGet(ctx, pid)
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				return RunRelations{}, fmt.Errorf("read the parent run of run %d: %w", id, err)
			case visible(p.GroupID):
				out.Parent = &p
			}
		}
	}
	return out, nil
}

// runByKey reads the run created with an idempotency key.
func (s *Service) runByKey(ctx context.Context, k store.RunKey) (store.Run, bool, error) {
	found, err := s.st.RunIDsByKeys(ctx, []store.RunKey{k})
	if err != nil || found[k] == 0 {
		return store.Run{}, false, err
	}
	r, err := s.st.RunGet(ctx, found[k])
	if errors.Is(err, store.ErrNotFound) {
		return store.Run{}, false, nil
	}
	return r, err == nil, err
}

// RunRetry is what follows a failed run: its retry, or why there is none yet.
type RunRetry struct {
	Status kind.Retry
	RunID  int64 // the retry run when Status is scheduled
}

// RunRetries says, for each run that failed, timed out or was lost, what
// follows it, in one read of the retry keys: a client that waits for a
// fire's final outcome follows the retry instead of ending at a failure
// the scheduler will try again. Other runs are not in the map.
func (s *Service) RunRetries(ctx context.Context, runs ...store.Run) (map[int64]RunRetry, error) {
	keys := make([]store.RunKey, 0, len(runs))
	for _, r := range runs {
		if slices.Contains(store.FailedStates, r.State) {
			keys = append(keys, store.RunKey{JobID: r.JobID, Key: store.RetryRunKey(r.ID)})
		}
	}
	out := make(map[int64]RunRetry, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	found, err := s.st.RunIDsByKeys(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("find the retries of %d runs: %w", len(keys), err)
	}
	for _, r := range runs {
		if !slices.Contains(store.FailedStates, r.State) {
			continue
		}
		// The retry is created before the failure's follow-up is marked
		// done, so a retry found is scheduled even while still pending.
		switch id := found[store.RunKey{JobID: r.JobID, Key: store.RetryRunKey(r.ID)}]; {
		case id > 0:
			out[r.ID] = RunRetry{Status: kind.RetryScheduled, RunID: id}
		case r.FollowupPending:
			out[r.ID] = RunRetry{Status: kind.RetryPending}
		default:
			out[r.ID] = RunRetry{Status: kind.RetryNone}
		}
	}
	return out, nil
}

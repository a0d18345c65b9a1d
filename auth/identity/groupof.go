package identity

import (
	"context"
)

// maxGroupOf bounds the cache of object groups; a full cache starts afresh.
const maxGroupOf = 200000

// GroupOfJob returns the group a job belongs to, for permission checks: from
// the replica's cache when the auth watcher runs (a job that moves to
// another group moves the auth version on, so every replica forgets), else
// from the database. A missing job is a *NotFoundError.
func (s *Service) GroupOfJob(ctx context.Context, id int64) (int64, error) {
	return s.groupOf(ctx, "j", id, "job", s.st.GroupOfJob)
}

// GroupOfRun returns the group a run belongs to (a run never changes group).
func (s *Service) GroupOfRun(ctx context.Context, id int64) (int64, error) {
	return s.groupOf(ctx, "r", id, "run", s.st.GroupOfRun)
}

type objKey struct {
	kind string
	id   int64
}

func (s *Service) groupOf(ctx context.Context, kind string, id int64, resource string, read func(context.Context, int64) (int64, error)) (int64, error) {
	usable := s.cacheUsable()
	var gen uint64
	if usable {
		s.creds.mu.Lock()
		g, ok := s.creds.groupOf[objKey{kind, id}]
		gen = s.creds.gen
		s.creds.mu.Unlock()
		if ok {
			return g, nil
		}
	}
	g, err := read(ctx, id)
	if err != nil {
		return 0, notFoundOr(err, resource, id, "read the group of "+resource)
	}
	if usable {
		s.creds.mu.Lock()
		if s.creds.gen == gen {
			if len(s.creds.groupOf) >= maxGroupOf {
				s.creds.groupOf = map[objKey]int64{}
			}
			s.creds.groupOf[objKey{kind, id}] = g
		}
		s.creds.mu.Unlock()
	}
	return g, nil
}

package scheduler

import (
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
)

// warnEvery logs a kind of recurring failure at warn level at most once per
// interval: the first occurrence at once, then one line per interval with
// the count since the last line and the latest example. A storm of failed
// dispatches (an executor down) shows in the log without flooding it.
type warnEvery struct {
	log   *logrus.Entry
	clock clockwork.Clock
	every time.Duration

	mu    sync.Mutex
	kinds map[string]*warnKind
}

type warnKind struct {
	last    time.Time
	pending int // occurrences since the last line
}

func newWarnEvery(log *logrus.Entry, clock clockwork.Clock, every time.Duration) *warnEvery {
	return &warnEvery{log: log, clock: clock, every: every, kinds: map[string]*warnKind{}}
}

// note records one occurrence of kind, a warning; msg and fields describe it.
func (w *warnEvery) note(kind string, fields logrus.Fields, msg string) {
	w.noteAt(logrus.WarnLevel, kind, fields, msg)
}

// noteAt is note at another level (a per-run info or error line).
func (w *warnEvery) noteAt(level logrus.Level, kind string, fields logrus.Fields, msg string) {
	now := w.clock.Now()
	w.mu.Lock()
	k := w.kinds[kind]
	if k == nil {
		k = &warnKind{}
		w.kinds[kind] = k
	}
	k.pending++
	if !k.last.IsZero() && now.Sub(k.last) < w.every {
		w.mu.Unlock()
		return
	}
	n := k.pending
	k.pending, k.last = 0, now
	w.mu.Unlock()
	e := w.log.WithFields(fields)
	if n > 1 {
		e = e.WithField("count", n)
		msg = fmt.Sprintf("%s (%d in the last %s)", msg, n, w.every)
	}
	e.Log(level, msg)
}

//go:build unix

package localexec

import (
	"fmt"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
)

// killer ends one process group: SIGTERM first, SIGKILL once KillGrace has
// passed. Only the run's supervisor uses it, and only while the group may
// still exist, so a process group id is never signalled after it was seen gone.
type killer struct {
	pgid  int
	grace time.Duration
	log   *logrus.Entry

	termAt time.Time   // when SIGTERM was sent; zero before
	timer  *time.Timer // fires when the grace is over
	killed bool        // SIGKILL sent
}

// terminate sends SIGTERM to the group and starts the grace period, once.
func (k *killer) terminate() {
	if !k.termAt.IsZero() {
		return
	}
	k.termAt = time.Now()
	k.timer = time.NewTimer(k.grace)
	if err := signalGroup(k.pgid, syscall.SIGTERM); err != nil {
		k.log.WithError(err).Warn("terminate process group")
	}
}

// graceC fires when the grace period is over and SIGKILL is due; nil before
// SIGTERM and after SIGKILL.
func (k *killer) graceC() <-chan time.Time {
	if k.timer == nil || k.killed {
		return nil
	}
	return k.timer.C
}

// forceKill sends SIGKILL to the group, once.
func (k *killer) forceKill() {
	if k.killed {
		return
	}
	k.killed = true
	if err := signalGroup(k.pgid, syscall.SIGKILL); err != nil {
		k.log.WithError(err).Warn("kill process group")
	}
}

// signalled reports whether the group was sent SIGTERM.
func (k *killer) signalled() bool { return !k.termAt.IsZero() }

func (k *killer) stopGraceTimer() {
	if k.timer != nil {
		k.timer.Stop()
	}
}

// waitGroupGone ends what is left of the group after its leader has exited and
// waits until no process of it runs. There is no event for the end of
// processes that are not our children, so it polls, backing off to 100ms.
func (k *killer) waitGroupGone() {
	k.terminate()
	poll := 5 * time.Millisecond
	var giveUp time.Time
	for groupAlive(k.pgid) {
		now := time.Now()
		if !k.killed && now.Sub(k.termAt) >= k.grace {
			k.forceKill()
		}
		if k.killed {
			if giveUp.IsZero() {
				giveUp = now.Add(groupGoneTimeout)
			} else if now.After(giveUp) {
				k.log.Errorf("process group %d still has running processes %s after SIGKILL; reporting the run anyway", k.pgid, groupGoneTimeout)
				return
			}
		}
		time.Sleep(poll)
		poll = min(2*poll, 100*time.Millisecond)
	}
}

// how says how the group was ended, for the outcome message; "" when the
// driver did not signal it.
func (k *killer) how() string {
	switch {
	case k.killed:
		return fmt.Sprintf("SIGKILL after %s grace", k.grace)
	case !k.termAt.IsZero():
		return "SIGTERM"
	}
	return ""
}

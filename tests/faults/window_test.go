package faults_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFaultsKillInDispatchWindow (`make test-faults`): a replica SIGKILLed
// at +0, +3, +5, +10, +20 and +40 ms after a fire second, twice each: the
// moments it has handed that second's fires to the executor and is sending
// them. The survivors ask the executor (its own /idleBeat and /log) about
// every run the dead replica handed and never heard back about: runs it
// never received are sent again, runs it holds report as usual. Counted at
// the executor: 0 missing, 0 duplicates, 0 lost, every run final. Against
// the Java-style test executor (which runs a log id sent twice twice) and
// an executor built with our SDK.
func TestFaultsKillInDispatchWindow(t *testing.T) {
	if os.Getenv("RINGJOB_FAULTS") != "long" {
		t.Skip("set RINGJOB_FAULTS=long (make test-faults)")
	}
	for _, sdk := range []bool{false, true} {
		name := "java-style"
		if sdk {
			name = "sdk"
		}
		t.Run(name, func(t *testing.T) { killInDispatchWindow(t, sdk) })
	}
}

func killInDispatchWindow(t *testing.T, sdk bool) {
	c := newClusterWith(t, 3, 100, clusterOptions{RunDelay: 20 * time.Millisecond, SDK: sdk})
	s := &scenario{c: c}
	s.warmUp(3 * time.Second)
	for _, off := range []time.Duration{0, 3, 5, 10, 20, 40} {
		for i := 0; i < 2; i++ {
			off := off * time.Millisecond
			s.run(fmt.Sprintf("replica SIGKILL at +%s #%d, restarted after 2 s", off, i+1), 5*time.Second, func() {
				r := s.pick()
				nextSecond(off)
				s.c.signal(r, syscall.SIGKILL)
				time.Sleep(2 * time.Second)
				s.c.start(r)
			})
		}
	}
	s.settle(90 * time.Second)
	rs := s.analyse()
	for _, r := range c.replicas {
		t.Log(warningSummary(r))
	}
	check(t, rs)
	// What the survivors found when they asked (their log lines' fields).
	var again, held, lost int
	for _, r := range c.replicas {
		for _, line := range strings.Split(r.logs(), "\n") {
			var e struct {
				Msg       string `json:"msg"`
				SentAgain int    `json:"sent_again"`
				Held      int    `json:"held"`
				Lost      int    `json:"lost"`
			}
			if json.Unmarshal([]byte(line), &e) == nil && e.Msg == "asked the targets about the runs a dead sender had handed them" {
				again, held, lost = again+e.SentAgain, held+e.Held, lost+e.Lost
			}
		}
	}
	t.Logf("runs the killed replicas had handed and never heard back about: %d never received (sent again), %d held (left to report), %d lost", again, held, lost)
	for _, r := range rs {
		require.Zero(t, r.lost, "%s: runs lost to an HTTP executor that can be asked", r.phase.name)
		require.Zero(t, r.misfired, "%s: runs misfired (a re-send should go out within the misfire threshold)", r.phase.name)
	}
}

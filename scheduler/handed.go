package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// A run its sender handed to its target (the hand-off is recorded right
// before the send) and never heard back about may or may not have arrived.
// Once the sender is dead, with its connections gone so the send can no
// longer arrive, the target is asked (targets.ReceiptAsker): a run it never
// received is taken back and sent again, same run, same id; one it holds
// is recorded running and reports as usual; a target that cannot tell yet
// (busy with the job: the run may wait in its queue) is asked again at the
// next scan. Only a target that cannot be asked (a driver without
// ReceiptAsker: Lambda, a local process of the dead node) leaves the run
// lost, its reason naming what is unknown; and so does a target that has
// not answered for handedHung.

// receiptTimeout bounds one question to a target. The questions are asked
// by the takeover scan, and a target that does not answer in time is not
// asked again in that scan, so an executor that is down delays the scan
// (and with it the takeover of other dead nodes) by at most this much.
const receiptTimeout = time.Second

// handedHung is how long a handed run may stay unresolved (its target
// silent or busy) before it is recorded lost.
func (t *takeover) handedHung() time.Duration { return max(2*time.Minute, 10*t.cfg.DispatchTimeout) }

// resolveHanded settles the runs owner handed before handedBeforeMs (0: any
// time) and never heard back about; who names the dead sender for the
// runs' messages. It returns how many are still unresolved (ask again).
func (t *takeover) resolveHanded(ctx context.Context, owner string, handedBeforeMs int64, who string) (pending int, err error) {
	runs, err := t.st.RunListHanded(ctx, owner, handedBeforeMs, 5000)
	if err != nil || len(runs) == 0 {
		return 0, err
	}
	now := t.clock.Now()
	nowMs := now.UnixMilli()
	hung := t.handedHung()
	silent := map[string]string{} // targets that did not answer this scan, with the error
	var held []store.RunAccept
	var lost []store.RunResult
	var resend []store.Run
	for _, r := range runs {
		receipt, unknown := t.askReceipt(ctx, r, silent)
		switch receipt {
		case targets.ReceiptHeld:
			held = append(held, store.RunAccept{ID: r.ID, Target: r.Target,
				Message: fmt.Sprintf("received by %s (asked after %s died)", r.Target, who)})
			continue
		case targets.ReceiptNotHeld:
			took, err := t.st.RunHandBack(ctx, store.RunHandBackParams{ID: r.ID, From: owner, To: t.node, HandedBeforeMs: handedBeforeMs,
				Message: fmt.Sprintf("%s died after handing this run to %s, which says it never received it: sent again", who, r.Target)})
			if err != nil {
				return pending + 1, err
			}
			if took {
				r.Owner = t.node
				resend = append(resend, r)
			}
			continue
		}
		if unknown == "" {
			unknown = fmt.Sprintf("%s died after handing this run to %s; that target cannot be asked whether it received the run, so whether it ran is unknown", who, r.Target)
		} else if now.Sub(time.UnixMilli(r.HandedMs)) > hung {
			unknown = fmt.Sprintf("%s died after handing this run to %s, which did not say whether it received the run within %s (%s); whether it ran is unknown", who, r.Target, hung, unknown)
		} else {
			pending++
			continue
		}
		lost = append(lost, store.RunResult{ID: r.ID, State: kind.RunLost, Code: 500, Message: unknown, FinishedMs: nowMs, Source: store.SourceLost, OnlyDispatching: true})
	}
	if len(held) > 0 {
		if err := t.st.RunAcceptBatch(ctx, held); err != nil {
			return pending + len(held), fmt.Errorf("record runs their targets hold: %w", err)
		}
	}
	if len(lost) > 0 {
		applied, err := t.record(ctx, lost)
		if err != nil {
			return pending + len(lost), fmt.Errorf("record %d runs lost: %w", len(lost), err)
		}
		for _, ok := range applied {
			if ok {
				t.metrics.Lost.Inc()
			}
		}
	}
	if len(resend) > 0 {
		if err := t.fireAdopted(ctx, resend, true, who+" died before its send arrived"); err != nil {
			return pending, err
		}
	}
	if len(held)+len(lost)+len(resend) > 0 {
		t.log.WithFields(logrus.Fields{"sender": who, "held": len(held), "sent_again": len(resend), "lost": len(lost), "pending": pending}).
			Warn("asked the targets about the runs a dead sender had handed them")
	}
	return pending, nil
}

// askReceipt asks r's target whether it received r. unknown is empty when
// the target cannot be asked at all, else why there is no answer yet.
// Targets that failed to answer once this scan are not asked again in it.
func (t *takeover) askReceipt(ctx context.Context, r store.Run, silent map[string]string) (receipt targets.Receipt, unknown string) {
	if r.Target == "" {
		// Handed to record a failure found before any send: nothing went out.
		return targets.ReceiptNotHeld, ""
	}
	if why, ok := silent[r.Target]; ok {
		return targets.ReceiptUnknown, why
	}
	drv, err := t.disp.drivers.For(r.Target)
	if err != nil {
		return targets.ReceiptUnknown, ""
	}
	asker, ok := drv.(targets.ReceiptAsker)
	if !ok {
		return targets.ReceiptUnknown, ""
	}
	actx, cancel := context.WithTimeout(ctx, receiptTimeout)
	defer cancel()
	receipt, err = asker.Received(targets.WithGroup(actx, r.GroupID), targets.ReceiptQuery{Target: r.Target, RunID: r.ID, JobID: r.JobID, ScheduledAt: time.UnixMilli(r.ScheduledMs)})
	if err != nil {
		silent[r.Target] = err.Error()
		return targets.ReceiptUnknown, err.Error()
	}
	if receipt == targets.ReceiptUnknown {
		return receipt, "busy with the job, the run may wait in its queue"
	}
	return receipt, ""
}

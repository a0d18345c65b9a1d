package targets

import (
	"context"
	"time"
)

// Receipt is a target's answer to "did you receive this run?", asked once
// the replica that handed the run to it is dead (its connections are gone,
// so the send can no longer arrive).
type Receipt int

// Receipts.
const (
	// ReceiptUnknown: the target cannot tell yet (it is busy with the job,
	// and the run may be waiting in its queue); ask again later.
	ReceiptUnknown Receipt = iota
	// ReceiptHeld: the target received the run (it ran, runs or waits); its
	// result comes as usual.
	ReceiptHeld
	// ReceiptNotHeld: the target never received the run; sending it again
	// (same run, same id) runs it once.
	ReceiptNotHeld
)

func (r Receipt) String() string {
	switch r {
	case ReceiptHeld:
		return "held"
	case ReceiptNotHeld:
		return "not held"
	default:
		return "unknown"
	}
}

// ReceiptQuery names the run a target is asked about.
type ReceiptQuery struct {
	Target      string
	RunID       int64
	JobID       int64
	ScheduledAt time.Time // the run's log date on XXL-JOB executors
}

// ReceiptAsker is implemented by drivers whose targets can be asked whether
// they received a run (XXL-JOB executors, through /idleBeat and /log). A
// driver without it (Lambda, local processes) cannot be asked: a run its
// sender handed and never heard back about stays unknown.
type ReceiptAsker interface {
	Received(ctx context.Context, q ReceiptQuery) (Receipt, error)
}

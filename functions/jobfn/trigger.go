package jobfn

import (
	"encoding/json"
	"fmt"
	"time"
)

// Trigger is the payload Ringjob sends a function: one run of one job,
// possibly one shard of a fan-out. It is the JSON documented in
// docs/lambda.md.
type Trigger struct {
	// JobID and RunID identify the job and this run (the run id is also the
	// idempotency key of the dispatch: a retry of the run is a new run id).
	JobID int64 `json:"job_id"`
	RunID int64 `json:"run_id"`
	// Handler is the job's handler name; one function may serve several.
	Handler string `json:"handler"`
	// Params is the job's (or the manual trigger's) parameter text, as typed.
	// DecodeParams reads it as JSON.
	Params string `json:"params"`
	// ShardIndex (0-based) and ShardTotal (1 when not sharding).
	ShardIndex int `json:"shard_index"`
	ShardTotal int `json:"shard_total"`
	// ScheduledAt is the fire time the run belongs to (RFC 3339, UTC).
	ScheduledAt time.Time `json:"scheduled_at"`
	// Attempt is 0 for the first attempt and 1.. for retries.
	Attempt int `json:"attempt"`
	// CallbackURL and CallbackToken are set in Event (asynchronous) mode:
	// the function reports its outcome to the URL with the token.
	CallbackURL   string `json:"callback_url,omitempty"`
	CallbackToken string `json:"callback_token,omitempty"`
}

// Async reports whether the trigger came in Event mode (a callback is due).
func (t Trigger) Async() bool { return t.CallbackURL != "" }

// DecodeParams unmarshals Params as JSON into v. Empty params leave v as it is.
func (t Trigger) DecodeParams(v any) error {
	if t.Params == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(t.Params), v); err != nil {
		return fmt.Errorf("params of run %d are not the JSON this handler expects: %w", t.RunID, err)
	}
	return nil
}

// Shard returns the part of [from, to) that this shard owns when the range
// is cut into ShardTotal contiguous slices of (almost) equal size: the first
// (to-from) mod ShardTotal slices get one element more. Empty slices
// (lo == hi) are possible when there are more shards than elements.
func (t Trigger) Shard(from, to int64) (lo, hi int64) {
	total := int64(max(t.ShardTotal, 1))
	i := min(max(int64(t.ShardIndex), 0), total-1)
	n := max(to-from, 0)
	size, extra := n/total, n%total
	lo = from + i*size + min(i, extra)
	hi = lo + size
	if i < extra {
		hi++
	}
	return lo, hi
}

// Response is what a function returns in synchronous mode (and, for the
// record, in Event mode): {"ok":true,"result":...,"log":[...]}.
type Response struct {
	OK     bool     `json:"ok"`
	Result any      `json:"result"`
	Log    []string `json:"log"`
	// Error is set in Event mode when the handler failed (synchronous
	// failures are function errors instead).
	Error string `json:"error,omitempty"`
}

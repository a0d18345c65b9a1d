// Command hello is an example Ringjob function: it logs its trigger and
// params and returns a greeting.
//
// Params may be a plain text or JSON {"name": "...", "sleep_ms": N}: with
// sleep_ms it works that long before it answers (a long run to kill).
package main

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/ringjob/ringjob/functions/jobfn"
)

// Greeting is the result.
type Greeting struct {
	Greeting   string `json:"greeting"`
	JobID      int64  `json:"job_id"`
	RunID      int64  `json:"run_id"`
	ShardIndex int    `json:"shard_index"`
	ShardTotal int    `json:"shard_total"`
}

func hello(ctx context.Context, t jobfn.Trigger, log *jobfn.Logger) (any, error) {
	log.Printf("hello: job %d run %d shard %d/%d attempt %d", t.JobID, t.RunID, t.ShardIndex, t.ShardTotal, t.Attempt)
	log.Printf("params: %s", t.Params)
	name := strings.TrimSpace(t.Params)
	var p struct {
		Name    string `json:"name"`
		SleepMs int    `json:"sleep_ms"`
	}
	if json.Valid([]byte(name)) && json.Unmarshal([]byte(name), &p) == nil && p.Name != "" {
		name = p.Name
	}
	if p.SleepMs > 0 {
		log.Printf("working for %d ms", p.SleepMs)
		select {
		case <-time.After(time.Duration(p.SleepMs) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if name == "" {
		name = "world"
	}
	return Greeting{Greeting: "Hello, " + name + "!", JobID: t.JobID, RunID: t.RunID, ShardIndex: t.ShardIndex, ShardTotal: t.ShardTotal}, nil
}

func main() { jobfn.Start(hello) }

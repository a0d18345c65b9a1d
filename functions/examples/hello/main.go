// Command hello is an example Ringjob function: it logs its trigger and
// params and returns a greeting.
//
// Params may be a plain text or JSON {"name": "..."}.
package main

import (
	"context"
	"encoding/json"
	"strings"

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

func hello(_ context.Context, t jobfn.Trigger, log *jobfn.Logger) (any, error) {
	log.Printf("hello: job %d run %d shard %d/%d attempt %d", t.JobID, t.RunID, t.ShardIndex, t.ShardTotal, t.Attempt)
	log.Printf("params: %s", t.Params)
	name := strings.TrimSpace(t.Params)
	var p struct {
		Name string `json:"name"`
	}
	if json.Valid([]byte(name)) && json.Unmarshal([]byte(name), &p) == nil && p.Name != "" {
		name = p.Name
	}
	if name == "" {
		name = "world"
	}
	return Greeting{Greeting: "Hello, " + name + "!", JobID: t.JobID, RunID: t.RunID, ShardIndex: t.ShardIndex, ShardTotal: t.ShardTotal}, nil
}

func main() { jobfn.Start(hello) }

// Command sharded is an example of a sharded Ringjob function: params name
// a range {"from": 0, "to": 1000}; shard i of n processes its contiguous
// slice of the range (jobfn.Trigger.Shard) and returns the slice and the sum
// of its numbers, so the shards of one fire together cover the range once.
package main

import (
	"context"
	"fmt"

	"github.com/ringjob/ringjob/functions/jobfn"
)

// Params is the range to process.
type Params struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// Result is one shard's share.
type Result struct {
	ShardIndex int   `json:"shard_index"`
	ShardTotal int   `json:"shard_total"`
	From       int64 `json:"from"` // first number of the slice
	To         int64 `json:"to"`   // one past the last
	Count      int64 `json:"count"`
	Sum        int64 `json:"sum"`
}

func sharded(ctx context.Context, t jobfn.Trigger, log *jobfn.Logger) (any, error) {
	p := Params{From: 0, To: 1000}
	if err := t.DecodeParams(&p); err != nil {
		return nil, err
	}
	if p.To < p.From {
		return nil, fmt.Errorf("params: to (%d) is before from (%d)", p.To, p.From)
	}
	lo, hi := t.Shard(p.From, p.To)
	log.Printf("shard %d/%d: processing [%d, %d) of [%d, %d)", t.ShardIndex, t.ShardTotal, lo, hi, p.From, p.To)
	var sum int64
	for n := lo; n < hi; n++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sum += n
	}
	log.Printf("shard %d/%d: sum %d", t.ShardIndex, t.ShardTotal, sum)
	return Result{ShardIndex: t.ShardIndex, ShardTotal: t.ShardTotal, From: lo, To: hi, Count: hi - lo, Sum: sum}, nil
}

func main() { jobfn.Start(sharded) }

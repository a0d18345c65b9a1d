package jobfn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/ringjob/ringjob/functions/jobfn"
)

// A sharded job: each shard sums its slice of the range in params. In main,
// call jobfn.Start(sum) instead of calling the handler.
func Example() {
	sum := func(_ context.Context, t jobfn.Trigger, log *jobfn.Logger) (any, error) {
		var p struct{ From, To int64 }
		if err := t.DecodeParams(&p); err != nil {
			return nil, err
		}
		lo, hi := t.Shard(p.From, p.To)
		log.Printf("shard %d/%d: [%d, %d)", t.ShardIndex, t.ShardTotal, lo, hi)
		var s int64
		for n := lo; n < hi; n++ {
			s += n
		}
		return map[string]int64{"sum": s}, nil
	}

	h := jobfn.Handler(sum, jobfn.WithOutput(os.Stdout))
	resp, err := h(context.Background(), jobfn.Trigger{RunID: 1, Params: `{"From":0,"To":10}`, ShardIndex: 1, ShardTotal: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.Marshal(resp)
	fmt.Println(string(b))
	// Output:
	// shard 1/3: [4, 7)
	// {"ok":true,"result":{"sum":15},"log":["shard 1/3: [4, 7)"]}
}

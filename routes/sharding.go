package routes

// ShardTarget returns the target of shard index for a sharding broadcast, as
// XXL-JOB's JobTrigger does: candidates[index], and candidates[0] when index
// is out of range ("" when there are no candidates). With N = len(candidates)
// (XXL-JOB: one shard per live executor) every candidate gets one shard; with
// a larger N (a function's shard count) the extra shards go to candidates[0].
func ShardTarget(candidates []string, index int) string {
	if len(candidates) == 0 {
		return ""
	}
	if index < 0 || index >= len(candidates) {
		return candidates[0]
	}
	return candidates[index]
}

// ShardTargets returns the targets of shards 0..total-1 (see ShardTarget).
// A total below 1 means len(candidates), XXL-JOB's default.
func ShardTargets(candidates []string, total int) []string {
	if len(candidates) == 0 {
		return nil
	}
	if total < 1 {
		total = len(candidates)
	}
	out := make([]string, total)
	for i := range out {
		out[i] = ShardTarget(candidates, i)
	}
	return out
}

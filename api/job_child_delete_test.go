package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A job named as another job's child cannot be deleted: the answer names
// the parent, and the child, the parent and its link stay as they were.
func TestDeleteOfChildJobIsRefused(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{noSched: true})
			gid := b.group("chain", "local://echo")
			child := id(b.job(map[string]any{"group_id": gid, "name": "load"}))
			parent := b.job(map[string]any{"group_id": gid, "name": "extract", "child_job_ids": []int64{child}})

			r := b.call("DELETE", fmt.Sprintf("/api/v1/jobs/%d", child), nil)
			require.Equal(t, 409, r.Status, "%s", r.Body)
			code, field, msg := r.errCode(t)
			require.Equal(t, "conflict", code)
			require.Equal(t, "child_job_ids", field)
			require.Contains(t, msg, fmt.Sprintf("chain/extract (job %d)", id(parent)))
			b.must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d", child), nil)
			require.Equal(t, []any{float64(child)}, b.must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d", id(parent)), nil)["child_job_ids"])

			r = b.call("DELETE", "/api/v1/groups/chain/jobs/load", nil)
			require.Equal(t, 409, r.Status, "by name too: %s", r.Body)

			// A parent whose child's id only contains the digits of ours
			// (12 and 1) is no parent of ours.
			var lookalike int64
			for n := 0; lookalike == 0; n++ {
				j := id(b.job(map[string]any{"group_id": gid, "name": fmt.Sprintf("filler-%d", n)}))
				if j != child && strings.Contains(fmt.Sprint(j), fmt.Sprint(child)) {
					lookalike = j
				}
			}
			b.must(200, "PATCH", fmt.Sprintf("/api/v1/jobs/%d", id(parent)), map[string]any{"child_job_ids": []int64{lookalike}})
			b.must(204, "DELETE", fmt.Sprintf("/api/v1/jobs/%d", child), nil)
		})
	}
}

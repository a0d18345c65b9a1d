package api_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/storetest"
)

// Writers that all read the same version and send it as If-Match race to
// one conditional UPDATE: exactly one wins, every other gets 412, and the
// object holds the winner's change. A read-then-write check would let
// several through (each saw the version it read).
func TestConcurrentIfMatchWritesOneWins(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{noSched: true})
			gid := b.group("races", "local://echo")
			j := b.job(map[string]any{"group_id": gid, "name": "j", "description": "start"})
			race := func(method, path, field string, body func(i int) map[string]any) {
				r := b.call("GET", path, nil)
				require.Equal(t, 200, r.Status)
				etag := r.Header.Get("ETag")
				require.NotEmpty(t, etag)
				const writers = 12
				status := make([]int, writers)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := 0; i < writers; i++ {
					wg.Add(1)
					go func(i int) {
						defer wg.Done()
						<-start
						status[i] = b.call(method, path, body(i), "If-Match", etag).Status
					}(i)
				}
				close(start)
				wg.Wait()
				winner := -1
				for i, s := range status {
					switch s {
					case 200:
						require.Equal(t, -1, winner, "%s %s: two writers won with the same If-Match: %v", method, path, status)
						winner = i
					case 412:
					default:
						t.Fatalf("%s %s: writer %d got %d", method, path, i, s)
					}
				}
				require.NotEqual(t, -1, winner, "%v", status)
				got := b.must(200, "GET", path, nil)
				require.Equal(t, fmt.Sprintf("writer %d", winner), got[field])
				require.NotEqual(t, etag, b.call("GET", path, nil).Header.Get("ETag"))
			}
			jobPath := fmt.Sprintf("/api/v1/jobs/%d", id(j))
			race("PATCH", jobPath, "description", func(i int) map[string]any {
				return map[string]any{"description": fmt.Sprintf("writer %d", i)}
			})
			race("PUT", jobPath, "description", func(i int) map[string]any {
				return map[string]any{"group_id": gid, "name": "j", "description": fmt.Sprintf("writer %d", i)}
			})
			race("PUT", fmt.Sprintf("/api/v1/groups/%d", gid), "title", func(i int) map[string]any {
				return map[string]any{"title": fmt.Sprintf("writer %d", i), "members": []string{"local://echo"}}
			})
		})
	}
}

// Groups carry an ETag like jobs: GET-edit-PUT works, a stale If-Match is
// refused on PUT and DELETE and changes nothing.
func TestGroupOptimisticConcurrency(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{noSched: true})
	gid := b.group("gtags", "local://echo")
	path := fmt.Sprintf("/api/v1/groups/%d", gid)
	r := b.call("GET", path, nil)
	etag := r.Header.Get("ETag")
	require.NotEmpty(t, etag)

	doc := r.JSON(t)
	doc["title"] = "edited"
	r = b.call("PUT", path, doc, "If-Match", etag)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "edited", r.JSON(t)["title"])
	newTag := r.Header.Get("ETag")
	require.NotEqual(t, etag, newTag)

	for _, m := range []string{"PUT", "DELETE"} {
		var body any
		if m == "PUT" {
			body = map[string]any{"title": "lost update", "members": []string{}}
		}
		r = b.call(m, path, body, "If-Match", etag)
		require.Equal(t, 412, r.Status, "%s: %s", m, r.Body)
		code, field, _ := r.errCode(t)
		require.Equal(t, "precondition_failed", code)
		require.Equal(t, "If-Match", field)
	}
	require.Equal(t, "edited", b.must(200, "GET", path, nil)["title"])
	r = b.call("PUT", path, map[string]any{"title": "x", "id": gid + 1000})
	require.Equal(t, 400, r.Status)
	b.must(204, "DELETE", path, nil, "If-Match", newTag)
	require.Equal(t, 404, b.call("GET", path, nil).Status)
}

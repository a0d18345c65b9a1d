package api_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/api"
	"github.com/ringjob/ringjob/internal/kind"
)

func TestJobIdentityByName(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{noSched: true})
			gid := b.group("billing", "local://echo")
			other := b.group("reports", "local://echo")
			j := b.job(map[string]any{"group_id": gid, "name": "nightly close/eu", "params": "p1"})
			byName := "/api/v1/groups/billing/jobs/" + url.PathEscape("nightly close/eu")

			got := b.must(200, "GET", byName, nil)
			require.Equal(t, id(j), id(got))

			t.Run("a name is unique within its group, not across groups", func(t *testing.T) {
				r := b.call("POST", "/api/v1/jobs", map[string]any{"group_id": gid, "name": "nightly close/eu"})
				require.Equal(t, 409, r.Status, "%s", r.Body)
				code, field, _ := r.errCode(t)
				require.Equal(t, "conflict", code)
				require.Equal(t, "name", field)
				b.must(201, "POST", "/api/v1/jobs", map[string]any{"group_id": other, "name": "nightly close/eu"})

				second := b.job(map[string]any{"group_id": gid, "name": "second"})
				r = b.call("PATCH", fmt.Sprintf("/api/v1/jobs/%d", id(second)), map[string]any{"name": "nightly close/eu"})
				require.Equal(t, 409, r.Status, "%s", r.Body)
				require.Equal(t, "second", b.must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d", id(second)), nil)["name"])
			})

			t.Run("unknown names are 404", func(t *testing.T) {
				require.Equal(t, 404, b.call("GET", "/api/v1/groups/billing/jobs/nope", nil).Status)
				require.Equal(t, 404, b.call("GET", "/api/v1/groups/nope/jobs/second", nil).Status)
			})

			t.Run("write by name", func(t *testing.T) {
				up := b.must(200, "PATCH", byName, map[string]any{"params": "p2"})
				require.Equal(t, "p2", up["params"])
				require.Equal(t, "p2", b.must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d", id(j)), nil)["params"])
			})
		})
	}
}

func TestJobOptimisticConcurrency(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{noSched: true})
	gid := b.group("etags", "local://echo")
	j := b.job(map[string]any{"group_id": gid, "name": "j", "description": "d", "params": "a", "retry_count": 2})
	path := fmt.Sprintf("/api/v1/jobs/%d", id(j))

	r := b.call("GET", path, nil)
	require.Equal(t, 200, r.Status)
	etag := r.Header.Get("ETag")
	require.NotEmpty(t, etag)

	// GET-edit-PUT: the whole GET output, read-only fields included, is a valid PUT body.
	doc := r.JSON(t)
	doc["description"] = "edited"
	r = b.call("PUT", path, doc, "If-Match", etag)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "edited", r.JSON(t)["description"])
	require.Equal(t, float64(2), r.JSON(t)["retry_count"])
	newTag := r.Header.Get("ETag")
	require.NotEqual(t, etag, newTag)

	// The old ETag is stale now: PUT, PATCH and DELETE are refused and change nothing.
	for _, m := range []string{"PUT", "PATCH", "DELETE"} {
		var body any
		if m != "DELETE" {
			body = map[string]any{"description": "lost update"}
		}
		r = b.call(m, path, body, "If-Match", etag)
		require.Equal(t, 412, r.Status, "%s: %s", m, r.Body)
		code, field, _ := r.errCode(t)
		require.Equal(t, "precondition_failed", code)
		require.Equal(t, "If-Match", field)
	}
	require.Equal(t, "edited", b.must(200, "GET", path, nil)["description"])

	// PATCH is a merge patch: only the fields sent change; null resets to the default.
	up := b.must(200, "PATCH", path, map[string]any{"params": "b", "retry_count": nil}, "If-Match", newTag, "Content-Type", "application/merge-patch+json")
	require.Equal(t, "b", up["params"])
	require.Equal(t, "edited", up["description"])
	require.Equal(t, float64(0), up["retry_count"])

	// A PUT naming another id is refused.
	doc["id"] = id(j) + 1000
	r = b.call("PUT", path, doc)
	require.Equal(t, 400, r.Status)
	_, field, _ := r.errCode(t)
	require.Equal(t, "id", field)

	b.must(204, "DELETE", path, nil, "If-Match", b.call("GET", path, nil).Header.Get("ETag"))
}

func TestIdempotencyKeyReusedWithAnotherBody(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{})
	gid := b.group("idem", "local://echo")
	j := b.job(map[string]any{"group_id": gid, "name": "j", "handler": "echo"})
	path := fmt.Sprintf("/api/v1/jobs/%d/trigger", id(j))

	first := b.must(201, "POST", path, map[string]any{"params": "one"}, "Idempotency-Key", "deploy-1")
	again := b.must(200, "POST", path, map[string]any{"params": "one"}, "Idempotency-Key", "deploy-1")
	require.Equal(t, id(first), id(again))

	before := b.counts()
	for _, body := range []any{map[string]any{"params": "two"}, nil} {
		r := b.call("POST", path, body, "Idempotency-Key", "deploy-1")
		require.Equal(t, 422, r.Status, "%s", r.Body)
		code, field, _ := r.errCode(t)
		require.Equal(t, "idempotency_key_reused", code)
		require.Equal(t, "Idempotency-Key", field)
	}
	require.Equal(t, before, b.counts())
	// By name, the same key is the same job's key.
	byName := b.must(200, "POST", "/api/v1/groups/idem/jobs/j/trigger", map[string]any{"params": "one"}, "Idempotency-Key", "deploy-1")
	require.Equal(t, id(first), id(byName))
}

func TestOpenAPIEnumsMatchTheServer(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(api.OpenAPI(), &doc))
	var routes, blocks []string
	for _, r := range kind.Routes() {
		routes = append(routes, string(r))
	}
	for _, bl := range kind.Blocks {
		blocks = append(blocks, string(bl))
	}
	for _, schema := range []string{"JobInput", "Job"} {
		props := doc.Components.Schemas[schema].Properties
		require.Equal(t, routes, props["route_strategy"].Enum, schema)
		require.Equal(t, blocks, props["block_strategy"].Enum, schema)
		require.True(t, slices.Contains(props["misfire_policy"].Enum, string(kind.MisfireFireOnceNow)), schema)
	}
}

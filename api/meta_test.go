package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/api"
)

func TestOpenAPIListsEveryRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{noSched: true})

	served := b.must(200, "GET", "/api/v1/openapi.json", nil)
	require.True(t, strings.HasPrefix(served["openapi"].(string), "3.0."))
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(api.OpenAPI(), &doc))

	registered := map[string]bool{}
	for _, r := range b.app.GetRoutes(true) {
		if r.Method == "HEAD" || !strings.HasPrefix(r.Path, "/api/v1/") {
			continue
		}
		path := openAPIPath(r.Path)
		key := strings.ToLower(r.Method) + " " + path
		registered[key] = true
		ops, ok := doc.Paths[path]
		require.True(t, ok, "route %s %s is not in openapi.json", r.Method, r.Path)
		_, ok = ops[strings.ToLower(r.Method)]
		require.True(t, ok, "route %s %s has no %s operation in openapi.json", r.Method, r.Path, r.Method)
	}
	require.NotEmpty(t, registered)
	for path, ops := range doc.Paths {
		if !strings.HasPrefix(path, "/api/v1/") {
			continue
		}
		for method := range ops {
			if method == "parameters" {
				continue
			}
			require.True(t, registered[method+" "+path], "openapi.json documents %s %s, which is not served", method, path)
		}
	}
}

// openAPIPath turns /jobs/:id into /jobs/{id}.
func openAPIPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			parts[i] = "{" + strings.TrimPrefix(s, ":") + "}"
		}
	}
	return strings.Join(parts, "/")
}

func TestHealthReadyMetrics(t *testing.T) {
	t.Parallel()
	get := func(t *testing.T, url string) (int, string) {
		t.Helper()
		res, err := http.Get(url)
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(body)
	}
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{noSched: true})
			status, body := get(t, b.url+"/healthz")
			require.Equal(t, 200, status, body)
			status, body = get(t, b.url+"/readyz")
			require.Equal(t, 200, status, body)
			b.must(200, "GET", "/api/v1/jobs", nil) // something to count
			status, body = get(t, b.url+"/metrics")
			require.Equal(t, 200, status)
			require.Contains(t, body, `ringjob_api_requests_total{code="200",method="GET",route="/api/v1/jobs"}`)
		})
	}
	t.Run("not ready", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "sqlite", setupOpts{noSched: true, ready: func(context.Context) error {
			return errors.New("2 database migration(s) are not applied")
		}})
		status, body := get(t, b.url+"/readyz")
		require.Equal(t, 503, status)
		require.Contains(t, body, `"code":"unavailable"`)
		require.Contains(t, body, "migration(s) are not applied")
	})
	t.Run("default readiness checks the database", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "sqlite", setupOpts{noSched: true})
		require.NoError(t, b.st.Close())
		status, body := get(t, b.url+"/readyz")
		require.Equal(t, 503, status, body)
		require.Contains(t, body, "database is not reachable")
	})
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{noSched: true})
	r := b.call("GET", "/api/v1/jobs", nil, "X-Request-Id", "trace-42")
	require.Equal(t, "trace-42", r.Header.Get("X-Request-Id"))
	r = b.call("GET", "/api/v1/jobs", nil, "X-Request-Id", "bad id with spaces")
	require.NotEqual(t, "bad id with spaces", r.Header.Get("X-Request-Id"))
	require.NotEmpty(t, r.Header.Get("X-Request-Id"))
}

package web_test

import (
	"io"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/web"
)

func TestMountServesTheConsole(t *testing.T) {
	app := fiber.New()
	web.Mount(app)
	get := func(path string) (int, string, map[string]string) {
		resp, err := app.Test(httptest.NewRequest("GET", path, nil))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), map[string]string{"type": resp.Header.Get("Content-Type"), "csp": resp.Header.Get("Content-Security-Policy")}
	}
	code, body, hdr := get("/")
	require.Equal(t, 200, code)
	require.Contains(t, body, `<script type="module" src="ui/app.js">`, "relative URLs work under a path prefix")
	require.Contains(t, hdr["type"], "text/html")
	require.Contains(t, hdr["csp"], "script-src 'self'")

	code, body, hdr = get("/ui/app.js")
	require.Equal(t, 200, code)
	require.Equal(t, "text/javascript; charset=utf-8", hdr["type"], "ES modules need a JavaScript MIME type")
	require.Contains(t, body, `from "./api.js"`)

	code, _, hdr = get("/ui/style.css")
	require.Equal(t, 200, code)
	require.Contains(t, hdr["type"], "text/css")

	code, body, hdr = get("/vendor/uplot-1.6.32/uPlot.esm.js")
	require.Equal(t, 200, code, "the vendored chart library is served from the binary")
	require.Equal(t, "text/javascript; charset=utf-8", hdr["type"])
	require.Contains(t, body, "export")

	code, body, hdr = get("/favicon.ico")
	require.Equal(t, 200, code, "browsers ask for a favicon: there is one")
	require.Equal(t, "image/svg+xml", hdr["type"])
	require.Contains(t, body, "<svg")
	_, body, _ = get("/")
	require.Contains(t, body, `rel="icon"`)

	for _, p := range []string{"/ui/missing.js", "/ui/../web.go", "/ui/%2e%2e/web.go", "/ui/", "/vendor/", "/vendor/../web.go"} {
		code, _, _ = get(p)
		require.Equal(t, 404, code, p)
	}
}

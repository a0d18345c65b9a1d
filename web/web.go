// Package web is Ringjob's web console: static files (HTML, CSS, ES
// modules; no build step, no CDN) embedded in the binary and served at "/".
// The console is a client of the public REST API only: it signs in with
// POST api/v1/session, sends the session's CSRF token on writes and shapes
// its pages from GET api/v1/me. Every URL it uses is relative, so it works
// behind a reverse proxy that serves Ringjob under a path prefix
// (public_url).
package web

import (
	"embed"
	"io/fs"
	"mime"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"
)

//go:embed static
var static embed.FS

// securityHeaders keep the console from being framed or running anything
// but its own scripts.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
	"X-Content-Type-Options":  "nosniff",
	"Referrer-Policy":         "same-origin",
}

// Mount serves the console on app: the page at "/", its files under "/ui/"
// and the vendored libraries under "/vendor/". The console needs no permission rule of its own: the page is
// public, and what it shows comes from the API, which checks every call.
func Mount(app fiber.Router) {
	app.Get("/", func(c *fiber.Ctx) error { return serve(c, "index.html") })
	// Browsers ask for /favicon.ico whatever the page links; it is the SVG.
	app.Get("/favicon.ico", func(c *fiber.Ctx) error { return serve(c, "ui/favicon.svg") })
	app.Get("/ui/*", func(c *fiber.Ctx) error { return serve(c, "ui/"+c.Params("*")) })
	app.Get("/vendor/*", func(c *fiber.Ctx) error { return serve(c, "vendor/"+c.Params("*")) })
}

func serve(c *fiber.Ctx, name string) error {
	clean := path.Clean("/" + name)[1:]
	if clean == "" || clean == "ui" || clean == "vendor" {
		return fiber.ErrNotFound
	}
	body, err := fs.ReadFile(static, "static/"+clean)
	if err != nil {
		return fiber.ErrNotFound
	}
	for k, v := range securityHeaders {
		c.Set(k, v)
	}
	ct := mime.TypeByExtension(path.Ext(clean))
	if strings.HasSuffix(clean, ".js") {
		ct = "text/javascript; charset=utf-8" // ES modules need a JavaScript type
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	c.Set(fiber.HeaderContentType, ct)
	// The files change with the binary: revalidate, never serve a stale console.
	c.Set(fiber.HeaderCacheControl, "no-cache")
	return c.Send(body)
}

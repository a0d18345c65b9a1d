package api

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/internal/logs"
)

// A draining API finishes the request in flight (Start waits for it),
// refuses new ones with 503 and a closed connection, and still serves the
// exempt paths (executor callbacks).
func TestDrainRefusesAllButTheExemptAndWaitsForRequestsInFlight(t *testing.T) {
	s := &server{log: logs.OrDiscard(nil)}
	app := fiber.New(fiber.Config{ErrorHandler: s.errorHandler})
	d := &Drain{}
	app.Use(d.middleware(map[string]bool{"/api/callback": true}))
	entered, finish := make(chan struct{}), make(chan struct{})
	app.Post("/api/v1/jobs/1/trigger", func(c *fiber.Ctx) error {
		if c.Get("X-Slow") != "" {
			close(entered)
			<-finish
		}
		return c.SendStatus(201)
	})
	app.Post("/api/callback", func(c *fiber.Ctx) error { return c.SendString(`{"code":200}`) })

	slow := make(chan int, 1)
	go func() {
		req := httptest.NewRequest("POST", "/api/v1/jobs/1/trigger", nil)
		req.Header.Set("X-Slow", "1")
		resp, err := app.Test(req, -1)
		if err != nil {
			slow <- 0
			return
		}
		slow <- resp.StatusCode
	}()
	<-entered
	started := make(chan error, 1)
	go func() { started <- d.Start(context.Background()) }()
	select {
	case err := <-started:
		t.Fatalf("Start returned (%v) while a request was in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	if !d.Draining() {
		t.Fatal("not draining after Start")
	}
	resp, err := app.Test(httptest.NewRequest("POST", "/api/v1/jobs/1/trigger", nil), -1)
	if err != nil || resp.StatusCode != 503 || !resp.Close || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("a new request while draining: %v %+v, want 503, Retry-After 1 and the connection closed", err, resp)
	}
	resp, err = app.Test(httptest.NewRequest("POST", "/api/callback", nil), -1)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a callback while draining: %v %+v, want 200", err, resp)
	}
	close(finish)
	if code := <-slow; code != 201 {
		t.Fatalf("the request in flight got %d, want 201", code)
	}
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not return once the request in flight ended")
	}
}

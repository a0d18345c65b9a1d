package api

import (
	"context"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// Drain is how a stopping replica's API winds down while its scheduler
// drains: once started, requests are refused with 503 (and their
// connection closed, so a client or load balancer goes elsewhere) except
// the health endpoints and the paths given to New as ServedWhileDraining
// (executor callbacks): results that arrive during the drain are recorded
// by the replica whose outcome writer is still running, instead of finding
// its port closed. Start waits for the requests already in flight.
type Drain struct {
	mu   sync.Mutex
	on   bool
	busy int           // requests in flight that Start waits for
	idle chan struct{} // closed when busy drops to 0 after Start
}

// Draining reports whether Start was called.
func (d *Drain) Draining() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.on
}

// Start refuses new requests from now on (but the exempt ones) and waits,
// until ctx ends, for those in flight.
func (d *Drain) Start(ctx context.Context) error {
	d.mu.Lock()
	d.on = true
	if d.idle == nil {
		d.idle = make(chan struct{})
		if d.busy == 0 {
			close(d.idle)
		}
	}
	idle := d.idle
	d.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enter admits a request that is not exempt, unless the drain started.
func (d *Drain) enter() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.on {
		return false
	}
	d.busy++
	return true
}

func (d *Drain) leave() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.busy--
	if d.busy == 0 && d.idle != nil {
		select {
		case <-d.idle:
		default:
			close(d.idle)
		}
	}
}

// middleware refuses what a draining replica does not serve.
func (d *Drain) middleware(exempt map[string]bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if exempt[c.Path()] {
			return c.Next()
		}
		if !d.enter() {
			c.Context().SetConnectionClose()
			return &apiError{Status: fiber.StatusServiceUnavailable, Code: "unavailable",
				Message: "this replica is stopping: send the request to another one", RetryAfter: 1}
		}
		defer d.leave()
		return c.Next()
	}
}

package client

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// WaitReady polls the server's /readyz until it answers 200 or ctx ends,
// for a client of a server that is still starting (one created in the same
// Terraform apply). The error says what the last try saw.
func (c *Client) WaitReady(ctx context.Context, every time.Duration) error {
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/readyz", nil)
		if err != nil {
			return fmt.Errorf("wait for %s to be ready: %w", c.base, err)
		}
		res, err := c.http.Do(req)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("/readyz answered %s", res.Status)
		} else if ctx.Err() == nil || last == nil { // keep what the server said over the deadline
			last = unwrapURLError(err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s was not ready in time (last try: %v)", c.base, last)
		case <-time.After(every):
		}
	}
}

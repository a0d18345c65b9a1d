package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/ringjob/ringjob/internal/xxlwire"
)

// callAdmins POSTs body to {admin}{path} on each admin address in order
// and stops at the first that answers code 200 (XXL-JOB's AdminBiz calls).
func (e *Executor) callAdmins(ctx context.Context, path string, body []byte) error {
	var errs []error
	for _, admin := range e.cfg.admins {
		err := e.callAdmin(ctx, admin+path, body)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("no admin accepted %s: %w", path, errors.Join(errs...))
}

// callAdmin makes one call, bounded by the admin timeout.
func (e *Executor) callAdmin(ctx context.Context, url string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.adminTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("POST %s: %w", url, err)
	}
	req.Header.Set("Content-Type", xxlwire.RequestContentType)
	req.Header.Set(HeaderAppName, e.cfg.appName)
	if e.cfg.token != "" {
		req.Header.Set(HeaderAccessToken, e.cfg.token)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("POST %s: read response: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: HTTP %s: %s", url, resp.Status, snippet(data))
	}
	var reply xxlwire.Envelope
	if err := json.Unmarshal(data, &reply); err != nil {
		return fmt.Errorf("POST %s: answer is not an XXL-JOB response (check the admin address and context path): %s", url, snippet(data))
	}
	if reply.Code != CodeSuccess {
		return fmt.Errorf("POST %s: code %d: %s", url, reply.Code, reply.Msg)
	}
	return nil
}

func snippet(b []byte) string {
	const max = 200
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

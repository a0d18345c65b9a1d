package alarm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
)

// DefaultTimeout bounds one delivery attempt of a sender whose config leaves
// Timeout zero (e-mail: the whole SMTP conversation).
const DefaultTimeout = 10 * time.Second

// Deps is what senders take from their surroundings rather than from
// configuration. The zero value is ready to use.
type Deps struct {
	// Clock gives the signing timestamps of DingTalk and Feishu and the
	// e-mail Date header. Nil: the real clock.
	Clock clockwork.Clock
	// HTTPClient sends the HTTP alarms. Nil: a client on
	// http.DefaultTransport (which honours HTTPS_PROXY). Redirects are never
	// followed, whatever the client says: a webhook URL must be the final one.
	HTTPClient *http.Client
}

func (d Deps) clock() clockwork.Clock {
	if d.Clock == nil {
		return clockwork.NewRealClock()
	}
	return d.Clock
}

func (d Deps) httpClient() *http.Client {
	var c http.Client
	if d.HTTPClient != nil {
		c = *d.HTTPClient
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// Response bodies are read up to this size; errors quote the start of it.
const (
	maxResponseBytes = 64 << 10
	bodyExcerptBytes = 300
)

// poster is what the HTTP senders share: one JSON POST with a timeout,
// status check and secret-free errors.
type poster struct {
	kind    string // slack, dingtalk, ...
	name    string // channel name
	url     string // the configured endpoint (a secret)
	timeout time.Duration
	client  *http.Client
	scrub   scrubber
}

func newPoster(kind, name, url string, timeout time.Duration, deps Deps, secrets ...string) poster {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return poster{kind: kind, name: name, url: url, timeout: timeout, client: deps.httpClient(),
		scrub: newScrubber([]string{url}, secrets...)}
}

// marshal encodes v as compact JSON without HTML escaping, so a body reads
// as it will be shown.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// post sends body to target (the configured URL, or it with signing query
// parameters) and returns the response of a 2xx answer. Any other answer is
// an *HTTPError; a 3xx and a 4xx other than 408 and 429 are permanent.
func (p poster) post(ctx context.Context, target string, body []byte, header http.Header) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, nil, p.scrub.err(Permanent(fmt.Errorf("%s channel %q: build request: %w", p.kind, p.name, err)))
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "Ringjob-Alarm/1")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, p.scrub.err(fmt.Errorf("%s channel %q: %w", p.kind, p.name, err))
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return resp.StatusCode, nil, p.scrub.err(fmt.Errorf("%s channel %q: POST %s: HTTP %d: read response: %w", p.kind, p.name, Redact(p.url), resp.StatusCode, err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		herr := &HTTPError{Channel: p.name, Kind: p.kind, URL: Redact(p.url), Status: resp.StatusCode, Body: p.excerpt(respBody)}
		if loc := resp.Header.Get("Location"); resp.StatusCode < 400 && loc != "" {
			herr.Body = strings.TrimSpace("redirects are not followed; configure the final URL. " + herr.Body)
		}
		if resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests {
			return resp.StatusCode, respBody, Permanent(herr)
		}
		return resp.StatusCode, respBody, herr
	}
	return resp.StatusCode, respBody, nil
}

// robotError reports a 2xx answer whose JSON carries a nonzero error code.
func (p poster) robotError(status, code int, body []byte) error {
	return &HTTPError{Channel: p.name, Kind: p.kind, URL: Redact(p.url), Status: status, Code: code, Body: p.excerpt(body)}
}

// decodeError reports a 2xx answer that is not the JSON the robot sends.
func (p poster) decodeError(status int, body []byte, err error) error {
	return p.scrub.err(fmt.Errorf("%s channel %q: POST %s: HTTP %d with an unexpected body (%v): %s",
		p.kind, p.name, Redact(p.url), status, err, p.excerpt(body)))
}

// excerpt is the start of a response body on one line, without secrets.
func (p poster) excerpt(body []byte) string {
	s := oneLine(string(body))
	if s == "" {
		return "(empty body)"
	}
	return p.scrub.text(truncateBytes(s, bodyExcerptBytes))
}

// errcodeCheck checks the answer of robots that reply {"errcode": N}: nil when
// N is 0.
func errcodeCheck(p poster, status int, body []byte) error {
	var r struct {
		ErrCode *int   `json:"errcode"`
		ErrMsg  string `json:"errmsg"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return p.decodeError(status, body, err)
	}
	if r.ErrCode == nil {
		return p.decodeError(status, body, errors.New("no errcode"))
	}
	if *r.ErrCode != 0 {
		return p.robotError(status, *r.ErrCode, body)
	}
	return nil
}

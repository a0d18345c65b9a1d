package httptarget

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// plainClient sends the driver's requests to plain-HTTP executors over
// keep-alive connections it pools per executor address, writing each request
// and reading its answer in the caller's goroutine. net/http's transport
// hands every request to two goroutines of the connection (a writer and a
// reader) through channels and timers, and builds a header map and a
// response object per request: at 5,000 fires a second that was a third of
// the server's CPU (docs/benchmarks.md). The requests are the same bytes
// net/http writes (TestPlainRequestBytes); https targets, targets with
// credentials or a query, and header values net/http would refuse go
// through net/http.
type plainClient struct {
	dial           func(ctx context.Context, network, addr string) (net.Conn, error)
	maxPerHost     int
	idleTimeout    time.Duration
	requestTimeout time.Duration

	mu        sync.Mutex
	hosts     map[string]*hostConns
	lastSweep time.Time

	targetsMu sync.RWMutex
	targets   map[string]plainTarget // by target string; reset when it grows past maxTargets
}

// maxTargets bounds the parsed-target cache (targets are executor
// addresses; a cache this size is only reached by churn).
const maxTargets = 4096

// plainTarget is a target URL split for the plain client.
type plainTarget struct {
	ok     bool   // false: send through net/http
	host   string // Host header, as in the URL
	addr   string // host:port to dial
	prefix string // escaped path before the executor path, without a trailing slash
}

// hostConns are the connections to one executor address.
type hostConns struct {
	slots chan struct{} // one per connection in use or being dialled
	idle  []*plainConn  // most recently used last
	// lastUsed is when a request last asked for this address (under
	// plainClient.mu).
	lastUsed time.Time
}

type plainConn struct {
	c        net.Conn
	br       *bufio.Reader
	lastUsed time.Time
}

func newPlainClient(dial func(ctx context.Context, network, addr string) (net.Conn, error), maxPerHost int, idleTimeout, requestTimeout time.Duration) *plainClient {
	return &plainClient{dial: dial, maxPerHost: maxPerHost, idleTimeout: idleTimeout, requestTimeout: requestTimeout,
		hosts: map[string]*hostConns{}, targets: map[string]plainTarget{}}
}

// target returns how to reach target, parsed once.
func (p *plainClient) target(target string) plainTarget {
	p.targetsMu.RLock()
	t, found := p.targets[target]
	p.targetsMu.RUnlock()
	if found {
		return t
	}
	t = parsePlainTarget(target)
	p.targetsMu.Lock()
	if len(p.targets) >= maxTargets {
		p.targets = map[string]plainTarget{}
	}
	p.targets[target] = t
	p.targetsMu.Unlock()
	return t
}

func parsePlainTarget(target string) plainTarget {
	base, err := baseURL(target)
	if err != nil {
		return plainTarget{}
	}
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" || u.Host == "" {
		return plainTarget{}
	}
	for i := 0; i < len(u.Host); i++ {
		if c := u.Host[i]; c <= ' ' || c >= 0x7f || c == '%' {
			return plainTarget{} // a zone or a name net/http would convert
		}
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	prefix := u.EscapedPath()
	if prefix != u.Path && u.RawPath == "" {
		// The path is escaped on the wire; net/http escapes it the same
		// way, but keep such targets on net/http rather than re-derive it.
		return plainTarget{}
	}
	return plainTarget{ok: true, host: u.Host, addr: addr, prefix: prefix}
}

// validHeaderValue reports whether v can be written as a header value as it
// is (net/http refuses control characters other than tab).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// bufPool holds request and response buffers.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledBuf keeps buffers grown by a large answer out of the pool.
const maxPooledBuf = 64 << 10

func putBuf(b *[]byte) {
	if cap(*b) <= maxPooledBuf {
		*b = (*b)[:0]
		bufPool.Put(b)
	}
}

// appendRequest writes a POST as net/http writes it: request line, Host,
// User-Agent, Content-Length, then the other headers in key order.
func appendRequest(b []byte, t plainTarget, path string, auth Auth, body []byte) []byte {
	b = append(b, "POST "...)
	b = append(b, t.prefix...)
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, t.host...)
	b = append(b, "\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\nContent-Type: application/json;charset=UTF-8\r\n"...)
	if auth.AccessToken != "" {
		b = append(b, "Xxl-Job-Access-Token: "...)
		b = append(b, auth.AccessToken...)
		b = append(b, "\r\n"...)
	}
	if auth.AppName != "" {
		b = append(b, "Xxl-Job-Appname: "...)
		b = append(b, auth.AppName...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	return append(b, body...)
}

// plainAnswer is an executor's answer: its status, Location (redirects)
// and body, which lives in a pooled buffer until release.
type plainAnswer struct {
	status   int
	location string
	body     []byte
	buf      *[]byte
}

func (a *plainAnswer) release() {
	if a.buf != nil {
		putBuf(a.buf)
		a.buf = nil
	}
}

// errAnswerTooLarge: an answer above the driver's limit (16 MiB).
var errAnswerTooLarge = errors.New("response larger than 16 MiB")

const maxAnswer = 16 << 20

// do sends the request in req (a whole HTTP request) to addr and reads the
// answer. The connection goes back to the pool when the answer was read to
// its end and the executor keeps it alive.
func (p *plainClient) do(ctx context.Context, addr string, req []byte) (plainAnswer, error) {
	now := time.Now()
	deadline := now.Add(p.requestTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	h := p.host(addr, now)
	pc, err := p.acquire(ctx, h, addr, deadline)
	if err != nil {
		return plainAnswer{}, err
	}
	keep := false
	defer func() { p.release(h, pc, keep) }()
	if err := pc.c.SetDeadline(deadline); err != nil {
		return plainAnswer{}, err
	}
	if ctx.Done() != nil {
		// Cancelling ctx ends the request at once, as in net/http.
		// A connection whose cancel may still be setting its deadline is
		// not used again.
		stop := context.AfterFunc(ctx, func() { _ = pc.c.SetDeadline(time.Unix(1, 0)) })
		defer func() {
			if !stop() {
				keep = false
			}
		}()
	}
	if _, err := pc.c.Write(req); err != nil {
		return plainAnswer{}, ctxErr(ctx, err)
	}
	ans, keepAlive, err := readAnswer(pc.br)
	if err != nil {
		ans.release()
		return plainAnswer{}, ctxErr(ctx, err)
	}
	keep = keepAlive
	return ans, nil
}

// ctxErr prefers the context's error, as net/http does, when it ended the
// request.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}

func (p *plainClient) host(addr string, now time.Time) *hostConns {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Sub(p.lastSweep) > p.idleTimeout/4 {
		// Connections to executors that left are closed here, not by a
		// timer per connection: whatever the traffic to others, every
		// idle connection is looked at every quarter idle timeout.
		p.lastSweep = now
		for a, h := range p.hosts {
			p.sweepLocked(h, now)
			// Kept while in use, or used within the idle timeout: a
			// request may hold h without a slot yet.
			if len(h.idle) == 0 && len(h.slots) == 0 && now.Sub(h.lastUsed) > p.idleTimeout {
				delete(p.hosts, a)
			}
		}
	}
	h := p.hosts[addr]
	if h == nil {
		h = &hostConns{slots: make(chan struct{}, p.maxPerHost)}
		p.hosts[addr] = h
	}
	h.lastUsed = now
	return h
}

// sweepLocked closes idle connections unused for idleTimeout.
func (p *plainClient) sweepLocked(h *hostConns, now time.Time) {
	keep := h.idle[:0]
	for _, pc := range h.idle {
		if now.Sub(pc.lastUsed) > p.idleTimeout {
			_ = pc.c.Close()
			continue
		}
		keep = append(keep, pc)
	}
	clear(h.idle[len(keep):])
	h.idle = keep
}

// acquire takes a connection slot (waiting while maxPerHost are in use),
// then an idle connection that is still open, else a new one.
func (p *plainClient) acquire(ctx context.Context, h *hostConns, addr string, deadline time.Time) (*plainConn, error) {
	select {
	case h.slots <- struct{}{}:
	default:
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if d, ok := ctx.Deadline(); !ok || d.After(deadline) {
			// Only a context without the request's deadline needs one
			// of its own (the dispatcher's has it: no timer per wait).
			wctx, cancel = context.WithDeadline(ctx, deadline)
		}
		select {
		case h.slots <- struct{}{}:
			cancel()
		case <-wctx.Done():
			cancel()
			return nil, fmt.Errorf("wait for a connection to %s: %w", addr, wctx.Err())
		}
	}
	for {
		p.mu.Lock()
		n := len(h.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		pc := h.idle[n-1]
		h.idle[n-1] = nil
		h.idle = h.idle[:n-1]
		p.mu.Unlock()
		if pc.br.Buffered() == 0 && connAlive(pc.c) {
			return pc, nil
		}
		_ = pc.c.Close() // the executor closed it (or sent what nobody asked for)
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	c, err := p.dial(dctx, "tcp", addr)
	if err != nil {
		<-h.slots
		return nil, err
	}
	return &plainConn{c: c, br: bufio.NewReaderSize(c, 4096)}, nil
}

// release gives the slot back and keeps the connection for the next
// request, or closes it.
func (p *plainClient) release(h *hostConns, pc *plainConn, keep bool) {
	if keep {
		pc.lastUsed = time.Now()
		p.mu.Lock()
		h.idle = append(h.idle, pc)
		p.mu.Unlock()
	} else {
		_ = pc.c.Close()
	}
	<-h.slots
}

// readAnswer reads one HTTP/1.x response: the status line, the headers
// the driver needs (Content-Length, Transfer-Encoding, Connection,
// Location) and the body, by length, chunked, or up to the end of the
// connection. keepAlive: the connection may carry the next request.
func readAnswer(br *bufio.Reader) (ans plainAnswer, keepAlive bool, err error) {
	for {
		line, err := readLine(br)
		if err != nil {
			return ans, false, fmt.Errorf("read response status: %w", err)
		}
		var minor int
		switch {
		case bytes.HasPrefix(line, []byte("HTTP/1.1 ")):
			minor = 1
		case bytes.HasPrefix(line, []byte("HTTP/1.0 ")):
		default:
			return ans, false, fmt.Errorf("malformed HTTP response %q", truncate(string(line), 100))
		}
		rest := line[len("HTTP/1.1 "):]
		if len(rest) < 3 || (len(rest) > 3 && rest[3] != ' ') {
			return ans, false, fmt.Errorf("malformed HTTP status line %q", truncate(string(line), 100))
		}
		status, err := strconv.Atoi(string(rest[:3]))
		if err != nil || status < 100 {
			return ans, false, fmt.Errorf("malformed HTTP status code %q", truncate(string(rest[:3]), 10))
		}
		keepAlive = minor == 1
		length := int64(-1)
		chunked := false
		for {
			line, err := readLine(br)
			if err != nil {
				return ans, false, fmt.Errorf("read response headers: %w", err)
			}
			if len(line) == 0 {
				break
			}
			colon := bytes.IndexByte(line, ':')
			if colon <= 0 {
				return ans, false, fmt.Errorf("malformed HTTP header %q", truncate(string(line), 100))
			}
			name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
			switch {
			case bytes.EqualFold(name, []byte("Content-Length")):
				n, err := strconv.ParseInt(string(value), 10, 64)
				if err != nil || n < 0 || (length >= 0 && n != length) {
					return ans, false, fmt.Errorf("bad Content-Length %q", truncate(string(value), 30))
				}
				length = n
			case bytes.EqualFold(name, []byte("Transfer-Encoding")):
				if !bytes.EqualFold(value, []byte("chunked")) {
					return ans, false, fmt.Errorf("unsupported Transfer-Encoding %q", truncate(string(value), 30))
				}
				chunked = true
			case bytes.EqualFold(name, []byte("Connection")):
				for _, tok := range bytes.Split(value, []byte(",")) {
					tok = bytes.TrimSpace(tok)
					if bytes.EqualFold(tok, []byte("close")) {
						keepAlive = false
					} else if minor == 0 && bytes.EqualFold(tok, []byte("keep-alive")) {
						keepAlive = true
					}
				}
			case bytes.EqualFold(name, []byte("Location")):
				ans.location = string(value)
			}
		}
		if status >= 100 && status < 200 {
			if status == 101 {
				return ans, false, errors.New("unexpected 101 Switching Protocols")
			}
			continue // an interim answer: the real one follows
		}
		ans.status = status
		ans.buf = bufPool.Get().(*[]byte)
		switch {
		case status == 204 || status == 304:
			return ans, keepAlive, nil
		case chunked:
			// Transfer-Encoding wins over Content-Length (RFC 9112 6.3).
			b, err := readAll(httputil.NewChunkedReader(br), *ans.buf)
			*ans.buf = b[:0]
			if err != nil {
				return ans, false, err
			}
			ans.body = b
			for { // trailer, up to its empty line
				line, err := readLine(br)
				if err != nil {
					return ans, false, fmt.Errorf("read response trailer: %w", err)
				}
				if len(line) == 0 {
					break
				}
			}
			return ans, keepAlive, nil
		case length >= 0:
			if length > maxAnswer {
				return ans, false, errAnswerTooLarge
			}
			b := *ans.buf
			if int64(cap(b)) < length {
				b = make([]byte, 0, length)
			}
			b = b[:length]
			*ans.buf = b[:0]
			if _, err := io.ReadFull(br, b); err != nil {
				return ans, false, fmt.Errorf("read response body: %w", err)
			}
			ans.body = b
			return ans, keepAlive, nil
		default:
			b, err := readAll(br, *ans.buf)
			*ans.buf = b[:0]
			ans.body = b
			return ans, false, err // the body ends with the connection
		}
	}
}

// readAll reads r to its end into b, at most maxAnswer bytes.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			if len(b) >= maxAnswer {
				return b, errAnswerTooLarge
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, fmt.Errorf("read response body: %w", err)
		}
	}
}

// readLine reads one header line without its CRLF (or LF).
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, errors.New("header line longer than 4 KiB")
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

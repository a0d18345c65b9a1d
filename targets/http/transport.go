package httptarget

import (
	"net"
	"net/http"
	"time"
)

// DefaultMaxConnsPerExecutor bounds the connections the driver keeps to one
// executor address (host:port). Dispatches beyond it wait for a free
// connection instead of opening more, so a burst of fires neither exhausts
// the executor's sockets nor the server's ports.
const DefaultMaxConnsPerExecutor = 64

// idleConnTimeout closes connections an executor has not used for this long
// (executors that left, or quiet hours).
const idleConnTimeout = 90 * time.Second

// NewTransport is the one place the driver's connections to executors are
// set up: keep-alive connections pooled per executor (at most maxPerExecutor
// open, all of them kept idle for reuse), dialled with d, and the wait for
// response headers. Wrap or adjust what it returns (the outbound policy's
// dialer) rather than building another.
func NewTransport(d *net.Dialer, responseTimeout time.Duration, maxPerExecutor int) *http.Transport {
	if maxPerExecutor <= 0 {
		maxPerExecutor = DefaultMaxConnsPerExecutor
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = d.DialContext
	tr.MaxConnsPerHost = maxPerExecutor
	tr.MaxIdleConnsPerHost = maxPerExecutor
	tr.MaxIdleConns = 0 // no limit across executors: each has its own bound
	tr.IdleConnTimeout = idleConnTimeout
	tr.ResponseHeaderTimeout = responseTimeout
	tr.DisableCompression = true // trigger answers are tiny; gzip only costs CPU
	return tr
}

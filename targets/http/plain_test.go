package httptarget_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/egress"
	"github.com/ringjob/ringjob/targets"
	httptarget "github.com/ringjob/ringjob/targets/http"
)

// rawServer accepts TCP connections and, for every request it reads,
// records the request's bytes and writes the next answer of answers (the
// last one repeats). closeAfter: close each connection after its first
// answer, without saying so.
type rawServer struct {
	ln         net.Listener
	answers    []string
	closeAfter bool

	mu       sync.Mutex
	requests [][]byte
	conns    int
	open     []net.Conn
}

func startRawServer(t *testing.T, closeAfter bool, answers ...string) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &rawServer{ln: ln, answers: answers, closeAfter: closeAfter}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		s.mu.Lock()
		for _, c := range s.open {
			_ = c.Close() // the client keeps its connections open
		}
		s.mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			s.open = append(s.open, c)
			s.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				s.serve(c)
			}()
		}
	}()
	return s
}

// serve reads requests with a Content-Length body (what both clients send).
func (s *rawServer) serve(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		var req []byte
		length := 0
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			req = append(req, line...)
			if line == "\r\n" {
				break
			}
			if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, append(req, body...))
		ans := s.answers[min(len(s.requests), len(s.answers))-1]
		s.mu.Unlock()
		if _, err := c.Write([]byte(ans)); err != nil || s.closeAfter {
			return
		}
	}
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() }

func (s *rawServer) lastRequest() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.requests[len(s.requests)-1])
}

func (s *rawServer) connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

const okAnswer = "HTTP/1.1 200 OK\r\nContent-Type: text/html;charset=UTF-8\r\nContent-Length: 23\r\n\r\n{\"code\":200,\"msg\":null}"

// The driver's own client writes the bytes net/http writes for the same
// request: triggers (2.x and 3.5), beats, kills, log reads, with and
// without a token and app name, at the root and under a context path.
func TestPlainRequestBytes(t *testing.T) {
	t.Parallel()
	srv := startRawServer(t, false, okAnswer)
	// net/http, as the driver configures it (no compression).
	viaNetHTTP := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	type call struct {
		name string
		do   func(d *httptarget.Driver, target string) error
	}
	ctx := context.Background()
	calls := []call{
		{"run", func(d *httptarget.Driver, target string) error {
			_, err := d.Run(ctx, targets.Request{Target: target, RunID: 12345, JobID: 77, Handler: "demo<&>Handler", Params: "a=\"1\"\nb=ü",
				BlockStrategy: "SERIAL_EXECUTION", Timeout: 30 * time.Second, ScheduledAt: time.UnixMilli(1_700_000_000_123), ShardIndex: 2, ShardTotal: 5})
			return err
		}},
		{"beat", func(d *httptarget.Driver, target string) error { return d.Beat(ctx, target) }},
		{"idleBeat", func(d *httptarget.Driver, target string) error { return d.IdleBeat(ctx, target, 9) }},
		{"kill", func(d *httptarget.Driver, target string) error { return d.Kill(ctx, target, 1, 9) }},
		{"log", func(d *httptarget.Driver, target string) error { _, err := d.Log(ctx, target, 5, 3); return err }},
	}
	auths := map[string]httptarget.Auth{
		"token only":   {},
		"3.5 with app": {AppName: "my-app", AccessToken: "group-token", Protocol35: true},
		"no token":     {AccessToken: ""},
	}
	for authName, auth := range auths {
		for _, suffix := range []string{"", "/", "/xxl-job-executor", "/ctx/path/"} {
			global := "global-token"
			if authName == "no token" {
				global = ""
			}
			authFor := func(context.Context, string, int64) (httptarget.Auth, error) { return auth, nil }
			plain := httptarget.New(httptarget.Config{AccessToken: global, AuthFor: authFor})
			netHTTP := httptarget.New(httptarget.Config{AccessToken: global, AuthFor: authFor, Client: viaNetHTTP})
			target := srv.url() + suffix
			for _, c := range calls {
				require.NoError(t, c.do(netHTTP, target), "%s %s %s via net/http", authName, suffix, c.name)
				want := srv.lastRequest()
				require.NoError(t, c.do(plain, target), "%s %s %s", authName, suffix, c.name)
				require.Equal(t, want, srv.lastRequest(), "%s, target %q, %s: the same bytes as net/http", authName, target, c.name)
			}
		}
	}
}

// The client reads every shape of answer an executor may give: by length,
// chunked (with a trailer), up to the end of the connection, after an
// interim 100, HTTP/1.0, and keeps the connection only when it may.
func TestPlainAnswers(t *testing.T) {
	t.Parallel()
	body := `{"code":200,"msg":null}`
	cases := map[string]struct {
		answer    string
		reuses    bool
		wantError string
	}{
		"content length": {answer: okAnswer, reuses: true},
		"chunked": {answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"cod\r\n12\r\ne\":200,\"msg\":null}\r\n0\r\nX-Trailer: 1\r\n\r\n",
			reuses: true},
		"lowercase headers, extra spaces": {answer: "HTTP/1.1 200 OK\r\ncontent-length:   23  \r\nconnection: keep-alive\r\n\r\n" + body, reuses: true},
		"connection close":                {answer: "HTTP/1.1 200 OK\r\nContent-Length: 23\r\nConnection: close\r\n\r\n" + body},
		"interim 100 first":               {answer: "HTTP/1.1 100 Continue\r\n\r\n" + okAnswer, reuses: true},
		"HTTP/1.0":                        {answer: "HTTP/1.0 200 OK\r\nContent-Length: 23\r\n\r\n" + body},
		"HTTP/1.0 keep-alive":             {answer: "HTTP/1.0 200 OK\r\nContent-Length: 23\r\nConnection: Keep-Alive\r\n\r\n" + body, reuses: true},
		"refused token": {answer: "HTTP/1.1 200 OK\r\nContent-Length: 47\r\n\r\n{\"code\":500,\"msg\":\"The access token is wrong.\"}",
			reuses: true, wantError: "The access token is wrong."},
		"redirect":     {answer: "HTTP/1.1 302 Found\r\nLocation: http://elsewhere/run\r\nContent-Length: 0\r\n\r\n", reuses: true, wantError: `redirect to "http://elsewhere/run"`},
		"server error": {answer: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy", reuses: true, wantError: "HTTP 503: busy"},
		"not JSON":     {answer: "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n<html>", reuses: true, wantError: "not XXL-JOB JSON"},
		"garbage":      {answer: "SSH-2.0-OpenSSH\r\n\r\n", wantError: "malformed HTTP response"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := startRawServer(t, false, tc.answer)
			d := httptarget.New(httptarget.Config{AccessToken: "tok", RequestTimeout: 5 * time.Second})
			for range 3 {
				err := d.Beat(context.Background(), srv.url())
				if tc.wantError != "" {
					require.ErrorContains(t, err, tc.wantError)
				} else {
					require.NoError(t, err)
				}
			}
			if tc.reuses {
				require.Equal(t, 1, srv.connections(), "three requests over one keep-alive connection")
			} else {
				require.Equal(t, 3, srv.connections(), "a connection the executor does not keep is not used again")
			}
		})
	}
	t.Run("no length: the body ends with the connection", func(t *testing.T) {
		t.Parallel()
		srv := startRawServer(t, true, "HTTP/1.1 200 OK\r\n\r\n"+body)
		d := httptarget.New(httptarget.Config{})
		for range 2 {
			require.NoError(t, d.Beat(context.Background(), srv.url()))
		}
		require.Equal(t, 2, srv.connections())
	})
}

// An executor that closes idle connections without saying so (its idle
// timeout, a restart) costs no failed dispatch: the closed connection is
// noticed before it is used.
func TestPlainClosedIdleConnection(t *testing.T) {
	t.Parallel()
	srv := startRawServer(t, true, okAnswer)
	d := httptarget.New(httptarget.Config{})
	for i := range 5 {
		require.NoError(t, d.Beat(context.Background(), srv.url()), "request %d", i)
		// The server's close reaches the client before the next request.
		require.Eventually(t, func() bool { return srv.connections() == i+1 }, 5*time.Second, time.Millisecond)
		time.Sleep(5 * time.Millisecond)
	}
	require.Equal(t, 5, srv.connections())
}

// A cancelled request ends at once, and a request to an executor that does
// not answer ends at the request timeout.
func TestPlainTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() { // accepts, reads, never answers
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	target := "http://" + ln.Addr().String()
	d := httptarget.New(httptarget.Config{RequestTimeout: 300 * time.Millisecond})
	start := time.Now()
	err = d.Beat(context.Background(), target)
	require.Error(t, err)
	require.Less(t, time.Since(start), 2*time.Second)

	slow := httptarget.New(httptarget.Config{RequestTimeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	err = slow.Beat(ctx, target)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), 5*time.Second)
}

// The outbound policy applies to the driver's own connections as it does
// to net/http's.
func TestPlainPolicy(t *testing.T) {
	t.Parallel()
	srv := startRawServer(t, false, okAnswer)
	p, err := egress.New(egress.Config{DeniedCIDRs: []string{"127.0.0.0/8"}}, "")
	require.NoError(t, err)
	d := httptarget.New(httptarget.Config{Policy: p})
	err = d.Beat(context.Background(), srv.url())
	require.Error(t, err)
	require.True(t, errors.Is(err, egress.ErrDenied), fmt.Sprint(err))
	require.Equal(t, 0, srv.connections())
}

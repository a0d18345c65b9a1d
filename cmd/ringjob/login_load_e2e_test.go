package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
)

// loginAs posts a password login as if from client (the server trusts
// 127.0.0.1 as its proxy, so X-Forwarded-For names the client).
func loginAs(c *http.Client, base, user, password, client string) (int, error) {
	code, _, err := loginAnswer(c, base, user, password, client)
	return code, err
}

// loginAnswer is loginAs with the answer's body.
func loginAnswer(c *http.Client, base, user, password, client string) (int, string, error) {
	body, _ := json.Marshal(map[string]string{"username": user, "password": password})
	req, err := http.NewRequest("POST", base+"/api/v1/session", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", client)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String(), err
}

// procStatusKiB reads a field (VmRSS, VmHWM) of /proc/PID/status in KiB.
func procStatusKiB(t *testing.T, pid int, field string) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestLoginUnderAttack is the login path's load test (make test-login-load):
// 200 clients send wrong passwords without pause for a while against a real
// server with production argon2id costs (64 MiB per check): half against a
// real user's name from one address, half against unknown names from 100
// addresses. The server's peak RSS stays under 300 MB, its other endpoints
// keep answering, and the real user signs in from their own address during
// the attack.
func TestLoginUnderAttack(t *testing.T) {
	if os.Getenv("RINGJOB_LOGIN_LOAD") == "" {
		t.Skip("load test: run with RINGJOB_LOGIN_LOAD=1 (make test-login-load)")
	}
	for _, dbKind := range []string{"sqlite", "mysql"} {
		t.Run(dbKind, func(t *testing.T) {
			dbURL := "sqlite://" + dbtest.SQLitePath(t)
			if dbKind == "mysql" {
				dbURL = mysqlURL(t, dbtest.MySQL(t))
			}
			testLoginUnderAttack(t, startServerWith(t, dbURL, isoAdminToken, freePort(t), "api: {trusted_proxies: [127.0.0.1/32]}\n"))
		})
	}
}

func testLoginUnderAttack(t *testing.T, s *server) {
	const (
		attackers   = 200
		attackFor   = 12 * time.Second
		rssLimitKiB = 300 * 1024
		password    = "the real password of alice"
	)
	pid := s.cmd.Process.Pid
	code, out := s.call("POST", "/api/v1/users", map[string]any{"name": "alice", "password": password}, nil)
	require.Equal(t, 201, code, "%v", out)
	before := procStatusKiB(t, pid, "VmRSS")

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: attackers + 10}, Timeout: 30 * time.Second}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var statuses sync.Map // status -> *atomic.Int64
	count := func(code int) {
		v, _ := statuses.LoadOrStore(code, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	for i := 0; i < attackers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user, from := "alice", "203.0.113.7"
			if i%2 == 1 {
				user, from = fmt.Sprintf("nobody-%d", i), fmt.Sprintf("198.18.%d.%d", i/250, i%250)
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, err := loginAs(client, s.base, user, "a wrong password, again", from)
				if err != nil {
					code = -1
				}
				count(code)
			}
		}()
	}

	// During the attack: the other endpoints answer, and alice signs in
	// from her own address (trying again after a 503 once Retry-After, 1 s,
	// has passed).
	deadline := time.Now().Add(attackFor)
	var maxRSS int
	var slowest time.Duration
	signedIn := time.Duration(-1)
	start := time.Now()
	nextTry := start // alice honours Retry-After, as a browser client does
	for time.Now().Before(deadline) {
		maxRSS = max(maxRSS, procStatusKiB(t, pid, "VmRSS"))
		for _, path := range []string{"/readyz", "/api/v1/jobs"} {
			t0 := time.Now()
			code, _ := s.call("GET", path, nil, nil)
			slowest = max(slowest, time.Since(t0))
			require.Equal(t, 200, code, "%s during the attack", path)
		}
		if signedIn < 0 && !time.Now().Before(nextTry) {
			nextTry = time.Now().Add(time.Second)
			code, body, err := loginAnswer(client, s.base, "alice", password, "192.0.2.44")
			require.NoError(t, err)
			switch code {
			case 201:
				signedIn = time.Since(start)
			case 503:
			default:
				t.Fatalf("alice from her own address got %d during the attack: %s", code, body)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	peak := procStatusKiB(t, pid, "VmHWM")
	summary := map[int]int64{}
	statuses.Range(func(k, v any) bool { summary[k.(int)] = v.(*atomic.Int64).Load(); return true })
	t.Logf("RSS before %d MiB, max sampled %d MiB, peak (VmHWM) %d MiB; slowest other request %s; alice signed in after %s; attack answers %v",
		before/1024, maxRSS/1024, peak/1024, slowest.Round(time.Millisecond), signedIn.Round(time.Millisecond), summary)
	require.Less(t, peak, rssLimitKiB, "the server's peak RSS stays under 300 MB")
	require.GreaterOrEqual(t, signedIn, time.Duration(0), "alice signed in during the attack")
	require.Zero(t, summary[-1], "no attack request failed at the connection")
	require.Zero(t, summary[500], "no 500s")
	require.Zero(t, summary[201], "no attacker signed in")
	require.Less(t, slowest, 5*time.Second)
}

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readmeBlock returns the first ```sh block after the heading in README.md.
func readmeBlock(t *testing.T, readme, heading string) string {
	t.Helper()
	i := strings.Index(readme, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "README.md has the heading %q", heading)
	rest := readme[i:]
	start := strings.Index(rest, "```sh\n")
	require.GreaterOrEqual(t, start, 0, "a sh block follows %q", heading)
	rest = rest[start+len("```sh\n"):]
	end := strings.Index(rest, "\n```")
	require.GreaterOrEqual(t, end, 0)
	return rest[:end]
}

// commandLines splits a shell block into its commands: continuation lines
// joined, comments kept apart (the comment above a command says what it is).
func commandLines(block string) (cmds, comments []string) {
	var cur, comment string
	for _, line := range strings.Split(block, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == "" && strings.HasPrefix(trimmed, "#"):
			comment = trimmed
			continue
		case cur == "" && trimmed == "":
			continue
		}
		cur += line + "\n"
		if strings.HasSuffix(trimmed, "\\") || openQuote(cur) {
			continue // the command goes on (a line end, or inside quotes)
		}
		cmds, comments = append(cmds, cur), append(comments, comment)
		cur = ""
	}
	return cmds, comments
}

// openQuote reports whether a shell command ends inside single quotes; a
// comment (a # after a blank, outside quotes) is not read, so an apostrophe
// in it ("# the job's log") does not open a quote.
func openQuote(cmd string) bool {
	in := false
	for i, r := range cmd {
		switch {
		case r == '\'':
			in = !in
		case r == '#' && !in && (i == 0 || cmd[i-1] == ' ' || cmd[i-1] == '\t'):
			// skip to the end of the line
			end := strings.IndexByte(cmd[i:], '\n')
			if end < 0 {
				return false
			}
			return openQuote(cmd[i+end+1:])
		}
	}
	return in
}

// TestReadmeQuickStart follows README.md's quick start as a new user does,
// reading the commands from README.md itself so they cannot go stale: the
// server as `make run` starts it (the sample config, SQLite, the sample
// function), on another port the way the README says to change it; then
// every command of "Create and trigger a job with curl" and of "The
// `ringjob` command line". What a reader fills in is filled in: the URL of
// that port, the token the server printed, a run id, and bin/ringjob. Only
// the commands that need a person (an editor) or a particular run are
// left out, by their comment or placeholder.
func TestReadmeQuickStart(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("SKIPPED: curl is not installed, and the README's quick start uses it")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("SKIPPED: python3 is not installed, and the README's quick start uses it")
	}
	raw, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	readme := string(raw)
	require.Contains(t, readme, "RINGJOB_LISTEN=127.0.0.1:9090 make run", "the README says how to change the port")

	// What `make run` builds, in a fresh directory (no data yet).
	work := t.TempDir()
	bin := filepath.Join(work, "bin")
	require.NoError(t, os.MkdirAll(filepath.Join(bin, "functions", "hello"), 0o755))
	out, err := exec.Command("cp", ringjobBinary(t), filepath.Join(bin, "ringjob")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", filepath.Join(bin, "functions", "hello", "bootstrap"), "../../functions/examples/hello")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err = build.CombinedOutput()
	require.NoError(t, err, "build the sample function: %s", out)
	cfg, err := filepath.Abs("../../configs/ringjob.sample.yaml")
	require.NoError(t, err)
	// The sample workflow, where a clone has it (the README creates it).
	require.NoError(t, os.MkdirAll(filepath.Join(work, "configs"), 0o755))
	out, err = exec.Command("cp", "../../configs/workflow.sample.yaml", filepath.Join(work, "configs")).CombinedOutput()
	require.NoError(t, err, "%s", out)

	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	srv := exec.Command(filepath.Join(bin, "ringjob"), "server", "--config", cfg)
	srv.Dir = work
	srv.Env = append(os.Environ(), fmt.Sprintf("RINGJOB_LISTEN=127.0.0.1:%d", port))
	var mu sync.Mutex
	var banner bytes.Buffer
	stdout, err := srv.StdoutPipe()
	require.NoError(t, err)
	srv.Stderr = nil
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			mu.Lock()
			banner.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
	}()
	var token string
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		m := regexp.MustCompile(`(?m)^\s+(rj_\S+)\s*$`).FindStringSubmatch(banner.String())
		if m != nil && strings.Contains(banner.String(), "First sign-in") {
			token = m[1]
		}
		return token != ""
	}, 60*time.Second, 50*time.Millisecond, "the banner prints a token: %s", banner.String())
	mu.Lock()
	require.Contains(t, banner.String(), "Console: "+base+"/", "the banner follows RINGJOB_LISTEN")
	mu.Unlock()
	// A run to name where the README says RUN_ID (the sample job fires every 5 s).
	require.Eventually(t, func() bool {
		req, _ := http.NewRequest("GET", base+"/api/v1/runs/1", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, 30*time.Second, 100*time.Millisecond)

	fill := func(s string) string {
		s = strings.ReplaceAll(s, "http://127.0.0.1:8080", base)
		s = strings.ReplaceAll(s, "TOKEN=rj_...", "TOKEN="+token)
		s = strings.ReplaceAll(s, "RUN_ID", "1")
		return strings.ReplaceAll(s, "bin/ringjob", filepath.Join(bin, "ringjob"))
	}
	env := []string{"HOME=" + work, "XDG_CONFIG_HOME=" + filepath.Join(work, "config"), "PATH=" + os.Getenv("PATH")}

	// The curl block, as one script: later commands use the variables of
	// earlier ones.
	curlBlock := readmeBlock(t, readme, "### Create and trigger a job with curl")
	sh := exec.Command("bash", "-euo", "pipefail", "-c", fill(curlBlock))
	sh.Dir, sh.Env = work, env
	out, err = sh.CombinedOutput()
	require.NoError(t, err, "the curl quick start:\n%s", out)
	got := string(out)
	for _, want := range []string{`"app_name":"samples"`, `"items":[`, `"name":"my-first-job"`, `"trigger_type":"manual"`,
		`"description":"edited with curl"`, `"params":"manual run"`, `"content":`} {
		require.Contains(t, got, want, "the curl quick start shows %s:\n%s", want, got)
	}
	require.NotContains(t, got, `"code":"`, "no command of the curl quick start is refused:\n%s", got)

	// The CLI block, one command at a time: each must succeed.
	cmds, _ := commandLines(readmeBlock(t, readme, "### The `ringjob` command line"))
	require.Greater(t, len(cmds), 10)
	ran := 0
	for _, c := range cmds {
		if strings.Contains(c, "$EDITOR") || strings.Contains(c, "RUN_ID") {
			continue // an editor (a person), or a particular running run
		}
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", fill(c))
		cmd.Dir = work
		cmd.Env = append(append([]string{}, env...), "TOKEN="+token)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "README: %s\n%s", strings.TrimSpace(c), out)
		ran++
	}
	require.GreaterOrEqual(t, ran, len(cmds)-4, "all but the commands for a person ran")
}

// A README command goes on while a single quote is open; an apostrophe in
// a comment opens none.
func TestOpenQuote(t *testing.T) {
	for cmd, open := range map[string]bool{
		"bin/ringjob runs logs 1 --follow   # the job's log\n": false,
		"curl -d '{\"a\":\n":                            true,
		"curl -d '{\"a\": 1}' # it's sent\n":            false,
		"echo 'a # b'\n":                                false,
		"echo 'it''s'   # a comment's quote\necho 'x\n": true,
	} {
		require.Equal(t, open, openQuote(cmd), "%q", cmd)
	}
}

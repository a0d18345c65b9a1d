package main

import (
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLoginPromptHidesTheToken types a token at login's prompt on a real
// terminal (util-linux script(1) gives the command a pseudo-terminal) and
// checks that the terminal never shows it.
func TestLoginPromptHidesTheToken(t *testing.T) {
	t.Parallel()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) from util-linux is not installed")
	}
	bin := ringjobBinary(t)
	const secret = "rj_typed-at-the-prompt-0123456789"
	cmd := exec.Command(scriptBin, "-qc", bin+" login http://127.0.0.1:1 --name tty", "/dev/null")
	cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir(), "RINGJOB_TOKEN=", "XDG_CONFIG_HOME="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	// Type once the prompt is up: what a pseudo-terminal receives before
	// echo is turned off is echoed by the terminal itself, as it would be
	// for a user who types ahead.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "API token for") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	_, err = stdin.Write([]byte(secret + "\n"))
	require.NoError(t, err)
	_ = cmd.Wait()
	require.Contains(t, out.String(), "API token for http://127.0.0.1:1: ")
	require.Contains(t, out.String(), "cannot reach the server", "the token was read and used")
	require.NotContains(t, out.String(), secret, "the terminal showed the token")
}

// lockedBuffer collects a command's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

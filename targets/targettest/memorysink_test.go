package targettest

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMemorySink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("first outcome wins and every call is counted", func(t *testing.T) {
		t.Parallel()
		s := NewMemorySink()
		if _, ok := s.Outcome(1); ok {
			t.Fatal("outcome before Complete")
		}
		_ = s.Complete(ctx, 1, targets.Outcome{State: kind.RunSucceeded, Code: 200})
		_ = s.Complete(ctx, 1, targets.Outcome{State: kind.RunFailed, Code: 500})
		out, ok := s.Outcome(1)
		if !ok || out.State != kind.RunSucceeded {
			t.Fatalf("Outcome = %+v, %v; want the first (succeeded)", out, ok)
		}
		if n := s.Completions(1); n != 2 {
			t.Fatalf("Completions = %d, want 2", n)
		}
	})

	t.Run("log is read by 1-based line", func(t *testing.T) {
		t.Parallel()
		s := NewMemorySink()
		_ = s.AppendLog(ctx, 7, "one\ntwo\n")
		_ = s.AppendLog(ctx, 7, "three")
		_ = s.AppendLog(ctx, 7, "")
		_ = s.AppendLog(ctx, 7, "\n")
		tests := []struct {
			from    int
			content string
			fromL   int
			to      int
		}{
			{0, "one\ntwo\nthree\n\n", 1, 4},
			{1, "one\ntwo\nthree\n\n", 1, 4},
			{3, "three\n\n", 3, 4},
			{5, "", 5, 0},
		}
		for _, tc := range tests {
			c, err := s.ReadLog(ctx, 7, tc.from)
			if err != nil {
				t.Fatal(err)
			}
			if c.Content != tc.content || c.FromLine != tc.fromL || c.ToLine != tc.to || c.End {
				t.Fatalf("ReadLog(from %d) = %+v, want content %q lines %d..%d, End false", tc.from, c, tc.content, tc.fromL, tc.to)
			}
		}
		_ = s.Complete(ctx, 7, targets.Outcome{State: kind.RunSucceeded})
		if c, _ := s.ReadLog(ctx, 7, 5); !c.End {
			t.Fatalf("ReadLog after Complete: End = false")
		}
		if c, _ := s.ReadLog(ctx, 8, 1); c.Content != "" || c.ToLine != 0 {
			t.Fatalf("ReadLog of unknown run = %+v, want empty", c)
		}
	})

	t.Run("waits wake on changes", func(t *testing.T) {
		t.Parallel()
		s := NewMemorySink()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = s.AppendLog(ctx, 3, "ready")
			_ = s.Complete(ctx, 3, targets.Outcome{State: kind.RunKilled})
		}()
		lines := s.WaitLog(t, 3, 10*time.Second, func(l []string) bool { return len(l) > 0 })
		if lines[0] != "ready" {
			t.Fatalf("WaitLog = %q", lines)
		}
		if out := s.WaitOutcome(t, 3, 10*time.Second); out.State != kind.RunKilled {
			t.Fatalf("WaitOutcome = %+v", out)
		}
		<-done
	})

	t.Run("wait reports a timeout", func(t *testing.T) {
		t.Parallel()
		s := NewMemorySink()
		if s.wait(time.Millisecond, func() bool { return false }) {
			t.Fatal("wait returned true for a condition never met")
		}
	})
}

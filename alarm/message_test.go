package alarm

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
)

func TestSubject(t *testing.T) {
	t.Parallel()
	require.Equal(t, "[Ringjob] job billing-close failed", Subject(failureEvent()))
	require.Equal(t, "[Ringjob] job billing-close recovered", Subject(recoveryEvent()))

	t.Run("a job without a name is named by id", func(t *testing.T) {
		ev := failureEvent()
		ev.JobName = ""
		require.Equal(t, "[Ringjob] job #42 failed", Subject(ev))
	})
	t.Run("line breaks in a name cannot forge headers", func(t *testing.T) {
		ev := failureEvent()
		ev.JobName = "evil\r\nBcc: victim@example.com"
		require.Equal(t, "[Ringjob] job evil Bcc: victim@example.com failed", Subject(ev))
	})
}

func TestPlainText(t *testing.T) {
	t.Parallel()
	want := `Ringjob job billing-close failed: run #9001 ended in state failed.

Group:         billing
Job:           #42 billing-close
Run:           #9001
State:         failed
Code:          500
Attempt:       4
Scheduled at:  2026-03-29T02:00:00+02:00
Finished at:   2026-03-29T02:10:00+02:00
Link:          https://ringjob.example.com/runs/9001

Message:
shard 17: upstream ledger returned 503
`
	require.Equal(t, want, PlainText(failureEvent(), MaxMessageRunes))

	t.Run("recovery", func(t *testing.T) {
		got := PlainText(recoveryEvent(), MaxMessageRunes)
		require.Equal(t, "Ringjob job billing-close recovered: run #9101 succeeded after a failure.", lines(got)[0])
		require.Contains(t, got, "State:         succeeded\n")
	})
	t.Run("unknown fields are left out", func(t *testing.T) {
		got := PlainText(Event{Kind: kind.AlarmFailure, JobID: 7, RunID: 8}, MaxMessageRunes)
		require.Equal(t, []string{"Ringjob job #7 failed: run #8 ended in state -.", "", "Job:  #7", "Run:  #8"}, lines(got))
	})
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"long", "abcdefgh", 5, "abcde… (3 more characters)"},
		{"runes, not bytes", "日本語のメッセージ", 3, "日本語… (6 more characters)"},
		{"invalid UTF-8 repaired", "a\xffb", 5, "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, truncate(tt.in, tt.max))
		})
	}

	t.Run("bytes on a rune boundary", func(t *testing.T) {
		got := truncateBytes(strings.Repeat("界", 2000), 4096)
		require.LessOrEqual(t, len(got), 4096)
		require.True(t, utf8.ValidString(got))
		require.True(t, strings.HasSuffix(got, "…"))
	})
	t.Run("a long run message is cut in every rendering", func(t *testing.T) {
		ev := failureEvent()
		ev.Message = strings.Repeat("x", 20000)
		require.Contains(t, PlainText(ev, MaxMessageRunes), "… (16000 more characters)")
		require.Contains(t, slackText(ev), "… (19200 more characters)")
		require.Contains(t, markdown(ev, "failed"), "… (19200 more characters)")
		require.Len(t, NewWebhookPayload(ev).Message, MaxMessageRunes+len("… (16000 more characters)"))
	})
}

func TestSlackTextEscapes(t *testing.T) {
	t.Parallel()
	ev := failureEvent()
	ev.JobName = "a<b>&c"
	ev.Message = "<!channel> ```boom```"
	got := slackText(ev)
	require.Contains(t, got, "*[Ringjob] job a&lt;b&gt;&amp;c failed*")
	require.Contains(t, got, "```&lt;!channel&gt; '''boom'''```")
}

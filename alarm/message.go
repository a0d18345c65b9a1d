package alarm

import (
	"fmt"
	"html"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ringjob/ringjob/internal/kind"
)

// How much of a run's message an alarm carries. A run message can be long
// (XXL-JOB keeps up to 15 000 characters); an alarm shows its head and says
// how much was cut, and the link leads to the whole log.
const (
	// MaxMessageRunes bounds the message in e-mails and generic webhooks.
	MaxMessageRunes = 4000
	// MaxChatMessageRunes bounds the message in chat channels (Slack,
	// DingTalk, WeCom, Feishu), whose robots reject or fold long posts
	// (WeCom: 4096 bytes per markdown message).
	MaxChatMessageRunes = 800
)

// truncate cuts s to max runes (invalid UTF-8 replaced) and says how much
// was left out.
func truncate(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s
	}
	cut := 0
	for i := range s {
		if cut == max {
			return fmt.Sprintf("%s… (%d more characters)", s[:i], n-max)
		}
		cut++
	}
	return s
}

// truncateBytes cuts s to at most max bytes on a rune boundary.
func truncateBytes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ell = "…"
	end := max - len(ell)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + ell
}

// oneLine folds line breaks so a value cannot forge extra lines or headers.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
}

// jobLabel names the job: its name, or #id when it has none.
func jobLabel(ev Event) string {
	if name := oneLine(ev.JobName); name != "" {
		return name
	}
	return "#" + strconv.FormatInt(ev.JobID, 10)
}

// verb is "failed", "recovered" or "test".
func verb(ev Event) string {
	switch ev.Kind {
	case kind.AlarmRecovery:
		return "recovered"
	case kind.AlarmTest:
		return "test"
	}
	return "failed"
}

// Subject is the one-line title of an alarm: "[Ringjob] job NAME failed",
// "[Ringjob] job NAME recovered", or "[Ringjob] TEST alarm (no job failed)".
// Every message contains it, so a DingTalk robot with the keyword "Ringjob"
// accepts them.
func Subject(ev Event) string {
	if ev.Kind == kind.AlarmTest {
		return "[Ringjob] TEST alarm (no job failed)"
	}
	return "[Ringjob] job " + jobLabel(ev) + " " + verb(ev)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339)
}

type field struct{ label, value string }

// fields lists what an alarm tells about the run, leaving out what is unknown.
func fields(ev Event) []field {
	var fs []field
	add := func(label, value string) {
		if value = oneLine(value); value != "" {
			fs = append(fs, field{label, value})
		}
	}
	if ev.Kind == kind.AlarmTest {
		add("Sent at", fmtTime(ev.FinishedAt))
		return fs
	}
	add("Group", ev.GroupName)
	job := "#" + strconv.FormatInt(ev.JobID, 10)
	if name := oneLine(ev.JobName); name != "" {
		job += " " + name
	}
	add("Job", job)
	if ev.RunID != 0 {
		add("Run", "#"+strconv.FormatInt(ev.RunID, 10))
	}
	add("State", string(ev.State))
	if ev.Code != 0 {
		add("Code", strconv.Itoa(ev.Code))
	}
	if ev.Attempt != 0 {
		add("Attempt", strconv.Itoa(ev.Attempt))
	}
	add("Scheduled at", fmtTime(ev.ScheduledAt))
	add("Finished at", fmtTime(ev.FinishedAt))
	return fs
}

// headline is the first sentence of every alarm.
func headline(ev Event) string {
	switch ev.Kind {
	case kind.AlarmTest:
		return "Ringjob TEST alarm: no job failed."
	case kind.AlarmRecovery:
		return fmt.Sprintf("Ringjob job %s recovered: run #%d succeeded after a failure.", jobLabel(ev), ev.RunID)
	}
	return fmt.Sprintf("Ringjob job %s failed: run #%d ended in state %s.", jobLabel(ev), ev.RunID, orDash(oneLine(string(ev.State))))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// PlainText renders an alarm as plain text (e-mail body, Feishu text
// message), with at most maxMessage runes of the run's message.
func PlainText(ev Event, maxMessage int) string {
	var b strings.Builder
	b.WriteString(headline(ev))
	b.WriteString("\n\n")
	fs := fields(ev)
	if link := strings.TrimSpace(ev.ConsoleURL); link != "" {
		fs = append(fs, field{"Link", oneLine(link)})
	}
	width := 0
	for _, f := range fs {
		width = max(width, len(f.label))
	}
	for _, f := range fs {
		fmt.Fprintf(&b, "%-*s  %s\n", width+1, f.label+":", f.value)
	}
	if msg := strings.TrimSpace(ev.Message); msg != "" {
		b.WriteString("\nMessage:\n")
		b.WriteString(truncate(msg, maxMessage))
		b.WriteString("\n")
	}
	return b.String()
}

// htmlBody renders an alarm as a small HTML document (the e-mail
// alternative), a table as XXL-JOB's alarm e-mail has.
func htmlBody(ev Event, maxMessage int) string {
	var b strings.Builder
	esc := html.EscapeString
	b.WriteString("<!DOCTYPE html>\n<html><body style=\"font-family:sans-serif\">\n")
	fmt.Fprintf(&b, "<p>%s</p>\n<table cellpadding=\"4\" style=\"border-collapse:collapse\">\n", esc(headline(ev)))
	for _, f := range fields(ev) {
		fmt.Fprintf(&b, "<tr><th align=\"left\">%s</th><td>%s</td></tr>\n", esc(f.label), esc(f.value))
	}
	if link := strings.TrimSpace(ev.ConsoleURL); link != "" {
		fmt.Fprintf(&b, "<tr><th align=\"left\">Link</th><td><a href=\"%s\">%s</a></td></tr>\n", esc(link), esc(link))
	}
	b.WriteString("</table>\n")
	if msg := strings.TrimSpace(ev.Message); msg != "" {
		fmt.Fprintf(&b, "<p><b>Message</b></p>\n<pre style=\"white-space:pre-wrap\">%s</pre>\n", esc(truncate(msg, maxMessage)))
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// markdown renders an alarm in the markdown subset that DingTalk and WeCom
// robots render: a heading, one bold label per line, the message as a
// quote, and a link to the run.
func markdown(ev Event, status string) string {
	var b strings.Builder
	if ev.Kind == kind.AlarmTest {
		fmt.Fprintf(&b, "### %s\n\n", Subject(ev))
	} else {
		fmt.Fprintf(&b, "### [Ringjob] job %s %s\n\n", jobLabel(ev), status)
	}
	for _, f := range fields(ev) {
		fmt.Fprintf(&b, "**%s:** %s  \n", f.label, f.value)
	}
	if msg := strings.TrimSpace(ev.Message); msg != "" {
		b.WriteString("\n")
		for _, line := range strings.Split(truncate(msg, MaxChatMessageRunes), "\n") {
			fmt.Fprintf(&b, "> %s\n", strings.TrimRight(line, "\r"))
		}
	}
	if link := oneLine(ev.ConsoleURL); link != "" {
		fmt.Fprintf(&b, "\n[Open run #%d](%s)\n", ev.RunID, link)
	}
	return b.String()
}

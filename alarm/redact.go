package alarm

import (
	"errors"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Secrets shorter than this are hidden completely by Redact; longer ones keep
// their last revealRunes characters so an operator can tell them apart.
const (
	minRevealRunes = 16
	revealRunes    = 4
)

// Redact returns a form of a secret that is safe to show: for a URL its
// scheme and host and the last 4 characters ("https://hooks.slack.com/…abcd"),
// for anything else the last 4 characters ("…abcd"). Secrets shorter than 16
// characters show nothing of themselves ("***"). Redact("") is "".
func Redact(s string) string {
	if s == "" {
		return ""
	}
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
		rest := strings.TrimPrefix(s, u.Scheme+"://")
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			rest = rest[i:]
		} else {
			rest = ""
		}
		return u.Scheme + "://" + u.Host + "/…" + tail(rest)
	}
	if t := tail(s); t != "" {
		return "…" + t
	}
	return "***"
}

// tail is the last revealRunes runes of s, or "" when s is too short to
// reveal any of it.
func tail(s string) string {
	n := utf8.RuneCountInString(s)
	if n < minRevealRunes {
		return ""
	}
	r := []rune(s)
	return string(r[n-revealRunes:])
}

// scrubber removes secrets from text meant for errors and logs.
type scrubber struct{ secrets []string }

// newScrubber collects the secrets to remove. A URL counts as a secret, and
// so do its password, its query values and its longer path segments, where
// webhook tokens live (Slack's path, DingTalk's access_token, WeCom's key,
// Feishu's hook id).
func newScrubber(urls []string, secrets ...string) scrubber {
	var all []string
	add := func(s string) {
		if len(s) >= 4 {
			all = append(all, s)
		}
	}
	for _, raw := range urls {
		if raw == "" {
			continue
		}
		add(raw)
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		add(u.RawQuery)
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
			}
		}
		for _, seg := range strings.Split(u.EscapedPath(), "/") {
			if len(seg) >= 8 {
				add(seg)
				if un, err := url.PathUnescape(seg); err == nil && un != seg {
					add(un)
				}
			}
		}
	}
	for _, s := range secrets {
		add(s)
		if esc := url.QueryEscape(s); esc != s {
			add(esc)
		}
	}
	// Longest first, so a whole URL goes before the token inside it.
	sort.Slice(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
	return scrubber{secrets: all}
}

// text removes every secret from s.
func (sc scrubber) text(s string) string {
	for _, secret := range sc.secrets {
		if strings.Contains(s, secret) {
			s = strings.ReplaceAll(s, secret, Redact(secret))
		}
	}
	return s
}

// err returns err with every secret removed from its message. A *url.Error
// (whose text is the full request URL) is rebuilt around its cause, so the
// URL is not reachable through Unwrap either. Permanent marks survive.
func (sc scrubber) err(err error) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		msg := err.Error()
		msg = strings.ReplaceAll(msg, strconv.Quote(ue.URL), strconv.Quote(Redact(ue.URL)))
		msg = sc.text(strings.ReplaceAll(msg, ue.URL, Redact(ue.URL)))
		out := error(&redactedError{msg: msg, err: ue.Err})
		if IsPermanent(err) {
			out = Permanent(out)
		}
		return out
	}
	msg := sc.text(err.Error())
	if msg == err.Error() {
		return err
	}
	out := error(&redactedError{msg: msg, err: err})
	if IsPermanent(err) {
		out = Permanent(out)
	}
	return out
}

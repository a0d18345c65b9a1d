package alarm

import (
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
)

// parsedMail is a received message, decoded.
type parsedMail struct {
	Header mail.Header
	Text   string // the text/plain body
	HTML   string // the text/html alternative, if any
}

func parseMail(t *testing.T, data string) parsedMail {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(data))
	require.NoError(t, err)
	out := parsedMail{Header: msg.Header}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	require.NoError(t, err)
	decode := func(r io.Reader, cte string) string {
		require.Equal(t, "quoted-printable", cte)
		b, err := io.ReadAll(quotedprintable.NewReader(r))
		require.NoError(t, err)
		return strings.ReplaceAll(string(b), "\r\n", "\n")
	}
	if mediaType == "text/plain" {
		require.Equal(t, "utf-8", params["charset"])
		out.Text = decode(msg.Body, msg.Header.Get("Content-Transfer-Encoding"))
		return out
	}
	require.Equal(t, "multipart/alternative", mediaType)
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		// NextRawPart: the test decodes quoted-printable itself.
		p, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		body := decode(p, p.Header.Get("Content-Transfer-Encoding"))
		switch p.Header.Get("Content-Type") {
		case "text/plain; charset=utf-8":
			out.Text = body
		case "text/html; charset=utf-8":
			out.HTML = body
		default:
			t.Fatalf("unexpected part %q", p.Header.Get("Content-Type"))
		}
	}
	return out
}

func TestEmail(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(testStart)

	t.Run("sends the plain-text alarm to each recipient once", func(t *testing.T) {
		t.Parallel()
		sink := newSMTPSink(t, "")
		cfg := sink.emailConfig()
		cfg.To = []string{"oncall@example.com", "Team <team@example.com>", "ONCALL@example.com"}
		e, err := NewEmail(cfg, Deps{Clock: clock})
		require.NoError(t, err)
		require.Equal(t, "email", e.Name())
		require.Equal(t, []string{"oncall@example.com", "team@example.com"}, e.Recipients())

		require.NoError(t, e.Send(ctxT(t), failureEvent()))
		got := sink.only(t)
		require.Equal(t, "localhost", got.Helo)
		require.False(t, got.TLS)
		require.Empty(t, got.AuthUser)
		require.Equal(t, "ringjob@example.com", got.From)
		require.Equal(t, []string{"oncall@example.com", "team@example.com"}, got.To)

		m := parseMail(t, got.Data)
		require.Equal(t, "[Ringjob] job billing-close failed", m.Header.Get("Subject"))
		require.Equal(t, `"Ringjob" <ringjob@example.com>`, m.Header.Get("From"))
		require.Equal(t, "oncall@example.com, team@example.com", m.Header.Get("To"))
		date, err := m.Header.Date()
		require.NoError(t, err)
		require.True(t, date.Equal(testStart), "Date from the injected clock: %s", date)
		require.Equal(t, "auto-generated", m.Header.Get("Auto-Submitted"))
		require.Equal(t, "9001", m.Header.Get("X-Ringjob-Run-Id"))
		require.Equal(t, "failure", m.Header.Get("X-Ringjob-Event"))
		require.True(t, strings.HasSuffix(m.Header.Get("Message-Id"), "@example.com>"))
		require.Equal(t, PlainText(failureEvent(), MaxMessageRunes), m.Text)
		require.Empty(t, m.HTML)
	})

	t.Run("recovery, with an HTML alternative and an encoded subject", func(t *testing.T) {
		t.Parallel()
		sink := newSMTPSink(t, "")
		cfg := sink.emailConfig()
		cfg.HTML = true
		e, err := NewEmail(cfg, Deps{Clock: clock})
		require.NoError(t, err)
		ev := recoveryEvent()
		ev.JobName = "月末結算"
		ev.Message = "done <ok> & fine"
		require.NoError(t, e.Send(ctxT(t), ev))

		got := sink.only(t)
		require.NotContains(t, got.Data, "月末結算", "headers and body are 7-bit encoded")
		m := parseMail(t, got.Data)
		subject, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
		require.NoError(t, err)
		require.Equal(t, "[Ringjob] job 月末結算 recovered", subject)
		require.Contains(t, m.Text, "Ringjob job 月末結算 recovered: run #9101 succeeded after a failure.")
		require.Contains(t, m.HTML, "<tr><th align=\"left\">Job</th><td>#42 月末結算</td></tr>")
		require.Contains(t, m.HTML, "done &lt;ok&gt; &amp; fine")
		require.Contains(t, m.HTML, `<a href="https://ringjob.example.com/runs/9101">`)
	})

	t.Run("STARTTLS when offered, then AUTH PLAIN", func(t *testing.T) {
		t.Parallel()
		ca := newTestCA(t)
		sink := newSMTPSink(t, "", withStartTLS(ca.server), withAuth("ringjob", smtpPassword, true))
		cfg := sink.emailConfig()
		cfg.Username, cfg.Password, cfg.CAFile, cfg.HelloName = "ringjob", smtpPassword, ca.pemFile, "scheduler-1.example.com"
		e, err := NewEmail(cfg, Deps{Clock: clock})
		require.NoError(t, err)
		require.NoError(t, e.Send(ctxT(t), failureEvent()))
		got := sink.only(t)
		require.True(t, got.TLS, "the message went over TLS")
		require.Equal(t, "ringjob", got.AuthUser)
		require.Equal(t, "scheduler-1.example.com", got.Helo)
	})

	t.Run("implicit TLS", func(t *testing.T) {
		t.Parallel()
		ca := newTestCA(t)
		sink := newSMTPSink(t, "", withImplicitTLS(ca.server), withAuth("ringjob", smtpPassword, true))
		cfg := sink.emailConfig()
		cfg.Username, cfg.Password, cfg.CAFile, cfg.ImplicitTLS = "ringjob", smtpPassword, ca.pemFile, true
		e, err := NewEmail(cfg, Deps{Clock: clock})
		require.NoError(t, err)
		require.NoError(t, e.Send(ctxT(t), failureEvent()))
		require.True(t, sink.only(t).TLS)
	})

	t.Run("an untrusted certificate fails STARTTLS", func(t *testing.T) {
		t.Parallel()
		ca := newTestCA(t)
		sink := newSMTPSink(t, "", withStartTLS(ca.server))
		e, err := NewEmail(sink.emailConfig(), Deps{Clock: clock}) // system roots
		require.NoError(t, err)
		err = e.Send(ctxT(t), failureEvent())
		require.ErrorContains(t, err, "STARTTLS with 127.0.0.1:")
		require.ErrorContains(t, err, "certificate")
		require.Empty(t, sink.messages())
	})

	t.Run("require fails when STARTTLS is not offered", func(t *testing.T) {
		t.Parallel()
		sink := newSMTPSink(t, "")
		cfg := sink.emailConfig()
		cfg.StartTLS = StartTLSRequire
		e, err := NewEmail(cfg, Deps{Clock: clock})
		require.NoError(t, err)
		err = e.Send(ctxT(t), failureEvent())
		require.ErrorContains(t, err, "the server does not offer STARTTLS and email.starttls is require")
		require.True(t, IsPermanent(err))
		require.Empty(t, sink.messages())
	})

	t.Run("no password in clear text to a remote host", func(t *testing.T) {
		t.Parallel()
		// 127.0.0.2 is not "localhost" to net/smtp, so it counts as remote.
		sink := newSMTPSink(t, "127.0.0.2", withAuth("ringjob", smtpPassword, false))
		cfg := sink.emailConfig()
		cfg.Username, cfg.Password = "ringjob", smtpPassword
		e, err := NewEmail(cfg, Deps{Clock: clock})
		require.NoError(t, err)
		err = e.Send(ctxT(t), failureEvent())
		require.ErrorContains(t, err, "refusing to send the password over an unencrypted connection")
		require.True(t, IsPermanent(err))
		requireNoSecret(t, err.Error())
		require.Empty(t, sink.messages())
	})

	t.Run("AUTH PLAIN without TLS is fine to localhost", func(t *testing.T) {
		t.Parallel()
		sink := newSMTPSink(t, "", withAuth("ringjob", smtpPassword, false))
		cfg := sink.emailConfig()
		cfg.Username, cfg.Password = "ringjob", smtpPassword
		e, err := NewEmail(cfg, Deps{Clock: clock})
		require.NoError(t, err)
		require.NoError(t, e.Send(ctxT(t), failureEvent()))
		require.Equal(t, "ringjob", sink.only(t).AuthUser)
	})

	t.Run("a wrong password is a permanent failure with the SMTP reply", func(t *testing.T) {
		t.Parallel()
		sink := newSMTPSink(t, "", withAuth("ringjob", "the-right-one", false))
		cfg := sink.emailConfig()
		cfg.Username, cfg.Password = "ringjob", smtpPassword
		e, err := NewEmail(cfg, Deps{Clock: clock})
		require.NoError(t, err)
		err = e.Send(ctxT(t), failureEvent())
		require.ErrorContains(t, err, `email channel "email": AUTH PLAIN with 127.0.0.1:`)
		require.ErrorContains(t, err, "535 5.7.8 authentication credentials invalid")
		require.True(t, IsPermanent(err))
		requireNoSecret(t, err.Error())
	})

	t.Run("some recipients refused: the others get it, the error names the refused", func(t *testing.T) {
		t.Parallel()
		sink := newSMTPSink(t, "", withReject("gone@example.com", "550 5.1.1 <gone@example.com>: no such user"))
		cfg := sink.emailConfig()
		cfg.To = []string{"oncall@example.com", "gone@example.com"}
		e, err := NewEmail(cfg, Deps{Clock: clock})
		require.NoError(t, err)
		err = e.Send(ctxT(t), failureEvent())
		require.ErrorContains(t, err, "delivered to 1 of 2 recipients; refused: <gone@example.com>: 550 5.1.1 <gone@example.com>: no such user")
		require.True(t, IsPermanent(err), "a retry would send a second copy to the others")
		require.Equal(t, []string{"oncall@example.com"}, sink.only(t).To)
	})

	t.Run("every recipient refused temporarily is worth a retry", func(t *testing.T) {
		t.Parallel()
		sink := newSMTPSink(t, "", withReject("oncall@example.com", "451 4.7.1 greylisted, try again later"))
		e, err := NewEmail(sink.emailConfig(), Deps{Clock: clock})
		require.NoError(t, err)
		err = e.Send(ctxT(t), failureEvent())
		require.ErrorContains(t, err, "every recipient was refused: <oncall@example.com>: 451 4.7.1 greylisted")
		require.False(t, IsPermanent(err))
		require.Empty(t, sink.messages())
	})

	t.Run("a server that never answers is bounded by the timeout", func(t *testing.T) {
		t.Parallel()
		sink := newSMTPSink(t, "", withSilence())
		cfg := sink.emailConfig()
		cfg.Timeout = 200 * time.Millisecond
		e, err := NewEmail(cfg, Deps{Clock: clock})
		require.NoError(t, err)
		start := time.Now()
		err = e.Send(context.Background(), failureEvent())
		require.Error(t, err)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "greeting from 127.0.0.1:")
		require.Less(t, time.Since(start), 5*time.Second)
	})

	t.Run("cancelling ctx ends the conversation at once", func(t *testing.T) {
		t.Parallel()
		sink := newSMTPSink(t, "", withSilence())
		e, err := NewEmail(sink.emailConfig(), Deps{Clock: clock}) // 30 s default timeout
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(50 * time.Millisecond); cancel() }()
		start := time.Now()
		err = e.Send(ctx, failureEvent())
		require.ErrorIs(t, err, context.Canceled)
		require.Less(t, time.Since(start), 5*time.Second)
	})

	t.Run("nothing listening", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		require.NoError(t, ln.Close())
		e, err := NewEmail(EmailConfig{Host: "127.0.0.1", Port: port, From: "a@example.com", To: []string{"b@example.com"}}, Deps{})
		require.NoError(t, err)
		err = e.Send(ctxT(t), failureEvent())
		require.ErrorContains(t, err, "connect to 127.0.0.1:")
		var opErr *net.OpError
		require.True(t, errors.As(err, &opErr))
		require.False(t, IsPermanent(err))
	})
}

func TestEmailConfigValidate(t *testing.T) {
	t.Parallel()
	ok := EmailConfig{Host: "smtp.example.com", From: "ringjob@example.com", To: []string{"oncall@example.com"}}
	tests := []struct {
		name string
		mod  func(*EmailConfig)
		want string
	}{
		{"host", func(c *EmailConfig) { c.Host = "" }, "email.host is required"},
		{"host with port", func(c *EmailConfig) { c.Host = "smtp.example.com:587" }, "email.host must be a host name or IP address without port"},
		{"port", func(c *EmailConfig) { c.Port = 70000 }, "email.port must be 1..65535"},
		{"from", func(c *EmailConfig) { c.From = "not an address" }, "email.from must be an e-mail address"},
		{"no recipients", func(c *EmailConfig) { c.To = nil }, "email.to needs at least one recipient"},
		{"bad recipient", func(c *EmailConfig) { c.To = []string{"a@example.com", "nope"} }, "email.to[1] must be an e-mail address"},
		{"starttls", func(c *EmailConfig) { c.StartTLS = "maybe" }, "email.starttls must be auto, require or off"},
		{"password without user", func(c *EmailConfig) { c.Password = smtpPassword }, "email.username is required when email.password is set"},
		{"clear-text password", func(c *EmailConfig) { c.Username, c.Password, c.StartTLS = "u", smtpPassword, StartTLSOff }, "email.password would cross the network in clear text"},
		{"timeout", func(c *EmailConfig) { c.Timeout = -time.Second }, "email.timeout must not be negative"},
	}
	require.NoError(t, ok.Validate())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			err := c.Validate()
			require.ErrorIs(t, err, ErrInvalidConfig)
			require.ErrorContains(t, err, tt.want)
			requireNoSecret(t, err.Error())
		})
	}

	t.Run("clear text is allowed to localhost", func(t *testing.T) {
		c := ok
		c.Host, c.Username, c.Password, c.StartTLS = "localhost", "u", smtpPassword, StartTLSOff
		require.NoError(t, c.Validate())
	})
	t.Run("ca_file must hold a certificate", func(t *testing.T) {
		c := ok
		c.CAFile = "/nonexistent/ca.pem"
		_, err := NewEmail(c, Deps{})
		require.ErrorContains(t, err, "email.ca_file")
	})
}

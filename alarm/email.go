package alarm

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/ringjob/ringjob/internal/kind"
)

// StartTLS modes of EmailConfig.
const (
	StartTLSAuto    = "auto"    // upgrade when the server offers STARTTLS (default)
	StartTLSRequire = "require" // fail when the server does not offer it
	StartTLSOff     = "off"     // never upgrade
)

// DefaultEmailTimeout bounds one e-mail attempt (connect, TLS, the whole
// SMTP conversation) when EmailConfig.Timeout is zero.
const DefaultEmailTimeout = 30 * time.Second

// EmailConfig configures alarm e-mail over SMTP (RFC 5321) with net/smtp.
//
// The connection is plain SMTP upgraded with STARTTLS when the server offers
// it (port 587, the default), or TLS from the first byte with ImplicitTLS
// (port 465). A password is sent only with AUTH PLAIN, and only over TLS or
// to localhost: net/smtp refuses anything else, and so does Validate.
type EmailConfig struct {
	// Name is the channel name jobs refer to (default "email").
	Name string `yaml:"name"`
	// Host is the SMTP server's host name; it is also the name its TLS
	// certificate must carry.
	Host string `yaml:"host"`
	// Port defaults to 587, or 465 with ImplicitTLS.
	Port int `yaml:"port"`
	// Username and Password enable AUTH PLAIN. Password is a secret.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// From is the sender, "Ringjob <ringjob@example.com>" or a bare address.
	From string `yaml:"from"`
	// To lists the recipients; duplicates (compared without case) are sent
	// once.
	To []string `yaml:"to"`
	// StartTLS is auto (default), require or off; ignored with ImplicitTLS.
	StartTLS string `yaml:"starttls"`
	// ImplicitTLS speaks TLS from the start (SMTPS, port 465).
	ImplicitTLS bool `yaml:"implicit_tls"`
	// CAFile is a PEM file of CA certificates to trust instead of the
	// system roots (a private mail relay).
	CAFile string `yaml:"ca_file"`
	// HelloName is the name given in EHLO (default "localhost", as net/smtp).
	HelloName string `yaml:"hello_name"`
	// HTML adds an HTML alternative to the plain-text body.
	HTML bool `yaml:"html"`
	// Timeout bounds one attempt (default 30s).
	Timeout time.Duration `yaml:"timeout"`
}

// isLocalhost matches the hosts net/smtp's PlainAuth accepts without TLS.
func isLocalhost(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// Validate reports the first invalid field.
func (c EmailConfig) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	if c.Host == "" {
		return bad("email.host is required")
	}
	if strings.ContainsAny(c.Host, "/:@ ") && net.ParseIP(c.Host) == nil {
		return bad("email.host must be a host name or IP address without port, got %q", c.Host)
	}
	if c.Port < 0 || c.Port > 65535 {
		return bad("email.port must be 1..65535, got %d", c.Port)
	}
	if _, err := mail.ParseAddress(c.From); err != nil {
		return bad("email.from must be an e-mail address, got %q: %v", c.From, err)
	}
	if len(c.To) == 0 {
		return bad("email.to needs at least one recipient")
	}
	for i, to := range c.To {
		if _, err := mail.ParseAddress(to); err != nil {
			return bad("email.to[%d] must be an e-mail address, got %q: %v", i, to, err)
		}
	}
	switch c.StartTLS {
	case "", StartTLSAuto, StartTLSRequire, StartTLSOff:
	default:
		return bad("email.starttls must be auto, require or off, got %q", c.StartTLS)
	}
	if c.Password != "" && c.Username == "" {
		return bad("email.username is required when email.password is set")
	}
	if c.Username != "" && !c.ImplicitTLS && c.StartTLS == StartTLSOff && !isLocalhost(c.Host) {
		return bad("email.starttls is off, so email.password would cross the network in clear text; use starttls auto or require, or implicit_tls")
	}
	if strings.ContainsAny(c.HelloName, " \r\n") {
		return bad("email.hello_name must be one word, got %q", c.HelloName)
	}
	return checkTimeout("email.timeout", c.Timeout)
}

// Redacted returns a copy that is safe to show, with the password redacted.
func (c EmailConfig) Redacted() EmailConfig {
	c.Password = Redact(c.Password)
	c.To = append([]string(nil), c.To...)
	return c
}

// String describes the config without its secrets.
func (c EmailConfig) String() string {
	type plain EmailConfig
	return fmt.Sprintf("EmailConfig%+v", plain(c.Redacted()))
}

// Format makes every fmt verb print String.
func (c EmailConfig) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c.String()) }

// Email sends alarms by SMTP.
type Email struct {
	// The state sits behind a second pointer: fmt, when it prints a value
	// whose methods it cannot call (an unexported field, a bad verb),
	// dereferences one pointer, and would show a URL or password; here it
	// shows an address.
	*emailState
}

// emailState is what a Email holds.
type emailState struct {
	cfg    EmailConfig
	addr   string
	from   *mail.Address
	to     []string // bare addresses, deduplicated
	tls    *tls.Config
	clock  clockwork.Clock
	scrub  scrubber
	dialer net.Dialer
}

// NewEmail validates cfg, reads CAFile and returns the sender.
func NewEmail(cfg EmailConfig, deps Deps) (*Email, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Name = orDefault(cfg.Name, "email")
	cfg.StartTLS = orDefault(cfg.StartTLS, StartTLSAuto)
	cfg.HelloName = orDefault(cfg.HelloName, "localhost")
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultEmailTimeout
	}
	if cfg.Port == 0 {
		cfg.Port = 587
		if cfg.ImplicitTLS {
			cfg.Port = 465
		}
	}
	e := &Email{&emailState{cfg: cfg, addr: net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)), clock: deps.clock(),
		scrub: newScrubber(nil, cfg.Password)}}
	e.from, _ = mail.ParseAddress(cfg.From) // validated
	seen := map[string]bool{}
	for _, raw := range cfg.To {
		a, _ := mail.ParseAddress(raw) // validated
		if key := strings.ToLower(a.Address); !seen[key] {
			seen[key] = true
			e.to = append(e.to, a.Address)
		}
	}
	e.tls = &tls.Config{ServerName: cfg.Host, MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: email.ca_file: %v", ErrInvalidConfig, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: email.ca_file %s holds no PEM certificate", ErrInvalidConfig, cfg.CAFile)
		}
		e.tls.RootCAs = pool
	}
	return e, nil
}

// Name is the channel name.
func (e *Email) Name() string { return e.cfg.Name }

// Kind is "email".
func (e *Email) Kind() kind.AlarmChannel { return kind.AlarmEmail }

// Recipients are the deduplicated recipient addresses.
func (e *Email) Recipients() []string { return append([]string(nil), e.to...) }

// String describes the sender without its secrets.
func (e *Email) String() string { return "alarm.Email(" + e.cfg.String() + ")" }

// Format makes every fmt verb print String.
func (e *Email) Format(f fmt.State, verb rune) { formatRedacted(f, verb, e.String()) }

// Send delivers one message to every recipient in one SMTP session. When
// some recipients are refused the others still get the message, and the
// error (permanent, so that a retry does not send it twice) names the
// refused ones with the server's reply.
func (e *Email) Send(ctx context.Context, ev Event) error {
	if err := ev.Validate(); err != nil {
		return Permanent(err)
	}
	msg, err := e.message(ev)
	if err != nil {
		return Permanent(fmt.Errorf("email channel %q: build message: %w", e.cfg.Name, err))
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	err = e.deliver(ctx, msg)
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w (%w)", err, ctx.Err())
	}
	return e.scrub.err(err)
}

// deliver runs one SMTP session.
func (e *Email) deliver(ctx context.Context, msg []byte) error {
	fail := func(step string, err error) error {
		err = fmt.Errorf("email channel %q: %s %s: %w", e.cfg.Name, step, e.addr, readableReply(err))
		var tp *textproto.Error
		if errors.As(err, &tp) && tp.Code >= 500 {
			return Permanent(err)
		}
		return err
	}
	conn, err := e.dialer.DialContext(ctx, "tcp", e.addr)
	if err != nil {
		return fail("connect to", err)
	}
	// End the conversation when ctx ends, by its deadline or a cancel; Send
	// then reports ctx's error.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if e.cfg.ImplicitTLS {
		tc := tls.Client(conn, e.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return fail("TLS handshake with", err)
		}
		conn = tc
	}
	c, err := smtp.NewClient(conn, e.cfg.Host)
	if err != nil {
		conn.Close()
		return fail("greeting from", err)
	}
	defer c.Close()
	if err := c.Hello(e.cfg.HelloName); err != nil {
		return fail("EHLO to", err)
	}
	if !e.cfg.ImplicitTLS && e.cfg.StartTLS != StartTLSOff {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(e.tls); err != nil {
				return fail("STARTTLS with", err)
			}
		} else if e.cfg.StartTLS == StartTLSRequire {
			return Permanent(fail("STARTTLS with", errors.New("the server does not offer STARTTLS and email.starttls is require")))
		}
	}
	if e.cfg.Username != "" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return Permanent(fail("AUTH with", errors.New("the server does not offer AUTH; remove email.username or check the port")))
		}
		if err := c.Auth(smtp.PlainAuth("", e.cfg.Username, e.cfg.Password, e.cfg.Host)); err != nil {
			if err.Error() == "unencrypted connection" { // net/smtp's PlainAuth refusal
				return Permanent(fail("AUTH with", errors.New("refusing to send the password over an unencrypted connection: the server offered no STARTTLS; use implicit_tls (port 465) or a server with STARTTLS")))
			}
			return fail("AUTH PLAIN with", err)
		}
	}
	if err := c.Mail(e.from.Address); err != nil {
		return fail("MAIL FROM at", err)
	}
	var refused []string
	allPermanent := true
	for _, to := range e.to {
		if err := c.Rcpt(to); err != nil {
			refused = append(refused, fmt.Sprintf("<%s>: %v", to, readableReply(err)))
			var tp *textproto.Error
			if !errors.As(err, &tp) {
				return fail("RCPT TO at", err) // the connection broke
			}
			allPermanent = allPermanent && tp.Code >= 500
		}
	}
	if len(refused) == len(e.to) {
		err := fail("RCPT TO at", fmt.Errorf("every recipient was refused: %s", strings.Join(refused, "; ")))
		if allPermanent {
			err = Permanent(err)
		}
		return err
	}
	w, err := c.Data()
	if err != nil {
		return fail("DATA at", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fail("DATA at", err)
	}
	if err := w.Close(); err != nil { // the server's answer to the message
		return fail("end of DATA at", err)
	}
	// The message is accepted; a failed QUIT must not cause a second copy.
	_ = c.Quit()
	if len(refused) > 0 {
		return Permanent(fmt.Errorf("email channel %q: delivered to %d of %d recipients; refused: %s",
			e.cfg.Name, len(e.to)-len(refused), len(e.to), strings.Join(refused, "; ")))
	}
	return nil
}

// smtpReply shows an SMTP reply as the server wrote it ("550 5.1.1 no such
// user"); textproto.Error quotes the text.
type smtpReply struct{ tp *textproto.Error }

func (r smtpReply) Error() string { return fmt.Sprintf("%03d %s", r.tp.Code, oneLine(r.tp.Msg)) }
func (r smtpReply) Unwrap() error { return r.tp }

// readableReply wraps a bare *textproto.Error as an smtpReply.
func readableReply(err error) error {
	if tp, ok := err.(*textproto.Error); ok {
		return smtpReply{tp}
	}
	return err
}

// message builds the RFC 5322 message: a quoted-printable text/plain body,
// or multipart/alternative with an HTML part when HTML is set.
func (e *Email) message(ev Event) ([]byte, error) {
	var b bytes.Buffer
	now := e.clock.Now()
	hdr := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	hdr("From", e.from.String())
	hdr("To", strings.Join(e.to, ", "))
	hdr("Subject", mime.QEncoding.Encode("utf-8", Subject(ev)))
	hdr("Date", now.Format(time.RFC1123Z))
	domain := e.from.Address[strings.LastIndexByte(e.from.Address, '@')+1:]
	hdr("Message-ID", fmt.Sprintf("<ringjob-alarm.%d.%d.%s.%d@%s>", ev.JobID, ev.RunID, ev.Kind, now.UnixNano(), domain))
	hdr("MIME-Version", "1.0")
	hdr("Auto-Submitted", "auto-generated") // RFC 3834: no auto-replies
	hdr("X-Ringjob-Event", string(ev.Kind))
	hdr("X-Ringjob-Job-Id", strconv.FormatInt(ev.JobID, 10))
	hdr("X-Ringjob-Run-Id", strconv.FormatInt(ev.RunID, 10))
	text := PlainText(ev, MaxMessageRunes)
	if !e.cfg.HTML {
		hdr("Content-Type", "text/plain; charset=utf-8")
		hdr("Content-Transfer-Encoding", "quoted-printable")
		b.WriteString("\r\n")
		if err := writeQP(&b, text); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	mw := multipart.NewWriter(&b)
	hdr("Content-Type", "multipart/alternative; boundary="+mw.Boundary())
	b.WriteString("\r\n")
	for _, part := range []struct{ typ, body string }{
		{"text/plain; charset=utf-8", text},
		{"text/html; charset=utf-8", htmlBody(ev, MaxMessageRunes)},
	} {
		pw, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.typ},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return nil, err
		}
		if err := writeQP(pw, part.body); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeQP writes s quoted-printable with CRLF line ends.
func writeQP(w io.Writer, s string) error {
	qp := quotedprintable.NewWriter(w)
	if _, err := qp.Write([]byte(strings.ReplaceAll(s, "\n", "\r\n"))); err != nil {
		return err
	}
	return qp.Close()
}

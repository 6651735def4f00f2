// Package email sends notifications as mail through an SMTP server, each
// incident one thread: its first mail's Message-ID is made from the
// incident's ID, every later one answers it (In-Reply-To, References)
// under the same subject, so updates and the resolution thread under the
// first mail in Gmail, Outlook, Apple Mail and Thunderbird alike — with no
// state kept, across restarts and failovers.
package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/herald-k8s/herald/internal/fence"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// Options configure an email sink.
type Options struct {
	Name string
	Host string
	Port int
	// Security is starttls, implicit or none.
	Security           string
	Username, Password string
	TLS                sinks.TLSOptions
	From               string
	To                 []string
	// Destinations are other recipient lists, by the name routes choose
	// them by.
	Destinations map[string][]string
	ClusterName  string
	Timeout      time.Duration
	// LocalName is what herald calls itself in EHLO (default localhost).
	LocalName string
}

// Sink is an email sink.
type Sink struct {
	opts Options
	tls  *tls.Config
	what string
	from string // the sender's address alone, for MAIL FROM
}

// New makes an email sink.
func New(opts Options) (*Sink, error) {
	cfg, err := sinks.ClientTLS(opts.TLS)
	if err != nil {
		return nil, fmt.Errorf("email %s: %w", opts.Name, err)
	}
	if cfg == nil {
		cfg = &tls.Config{}
	}
	cfg.ServerName = opts.Host
	cfg.MinVersion = tls.VersionTLS12
	from, err := address(opts.From)
	if err != nil {
		return nil, fmt.Errorf("email %s: from: %w", opts.Name, err)
	}
	if opts.LocalName == "" {
		opts.LocalName = "localhost"
	}
	return &Sink{opts: opts, tls: cfg, from: from, what: fmt.Sprintf("email %s (smtp %s:%d)", opts.Name, opts.Host, opts.Port)}, nil
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.opts.Name }

// Send implements sinks.Sink: one mail per notification (a digest is
// one mail too), to the recipients of the destination a route chose, or
// the sink's. 4xx answers and lost connections are retried; a refused
// login, a TLS failure and 5xx answers are final.
func (s *Sink) Send(ctx context.Context, n incident.Notification) error {
	to := s.opts.To
	if dest := n.Incident.Dest[s.opts.Name]; dest != "" {
		d, ok := s.opts.Destinations[dest]
		if !ok {
			return fmt.Errorf("%s: no destination %q (destinations: %v)", s.what, dest, keys(s.opts.Destinations))
		}
		to = d
	}
	msg, err := Compose(n, s.opts.From, to, s.opts.ClusterName, time.Now())
	if err != nil {
		return fmt.Errorf("%s: %w", s.what, err)
	}
	return s.deliver(ctx, to, msg)
}

func (s *Sink) deliver(ctx context.Context, to []string, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	// The fence at the edge, as for every sink: checked before the mail
	// is committed, and the conversation cut at the end of the hold.
	ctx, unfence, err := fence.Bound(ctx)
	if err != nil {
		return err
	}
	defer unfence()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port)))
	if err != nil {
		return &sinks.Retryable{Err: fmt.Errorf("%s: %w", s.what, err)}
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	if s.opts.Security == "implicit" {
		t := tls.Client(conn, s.tls)
		if err := t.HandshakeContext(ctx); err != nil {
			return s.tlsError(err)
		}
		conn = t
	}
	c, err := smtp.NewClient(conn, s.opts.Host)
	if err != nil {
		return s.answer("greeting", err)
	}
	if err := c.Hello(s.opts.LocalName); err != nil {
		return s.answer("EHLO", err)
	}
	if s.opts.Security == "starttls" {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return fmt.Errorf("%s: the server does not offer STARTTLS; herald sends nothing in the clear (security: implicit for port 465, or none with insecure: true)", s.what)
		}
		if err := c.StartTLS(s.tls); err != nil {
			return s.tlsError(err)
		}
	}
	if s.opts.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", s.opts.Username, s.opts.Password, s.opts.Host)); err != nil {
			return s.answer("login", err)
		}
	}
	if err := c.Mail(s.from); err != nil {
		return s.answer("MAIL FROM", err)
	}
	for _, r := range to {
		a, err := address(r)
		if err != nil {
			return fmt.Errorf("%s: recipient: %w", s.what, err)
		}
		if err := c.Rcpt(a); err != nil {
			return s.answer("RCPT TO", err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return s.answer("DATA", err)
	}
	if _, err := w.Write(msg); err != nil {
		return s.answer("DATA", err)
	}
	// The final dot commits the mail: not once another replica may lead
	// (closing the connection instead makes the server drop it).
	if err := fence.Check(ctx); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return s.answer("DATA", err)
	}
	c.Quit() // delivered; a lost goodbye changes nothing
	return nil
}

// answer classifies an SMTP failure: 4xx (try later) and a lost
// connection are retried, 5xx is final. The server's words are kept:
// they say why ("5.7.8 authentication failed"); the password never goes
// into an error.
func (s *Sink) answer(step string, err error) error {
	var te *textproto.Error
	if errors.As(err, &te) {
		e := fmt.Errorf("%s: %s refused: %d %s", s.what, step, te.Code, sinks.Reason([]byte(hide(te.Msg, s.opts.Password))))
		if te.Code >= 400 && te.Code < 500 {
			return &sinks.Retryable{Err: e}
		}
		return e
	}
	if step == "login" {
		// net/smtp refuses PLAIN itself over a connection without TLS.
		return fmt.Errorf("%s: login: %s", s.what, hide(err.Error(), s.opts.Password))
	}
	return &sinks.Retryable{Err: fmt.Errorf("%s: %s: %w", s.what, step, err)}
}

// tlsError is final: a certificate that does not verify will not fix
// itself by retrying.
func (s *Sink) tlsError(err error) error {
	return fmt.Errorf("%s: TLS: %w (set smtp.tls.caFile to the server's CA)", s.what, err)
}

func hide(s, secret string) string {
	if len(secret) < 4 {
		return s
	}
	return strings.ReplaceAll(s, secret, "<secret>")
}

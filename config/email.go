package config

import (
	"fmt"
	"net/mail"
	"strings"
	"time"
)

// EmailSink sends each notification as a mail through an SMTP server:
// one thread per incident (Message-ID, In-Reply-To, References), a plain
// and an HTML body.
type EmailSink struct {
	SMTP SMTP `yaml:"smtp"`
	// From is the sender, e.g. "herald <herald@example.com>".
	From string `yaml:"from"`
	// To are the recipients when no route chose a destination.
	To []string `yaml:"to"`
	// Destinations are other recipient lists routes may choose
	// (destinations: {payments: {to: [payments-oncall@example.com]}}).
	Destinations map[string]*Destination `yaml:"destinations"`
	ClusterName  string                  `yaml:"clusterName"`
	// Timeout bounds one delivery: connecting, TLS, and the SMTP
	// conversation (default 30s).
	Timeout time.Duration `yaml:"timeout"`
}

// SMTP is the server mail leaves through.
type SMTP struct {
	Host string `yaml:"host"`
	// Port defaults to 587 with starttls and none, 465 with implicit.
	Port int `yaml:"port"`
	// Security is starttls (the default: the server must offer it),
	// implicit (TLS from the first byte, "SMTPS"), or none (only with
	// insecure: true, and never with a password).
	Security string `yaml:"security"`
	Insecure bool   `yaml:"insecure"`
	// Username and Password authenticate (PLAIN, over TLS only).
	Username string     `yaml:"username"`
	Password *SecretRef `yaml:"password"`
	TLS      TLSConfig  `yaml:"tls"`
}

// DefaultEmailTimeout bounds one delivery.
const DefaultEmailTimeout = 30 * time.Second

func (e *EmailSink) applyDefaults() {
	if e.SMTP.Security == "" {
		e.SMTP.Security = "starttls"
	}
	if e.SMTP.Port == 0 {
		e.SMTP.Port = 587
		if e.SMTP.Security == "implicit" {
			e.SMTP.Port = 465
		}
	}
	if e.Timeout == 0 {
		e.Timeout = DefaultEmailTimeout
	}
}

func (c *Config) validateEmail(p string, e *EmailSink, add func(string, string, ...any)) {
	p += ".email"
	s := e.SMTP
	switch {
	case s.Host == "":
		add(p+".smtp.host", "an email sink needs the SMTP server's host, e.g. smtp.example.com")
	case strings.ContainsAny(s.Host, " /:@"):
		add(p+".smtp.host", "a host name or address, without a port or scheme (port: is its own field); got %q", s.Host)
	}
	if s.Port < 1 || s.Port > 65535 {
		add(p+".smtp.port", "must be 1 to 65535; got %d", s.Port)
	}
	switch s.Security {
	case "starttls", "implicit":
		if s.Insecure {
			add(p+".smtp.insecure", "insecure applies to security: none; with %s the server's certificate is verified (tls.insecureSkipVerify skips that, and is logged)", s.Security)
		}
	case "none":
		if !s.Insecure {
			add(p+".smtp.security", "none sends alerts (their log lines) in the clear: set insecure: true to mean it, or use starttls or implicit")
		}
		if s.Password != nil {
			add(p+".smtp.password", "a password is never sent over a connection without TLS: use security: starttls or implicit")
		}
	default:
		add(p+".smtp.security", "must be starttls, implicit or none; got %q", s.Security)
	}
	if (s.Username == "") != (s.Password == nil) {
		add(p+".smtp", "set username and password together (or neither, for a relay that needs no login)")
	}
	if s.Password != nil {
		c.resolveSecret(p+".smtp.password", s.Password, add)
	}
	c.validateTLS(p+".smtp.tls", s.TLS, add)
	if e.From == "" {
		add(p+".from", "an email sink needs a sender, e.g. from: \"herald <herald@example.com>\"")
	} else if _, err := mail.ParseAddress(e.From); err != nil {
		add(p+".from", "not an address: %v", err)
	}
	validateRecipients(p+".to", e.To, add)
	if len(e.To) == 0 && len(e.Destinations) == 0 {
		add(p+".to", "an email sink needs recipients: to: [oncall@example.com] (or destinations routes choose)")
	}
}

// validateRecipients checks a list of addresses.
func validateRecipients(p string, to []string, add func(string, string, ...any)) {
	if len(to) > 50 {
		add(p, "at most 50 recipients; use a mailing list")
	}
	for i, a := range to {
		if _, err := mail.ParseAddress(a); err != nil {
			add(fmt.Sprintf("%s[%d]", p, i), "not an address: %v", err)
		}
	}
}

package config

import (
	"strings"
	"testing"
)

// TestEmail: the port follows the security (587, 465 for implicit TLS);
// what would send alerts or a password in the clear, or to no one, is an
// error where it is written.
func TestEmail(t *testing.T) {
	parse := func(block string) (*Config, error) {
		return Parse("herald.yaml", []byte("rules:\n  - {name: r, kind: Pod, detector: crashloop, sinks: [mail]}\nsinks:\n  - name: mail\n    email: "+block+"\n"))
	}
	for block, port := range map[string]int{
		"{smtp: {host: smtp.example.com}, from: h@example.com, to: [a@example.com]}":                          587,
		"{smtp: {host: smtp.example.com, security: implicit}, from: h@example.com, to: [a@example.com]}":      465,
		"{smtp: {host: smtp.example.com, port: 2525}, from: h@example.com, to: [a@example.com]}":              2525,
		"{smtp: {host: localhost, security: none, insecure: true}, from: h@example.com, to: [a@example.com]}": 587,
	} {
		cfg, err := parse(block)
		if err != nil {
			t.Fatalf("%s: %v", block, err)
		}
		if got := cfg.Sinks[0].Email.SMTP.Port; got != port {
			t.Errorf("%s: port %d, want %d", block, got, port)
		}
	}
	for block, want := range map[string]string{
		"{smtp: {host: smtp.example.com, security: none}, from: h@example.com, to: [a@example.com]}":                                                           "sinks[0].email.smtp.security: none sends alerts",
		"{smtp: {host: x, security: none, insecure: true, username: u, password: {value: p, allowPlaintext: true}}, from: h@example.com, to: [a@example.com]}": "a password is never sent over a connection without TLS",
		"{smtp: {host: 'smtp.example.com:587'}, from: h@example.com, to: [a@example.com]}":                                                                     "without a port or scheme",
		"{smtp: {host: smtp.example.com, username: u}, from: h@example.com, to: [a@example.com]}":                                                              "set username and password together",
		"{smtp: {host: smtp.example.com}, from: 'not an address', to: [a@example.com]}":                                                                        "sinks[0].email.from: not an address",
		"{smtp: {host: smtp.example.com}, from: h@example.com}":                                                                                                "an email sink needs recipients",
		"{smtp: {host: smtp.example.com}, from: h@example.com, to: ['x\\nBcc: y@example.com']}":                                                                "sinks[0].email.to[0]: not an address",
		"{smtp: {host: smtp.example.com}, from: h@example.com, to: [a@example.com], destinations: {payments: {url: 'https://x'}}}":                             "an email destination is a list of recipients",
	} {
		if _, err := parse(block); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", block, err, want)
		}
	}
}

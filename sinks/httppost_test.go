package sinks

import (
	"strings"
	"testing"
)

// TestParseURL: the integrations take http(s) addresses with a host; a
// bad one is refused without repeating it (it may hold a token).
func TestParseURL(t *testing.T) {
	for _, ok := range []string{"https://hooks.example.com/services/T0k3n", "http://127.0.0.1:9093", "https://[::1]:8443/x?sig=T0k3n"} {
		if u, err := ParseURL(ok); err != nil || u.Host == "" {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "hooks.example.com/T0k3n", "ftp://example.com/T0k3n", "https:///T0k3n", "https://exa mple.com/T0k3n", "/relative/T0k3n"} {
		_, err := ParseURL(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
			continue
		}
		if strings.Contains(err.Error(), "T0k3n") {
			t.Errorf("%q: the error repeats the address: %v", bad, err)
		}
	}
}

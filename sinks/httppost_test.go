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

// TestReasonHiding: a refusal's reason is kept, while what the receiver
// echoes of the URL's path and query, or of a given secret, is not.
func TestReasonHiding(t *testing.T) {
	const target = "https://hooks.example.com/services/T0K3N-IN-PATH-123?sig=SIG-IN-QUERY-456&api-version=1"
	for _, tt := range []struct{ answer, want string }{
		{`{"error":"invalid_token","detail":"no hook /services/T0K3N-IN-PATH-123"}`, `{"error":"invalid_token","detail":"no hook <redacted>"}`},
		{"signature SIG-IN-QUERY-456 does not match\nsecond line", "signature <redacted> does not match"},
		{"bearer s3cr3t-bearer-token refused", "bearer <redacted> refused"},
		{"", ""},
	} {
		if got := ReasonHiding([]byte(tt.answer), target, "s3cr3t-bearer-token"); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.answer, got, tt.want)
		}
	}
	if got := ReasonHiding([]byte(strings.Repeat("x", 500)), target); len(got) > 210 {
		t.Errorf("not bounded: %d bytes", len(got))
	}
}

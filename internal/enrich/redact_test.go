package enrich

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	r, err := NewRedactor([]string{`customer-[0-9]+`})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, secret, want string }{
		{"Authorization: Bearer abc.DEF-123", "abc.DEF-123", "Authorization: <redacted>"},
		{`{"authorization":"Basic dXNlcjpwYXNz"}`, "dXNlcjpwYXNz", `{"authorization":"<redacted>"}`},
		{"retrying with bearer eyXtoken123==", "eyXtoken123", "retrying with bearer <redacted>"},
		{"dial postgres://app:hunter2@db:5432/x", "hunter2", "dial postgres://app:<redacted>@db:5432/x"},
		{"password=hunter2 user=app", "hunter2", "password=<redacted> user=app"},
		{`db_password: "s3cr3t"`, "s3cr3t", `db_password: "<redacted>"`},
		{"GET /x?token=tok-123&page=2", "tok-123", "GET /x?token=<redacted>&page=2"},
		{"client_secret=abcd1234", "abcd1234", "client_secret=<redacted>"},
		{"key AKIAIOSFODNN7EXAMPLE used", "AKIAIOSFODNN7EXAMPLE", "key <redacted AWS key id> used"},
		{"aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI", "aws_secret_access_key=<redacted>"},
		{"SecretAccessKey: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI", "SecretAccessKey: <redacted>"},
		{"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlXzEyMw", "eyJzdWIiOiIxIn0", "jwt <redacted JWT>"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----\nnext", "MIIEow", "<redacted private key>\nnext"},
		{"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI (cut here)", "MHcCAQEEI", "<redacted private key>"},
		{strings.Repeat("QUJD", 16), "QUJDQUJD", "<redacted base64>"},
		{"order for customer-48151623 failed", "48151623", "order for <redacted> failed"},
		{"dial tcp db:5432: connection refused", "", "dial tcp db:5432: connection refused"},
		{"error reading the token file", "", "error reading the token file"},
	}
	for _, tt := range tests {
		got := r.Redact(tt.in)
		if got != tt.want || tt.secret != "" && strings.Contains(got, tt.secret) {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if _, err := NewRedactor([]string{"("}); err == nil {
		t.Error("a bad pattern was accepted")
	}
}

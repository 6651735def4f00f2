package redact

import (
	"strings"
	"testing"
)

// TestRedact: what a redacted line reads like — the marker kept, the
// secret replaced by a placeholder that says what it was.
func TestRedact(t *testing.T) {
	r, err := New([]string{`customer-[0-9]+`})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{"Authorization: Bearer abc.DEF-123", "Authorization: Bearer <redacted>"},
		{`{"authorization":"Basic dXNlcjpwYXNz"}`, `{"authorization":"Basic <redacted>"}`},
		{"retrying with bearer eyXtoken123==", "retrying with bearer <redacted>"},
		{"dial postgres://app:hunter2@db:5432/x", "dial postgres://app:<redacted>@db:5432/x"},
		{"password=hunter2 user=app", "password=<redacted> user=app"},
		{`db_password: "s3cr3t"`, `db_password: "<redacted>"`},
		{"GET /x?token=tok-123&page=2", "GET /x?token=<redacted>&page=2"},
		{"client_secret=abcd1234", "client_secret=<redacted>"},
		{"key AKIAIOSFODNN7EXAMPLE used", "key <redacted AWS key id> used"},
		{"aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key=<redacted AWS secret key>"},
		{"SecretAccessKey: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "SecretAccessKey: <redacted AWS secret key>"},
		{"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlXzEyMw", "jwt <redacted JWT>"},
		{"token ghp_R2d2C3poL0ngT0kenF0rT3st1ngAbcd12345 ok", "token <redacted GitHub token> ok"},
		// A port and a path before an encoded "@" are not a password.
		{"next=https%3A%2F%2Fhost%3A8443%2Fusers%2Fops%40example.com", "next=https%3A%2F%2Fhost%3A8443%2Fusers%2Fops%40example.com"},
		// A numeric user and group is not a user and a password.
		{"docker run --user 1000:1000 shop/api:1.2", "docker run --user 1000:1000 shop/api:1.2"},
		{"token file /var/run/secrets/token9 mounted", "token file /var/run/secrets/token9 mounted"},
		{`"POST /oauth/token HTTP/1.1" 200`, `"POST /oauth/token HTTP/1.1" 200`},
		{"list next_page_token CgwI8abc12 size=50", "list next_page_token CgwI8abc12 size=50"},
		{`SyntaxError: Unexpected token '<', "<!DOCTYPE "... is not valid JSON`, `SyntaxError: Unexpected token '<', "<!DOCTYPE "... is not valid JSON`},
		{"git push -u git@github.com:org/repo.git main", "git push -u git@github.com:org/repo.git main"},
		{"the admin password /Xk3pQ9Zr2b+Lw== was set", "the admin password <redacted> was set"},
		// A prefix inside a longer word is not a token's start.
		{"xghp_R2d2C3poL0ngT0kenF0rT3st1ngAbcd12345", "xghp_R2d2C3poL0ngT0kenF0rT3st1ngAbcd12345"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----\nnext", "<redacted private key>\nnext"},
		{"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nu", "<redacted private key>"}, // the tail cut inside
		// A BEGIN whose END is not in the tail takes its key's lines, not
		// the lines after them that say why the program died.
		{"loading key: -----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi8Zl2ZkR4MxmYcKtQ3bM7nRtWx\nXy12AbCdEfGh==\npanic: crypto/rsa: verification error\nexit status 2",
			"loading key: <redacted private key>\npanic: crypto/rsa: verification error\nexit status 2"},
		{strings.Repeat("QUJDa1b2", 8), "<redacted base64>"},
		{"order for customer-48151623 failed", "order for <redacted> failed"},
		{"dial tcp db:5432: connection refused", "dial tcp db:5432: connection refused"},
		{"error reading the token file", "error reading the token file"},
		{"failed to refresh token: context deadline exceeded", "failed to refresh token: context deadline exceeded"},
		{"pulled image@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "pulled image@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
		{"commit 3f2c9b1e8d7a6c5b4a3928170f6e5d4c3b2a1908 by aws-bot", "commit 3f2c9b1e8d7a6c5b4a3928170f6e5d4c3b2a1908 by aws-bot"},
	}
	for _, tt := range tests {
		if got := r.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q)\n = %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// TestSecretKey: which keys name a secret.
func TestSecretKey(t *testing.T) {
	for key, want := range map[string]bool{
		"password": true, "DB_PASSWORD_B64": true, "SECRET_KEY": true, "clientSecret": true,
		"ENCRYPTION_KEY": true, "x-api-key": true, "APIKey": true, "aws_access_key_id": true,
		"refresh_token": true, "DBPASS": true, "db_pw": true, "sig": true, "JSESSIONID": true,
		"session_id": true, "credentials": true, "AccountKey": true, "--password": true,
		"secretName": false, "secret_key_ref": false, "password_file": false, "token_ttl": false,
		"max_tokens": false, "prompt_tokens": false, "next_page_token": false, "tokenizer": false,
		"key": false, "cache_key": false, "partition_key": false, "monkey": false, "passenger": false,
		"signal": false, "secrets": false, "keyspace": false, "token_type": false,
	} {
		if got := secretKey(key); got != want {
			t.Errorf("secretKey(%q) = %v, want %v", key, got, want)
		}
	}
}

// TestDropCutWord: a text cut short loses the word the cut fell in; one
// with no whitespace (a long JSON line) is cut back to its last
// separator, not emptied, and keeps no fragment of the cut value.
func TestDropCutWord(t *testing.T) {
	for in, want := range map[string]string{
		"exit 1: dial db password hunt":                    "exit 1: dial db password",
		`{"user":"app","db":"shop","password":"hunter2-lo`: `{"user":"app","db":"shop","password":"`,
		"GET /x?q=red&page=2&token=ghp_R2d2C3poL0ng":       "GET", // whitespace first
		"/api?q=red&page=2&token=ghp_R2d2C3poL0ng":         "/api?q=red&page=2&token=",
		"ghp_R2d2C3poL0ngT0ken":                            "",
	} {
		if got := DropCutWord(in); got != want {
			t.Errorf("DropCutWord(%q) = %q, want %q", in, got, want)
		}
	}
}

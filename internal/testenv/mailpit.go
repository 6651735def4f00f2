package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// MailpitVersion is the SMTP server the email sink is tested against:
// Mailpit, a Go program on the module proxy with an HTTP API to read what
// arrived and "chaos" triggers that make its SMTP answers fail.
const MailpitVersion = "v1.33.1"

// EnsureMailpit returns the mailpit binary, built from the Go module
// proxy into the cache first if needed.
func EnsureMailpit(ctx context.Context, logf func(format string, args ...any)) (string, error) {
	return ensureInstalled(ctx, logf, "mailpit", "github.com/axllent/mailpit", MailpitVersion)
}

// MailpitOptions say how the SMTP server receives.
type MailpitOptions struct {
	// CertFile and KeyFile serve TLS: STARTTLS, or TLS from the first
	// byte with Implicit; RequireTLS refuses mail without it.
	CertFile, KeyFile    string
	Implicit, RequireTLS bool
	// Users are the logins it accepts (user → password); none: no login.
	Users map[string]string
}

// Mailpit is a real Mailpit on loopback ports.
type Mailpit struct {
	// SMTPPort is the SMTP server's port on 127.0.0.1; API its HTTP API.
	SMTPPort int
	API      string
	proc     *process
}

// StartMailpit runs one Mailpit for the test and stops it when the test
// ends.
func StartMailpit(t testing.TB, o MailpitOptions) *Mailpit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := EnsureMailpit(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for attempt := range 3 { // a port taken between freePorts and the bind: try another
		ports, err := freePorts(2)
		if err != nil {
			t.Fatal(err)
		}
		args := []string{
			fmt.Sprintf("--smtp=127.0.0.1:%d", ports[0]), fmt.Sprintf("--listen=127.0.0.1:%d", ports[1]),
			"--database=" + filepath.Join(dir, fmt.Sprintf("mailpit-%d.db", attempt)),
			"--smtp-disable-rdns", "--disable-version-check", "--enable-chaos", "--quiet",
		}
		if o.CertFile != "" {
			args = append(args, "--smtp-tls-cert="+o.CertFile, "--smtp-tls-key="+o.KeyFile)
			switch {
			case o.Implicit:
				args = append(args, "--smtp-require-tls")
			case o.RequireTLS:
				args = append(args, "--smtp-require-starttls")
			}
		}
		if len(o.Users) > 0 {
			var lines []string
			for u, p := range o.Users {
				lines = append(lines, u+":"+p)
			}
			auth := filepath.Join(dir, "smtp-auth")
			if err := os.WriteFile(auth, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--smtp-auth-file="+auth)
		}
		proc, err := startProcess(bin, filepath.Join(dir, fmt.Sprintf("mailpit-%d.log", attempt)), args...)
		if err != nil {
			t.Fatal(err)
		}
		m := &Mailpit{SMTPPort: ports[0], API: fmt.Sprintf("http://127.0.0.1:%d", ports[1]), proc: proc}
		if waitReady(m.API+"/readyz", proc, 30*time.Second) {
			t.Cleanup(proc.stop)
			return m
		}
		t.Logf("mailpit did not start:\n%s", proc.tail(20))
		proc.stop()
	}
	t.Fatalf("mailpit did not become ready (logs in %s)", dir)
	return nil
}

// MailpitMessage is a message as Mailpit's API lists it.
type MailpitMessage struct {
	ID, MessageID, Subject string
	To                     []struct{ Address string }
}

// Messages lists what arrived, newest first.
func (m *Mailpit) Messages(t testing.TB) []MailpitMessage {
	t.Helper()
	var out struct{ Messages []MailpitMessage }
	m.get(t, "/api/v1/messages", &out)
	return out.Messages
}

// Headers returns one message's headers as received.
func (m *Mailpit) Headers(t testing.TB, id string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	m.get(t, "/api/v1/message/"+id+"/headers", &out)
	return out
}

// Bodies returns one message's plain and HTML bodies.
func (m *Mailpit) Bodies(t testing.TB, id string) (text, html string) {
	t.Helper()
	var out struct{ Text, HTML string }
	m.get(t, "/api/v1/message/"+id, &out)
	return out.Text, out.HTML
}

// Chaos makes the SMTP server answer every MAIL FROM (Sender),
// RCPT TO (Recipient) or login (Authentication) with code; 0 turns a
// trigger off.
func (m *Mailpit) Chaos(t testing.TB, trigger string, code int) {
	t.Helper()
	probability := 100
	if code == 0 {
		code, probability = map[string]int{"Authentication": 535}[trigger], 0
		if code == 0 {
			code = 451
		}
	}
	body, _ := json.Marshal(map[string]any{trigger: map[string]int{"ErrorCode": code, "Probability": probability}})
	req, _ := http.NewRequest(http.MethodPut, m.API+"/api/v1/chaos", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("mailpit chaos: HTTP %d", resp.StatusCode)
	}
}

func (m *Mailpit) get(t testing.TB, path string, into any) {
	t.Helper()
	resp, err := http.Get(m.API + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("mailpit %s: HTTP %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("mailpit %s: %v", path, err)
	}
}

package email

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/internal/testpki"
	"github.com/herald-k8s/herald/sinks"
)

var sample = oncalltest.Named

// server is a Mailpit with STARTTLS required, a CA the sink trusts, and
// one login.
func server(t *testing.T, o testenv.MailpitOptions) (*testenv.Mailpit, string) {
	t.Helper()
	ca := testpki.New(t, t.TempDir(), "mail")
	o.CertFile, o.KeyFile = ca.Issue(t, "smtp", true)
	if o.Users == nil {
		o.Users = map[string]string{"herald": "s3cret-passw0rd"}
	}
	return testenv.StartMailpit(t, o), ca.CAFile
}

func sink(t *testing.T, m *testenv.Mailpit, caFile string, change func(*Options)) *Sink {
	t.Helper()
	o := Options{Name: "mail", Host: "127.0.0.1", Port: m.SMTPPort, Security: "starttls", Username: "herald", Password: "s3cret-passw0rd",
		TLS: sinks.TLSOptions{CAFile: caFile}, From: "herald <herald@example.com>", To: []string{"oncall@example.com", "sre@example.com"},
		Destinations: map[string][]string{"payments": {"payments-oncall@example.com"}}, ClusterName: "prod-eu", Timeout: 10 * time.Second}
	if change != nil {
		change(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOneThreadPerIncident: an incident's mails over STARTTLS with a
// login — firing, its acknowledgement, an update, its resolution — as
// Mailpit received them: one subject (later ones "Re: "), each a
// Message-ID of its own, every later one answering the first
// (In-Reply-To, References), a plain and an HTML part, to the sink's
// recipients; a route's destination gets it instead.
func TestOneThreadPerIncident(t *testing.T) {
	m, ca := server(t, testenv.MailpitOptions{RequireTLS: true})
	s := sink(t, m, ca, nil)
	ctx := context.Background()
	for _, name := range []string{"firing", "acknowledged", "updated-acknowledged", "resolved"} { // seq 1 to 4
		if err := s.Send(ctx, sample(t, name)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	got := m.Messages(t)
	if len(got) != 4 {
		t.Fatalf("%d messages arrived, want 4", len(got))
	}
	// Newest first: the firing is the last.
	first := m.Headers(t, got[3].ID)
	firstID := first["Message-Id"][0]
	topic := "[herald] prod-eu · shop/checkout-7d9f8b6c5-x2x9q: CrashLoopBackOff"
	if got[3].Subject != topic || first["Thread-Topic"] == nil {
		t.Errorf("the first mail's subject %q, want %q", got[3].Subject, topic)
	}
	ids := map[string]bool{firstID: true}
	for _, msg := range got[:3] {
		h := m.Headers(t, msg.ID)
		if msg.Subject != "Re: "+topic {
			t.Errorf("a later mail's subject %q, want Re: and the same topic", msg.Subject)
		}
		if h["In-Reply-To"][0] != firstID || h["References"][0] != firstID {
			t.Errorf("a later mail answers %v / %v, want the first's %s", h["In-Reply-To"], h["References"], firstID)
		}
		ids[h["Message-Id"][0]] = true
	}
	if len(ids) != 4 {
		t.Errorf("Message-IDs %v: want four different", ids)
	}
	if to := got[0].To; len(to) != 2 || to[0].Address != "oncall@example.com" {
		t.Errorf("recipients %+v", to)
	}
	text, page := m.Bodies(t, got[3].ID)
	for _, want := range []string{"FIRING · prod-eu · shop/checkout-7d9f8b6c5-x2x9q", "panic: connect to db: i/o timeout", "Undo: kubectl rollout undo", "Dashboard: https://grafana.example.com/"} {
		if !strings.Contains(text, want) {
			t.Errorf("the plain part lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(page, `<a href="https://runbooks.example.com/crashloop">Runbook</a>`) || !strings.Contains(page, "<pre>") {
		t.Errorf("the HTML part:\n%s", page)
	}

	routed := sample(t, "firing")
	routed.Incident.ID, routed.Incident.Dest = "routed-1", map[string]string{"mail": "payments"}
	if err := s.Send(ctx, routed); err != nil {
		t.Fatal(err)
	}
	if to := m.Messages(t)[0].To; len(to) != 1 || to[0].Address != "payments-oncall@example.com" {
		t.Errorf("a route's destination: to %+v", to)
	}
}

// TestHostileTextStaysText: a notification whose every field is full
// of markup and header-breaking text arrives as one mail with the
// sink's own headers only, its HTML part escaped.
func TestHostileTextStaysText(t *testing.T) {
	m, ca := server(t, testenv.MailpitOptions{RequireTLS: true})
	s := sink(t, m, ca, nil)
	n := oncalltest.Hostile()
	n.Incident.Reason = "Crash\r\nBcc: everyone@example.com\r\nX-Evil: 1"
	if err := s.Send(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	got := m.Messages(t)
	if len(got) != 1 || len(got[0].To) != 2 {
		t.Fatalf("messages %+v", got)
	}
	h := m.Headers(t, got[0].ID)
	if h["X-Evil"] != nil || h["Bcc"] != nil {
		t.Errorf("a header from the cluster: %v", h)
	}
	_, page := m.Bodies(t, got[0].ID)
	for _, bad := range []string{"<!channel>", "<at>", "<users/all>", "<https://evil"} {
		if strings.Contains(page, bad) {
			t.Errorf("the HTML part holds %q unescaped", bad)
		}
	}
}

// TestImplicitTLS: SMTPS, TLS from the first byte (port 465's way).
func TestImplicitTLS(t *testing.T) {
	m, ca := server(t, testenv.MailpitOptions{Implicit: true})
	s := sink(t, m, ca, func(o *Options) { o.Security = "implicit" })
	if err := s.Send(context.Background(), sample(t, "firing")); err != nil {
		t.Fatal(err)
	}
	if n := len(m.Messages(t)); n != 1 {
		t.Errorf("%d messages", n)
	}
}

// TestRefusals: what is final and what is retried — a refused login
// (final; the password in no error), a certificate herald does not trust
// (final, says how to fix it), a server without STARTTLS (final: nothing
// in the clear), 451 to MAIL FROM (retried), 550 to RCPT TO (final).
func TestRefusals(t *testing.T) {
	ctx := context.Background()
	m, ca := server(t, testenv.MailpitOptions{RequireTLS: true})
	final := func(what string, err error, says string) {
		t.Helper()
		retry, _ := sinks.IsRetryable(err)
		if err == nil || retry || !strings.Contains(err.Error(), says) || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "wrong-one") {
			t.Errorf("%s: %v (retried %v), want a final error saying %q", what, err, retry, says)
		}
	}
	final("a refused login", sink(t, m, ca, func(o *Options) { o.Password = "wrong-one" }).Send(ctx, sample(t, "firing")), "login refused: 535")
	final("an untrusted certificate", sink(t, m, ca, func(o *Options) { o.TLS = sinks.TLSOptions{} }).Send(ctx, sample(t, "firing")), "caFile")

	m.Chaos(t, "Sender", 451)
	err := sink(t, m, ca, nil).Send(ctx, sample(t, "firing"))
	if retry, _ := sinks.IsRetryable(err); err == nil || !retry || !strings.Contains(err.Error(), "MAIL FROM refused: 451") {
		t.Errorf("451: %v (retried %v), want it retried", err, retry)
	}
	m.Chaos(t, "Recipient", 550)
	final("550", sink(t, m, ca, nil).Send(ctx, sample(t, "firing")), "RCPT TO refused: 550")
	m.Chaos(t, "Recipient", 0)
	if err := sink(t, m, ca, nil).Send(ctx, sample(t, "firing")); err != nil {
		t.Errorf("once the server takes mail again: %v", err)
	}
	if n := len(m.Messages(t)); n != 1 {
		t.Errorf("%d messages arrived, want the one that was taken", n)
	}

	plain := testenv.StartMailpit(t, testenv.MailpitOptions{})
	final("no STARTTLS", sink(t, plain, ca, func(o *Options) { o.Port = plain.SMTPPort; o.Username, o.Password = "", "" }).Send(ctx, sample(t, "firing")), "does not offer STARTTLS")
}

var update = flag.Bool("update", false, "rewrite the golden files")

// TestComposeGolden: every kind of notification herald sends, as the
// mail it makes (headers, both parts), is exactly its golden file
// (testdata/messages/<kind>.golden.eml).
func TestComposeGolden(t *testing.T) {
	for _, s := range oncalltest.Samples() {
		t.Run(s.Name, func(t *testing.T) {
			now := s.Note.Time
			if !s.Now.IsZero() {
				now = s.Now
			}
			got, err := Compose(s.Note, "herald <herald@example.com>", []string{"oncall@example.com"}, "prod-eu", now)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "messages", s.Name+".golden.eml")
			if *update {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs (go test -update rewrites it):\n%s", path, got)
			}
		})
	}
}

// TestLogLinesCannotEndThePart: a container that works out the MIME
// boundary (from the notification's ID, which it can) and logs it,
// followed by a part of its own, cannot add a part: the mail has herald's
// two, whatever the log says; and fifty recipients fold.
func TestLogLinesCannotEndThePart(t *testing.T) {
	n := sample(t, "firing")
	// The five lines a mail shows: the first follows <pre>, the next
	// starts a line with the boundary herald would take first.
	b := "herald-" + hash(n.ID() + "/0")[:24]
	lines := []string{"starting", "--" + b, "Content-Type: text/html", "", `<a href="https://evil.example/x">Acknowledge</a>`}
	c := *n.Context
	c.Logs = &incident.Logs{Container: "app", Lines: lines}
	n.Context = &c
	var to []string
	for i := range 50 {
		to = append(to, fmt.Sprintf("oncall-team-%02d@example.com", i))
	}
	raw, err := Compose(n, "herald <herald@example.com>", to, "prod-eu", n.Time)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\r\n") {
		if len(line) > 998 {
			t.Errorf("a line of %d characters", len(line))
		}
	}
	if got, _ := msg.Header.AddressList("To"); len(got) != 50 {
		t.Errorf("%d recipients parsed from the folded To", len(got))
	}
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	var types []string
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(p)
		types = append(types, p.Header.Get("Content-Type"))
		if strings.Contains(p.Header.Get("Content-Type"), "html") && strings.Contains(string(body), `<a href="https://evil.example`) {
			t.Error("the HTML part holds the log's link as HTML")
		}
	}
	if len(types) != 2 {
		t.Errorf("the mail has %d parts %v, want herald's two", len(types), types)
	}
}

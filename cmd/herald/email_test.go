package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/internal/testpki"
)

// TestEmailThread: herald with an e-mail sink (STARTTLS, the password
// from a file, a route's recipients) mails a crash loop, its update and
// its resolution to the route's team as one thread, read back from a
// real SMTP server: the later mails answer the first.
func TestEmailThread(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	dir := t.TempDir()
	ca := testpki.New(t, dir, "mail")
	cert, key := ca.Issue(t, "smtp", true)
	mp := testenv.StartMailpit(t, testenv.MailpitOptions{CertFile: cert, KeyFile: key, RequireTLS: true, Users: map[string]string{"herald": "s3cret-passw0rd"}})
	h := startedHerald(t, env, fmt.Sprintf(`
clusterName: test
incidents: {resolveHoldDown: 0s, updateInterval: 0s}
rules:
  - {name: crash, kind: Pod, detector: crashloop, restartStep: 2, settle: 0s, sinks: [mail]}
routes:
  - {name: payments, match: {namespaces: [default]}, to: [{sink: mail, destination: payments}]}
sinks:
  - name: mail
    email:
      smtp: {host: 127.0.0.1, port: %d, username: herald, password: {file: %s}, tls: {caFile: %s}}
      from: "herald <herald@example.com>"
      to: [oncall@example.com]
      destinations: {payments: {to: [payments-oncall@example.com]}}
`, mp.SMTPPort, writeFile(t, dir, "smtp-password", "s3cret-passw0rd"), ca.CAFile))
	defer h.stop()

	ctx := context.Background()
	if _, err := client.CoreV1().Pods("default").Create(ctx, newPod("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setStatus(t, client, "web", crashLooping, 3)
	mails := func(n int) []testenv.MailpitMessage {
		t.Helper()
		var got []testenv.MailpitMessage
		if err := waitFor(20*time.Second, func() bool { got = mp.Messages(t); return len(got) >= n }); err != nil {
			t.Fatalf("%d mails, want %d:\n%s", len(got), n, grepLines(h.logs.String(), "level="))
		}
		return got
	}
	mails(1)
	setStatus(t, client, "web", crashLooping, 6) // restartStep 2: an update
	mails(2)
	setStatus(t, client, "web", ready, 6)
	got := mails(3)
	first := mp.Headers(t, got[2].ID)["Message-Id"][0]
	for i, m := range got {
		if len(m.To) != 1 || m.To[0].Address != "payments-oncall@example.com" {
			t.Errorf("mail %d to %+v, want the route's payments-oncall", i, m.To)
		}
		if !strings.HasSuffix(m.Subject, "[herald] test · default/web: CrashLoopBackOff") {
			t.Errorf("mail %d: subject %q", i, m.Subject)
		}
	}
	for _, m := range got[:2] {
		if h := mp.Headers(t, m.ID); h["In-Reply-To"][0] != first || h["References"][0] != first {
			t.Errorf("%q answers %v, want the first mail %s", m.Subject, h["In-Reply-To"], first)
		}
	}
	if text, _ := mp.Bodies(t, got[0].ID); !strings.HasPrefix(text, "RESOLVED") {
		t.Errorf("the last mail says:\n%s", text)
	}
	if strings.Contains(h.logs.String(), "s3cret") {
		t.Error("the SMTP password is in herald's log")
	}
}

package nats

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/herald-k8s/herald/internal/testpki"
	"github.com/herald-k8s/herald/sinks"
)

// TestTLSWithClientCertificates: a nats-server that requires TLS and a
// client certificate from its CA. herald's sink, given the CA and a
// client certificate, completes the handshake and its message arrives
// (the server saw the client certificate's subject); without the client
// certificate, with one from another CA, or trusting another CA, nothing
// is delivered and the send fails.
func TestTLSWithClientCertificates(t *testing.T) {
	dir := t.TempDir()
	ca, other := testpki.New(t, dir, "herald-test"), testpki.New(t, dir, "stranger")
	serverCert, serverKey := ca.Issue(t, "nats-server", true)
	clientCert, clientKey := ca.Issue(t, "herald-client", false)
	strangerCert, strangerKey := other.Issue(t, "stranger-client", false)

	tlsCfg, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: serverCert, KeyFile: serverKey, CaFile: ca.CAFile, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, TLS: true, TLSVerify: true, TLSConfig: tlsCfg, TLSTimeout: 2})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	url := "tls://" + srv.Addr().String()

	// A subscriber with its own client certificate, to see what arrives.
	// (its TLS made here, not by the code under test).
	subCert, err := tls.LoadX509KeyPair(clientCert, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	sub, err := nats.Connect(url, nats.Secure(&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{subCert}, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatalf("the test's own subscriber cannot connect: %v", err)
	}
	defer sub.Close()
	got := make(chan *nats.Msg, 10)
	if _, err := sub.ChanSubscribe("herald.>", got); err != nil {
		t.Fatal(err)
	}
	sub.Flush()

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	// heraldCert is the subject of the client certificate of herald's
	// connection (named "herald"), as the server saw it.
	heraldCert := func() string {
		connz, err := srv.Connz(&server.ConnzOptions{Username: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range connz.Conns {
			if c.Name == "herald" && c.TLSVersion != "" && len(c.TLSPeerCerts) > 0 {
				return c.TLSPeerCerts[0].Subject
			}
		}
		return ""
	}
	var seen string
	send := func(opts sinks.TLSOptions) error {
		s, err := New(Options{Name: "bus", URL: url, Subject: "herald.{namespace}.{kind}.{reason}", TLS: opts, Timeout: time.Second, Logger: logger})
		if err != nil {
			return err
		}
		defer s.Close()
		defer func() { seen = heraldCert() }()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		// The first send may race the connection's first attempt.
		for {
			if err = s.Send(ctx, notification(1)); err == nil || ctx.Err() != nil {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	if err := send(sinks.TLSOptions{CAFile: ca.CAFile, CertFile: clientCert, KeyFile: clientKey}); err != nil {
		t.Fatalf("with the CA and a client certificate: %v", err)
	}
	select {
	case m := <-got:
		if m.Subject != "herald.shop.Pod.OOMKilled" {
			t.Errorf("subject %q", m.Subject)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the message sent over TLS did not arrive")
	}
	if seen != "CN=herald-client" {
		t.Errorf("the server saw herald's client certificate as %q, want CN=herald-client over TLS", seen)
	}

	for _, tc := range []struct {
		name string
		opts sinks.TLSOptions
	}{
		{"no client certificate", sinks.TLSOptions{CAFile: ca.CAFile}},
		{"a client certificate from another CA", sinks.TLSOptions{CAFile: ca.CAFile, CertFile: strangerCert, KeyFile: strangerKey}},
		{"trusting another CA", sinks.TLSOptions{CAFile: other.CAFile, CertFile: clientCert, KeyFile: clientKey}},
	} {
		if err := send(tc.opts); err == nil {
			t.Errorf("%s: the send succeeded", tc.name)
		}
	}
	select {
	case m := <-got:
		t.Errorf("a message arrived over a connection that should have been refused: %s", m.Subject)
	case <-time.After(200 * time.Millisecond):
	}
}

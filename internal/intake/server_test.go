package intake

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/testpki"
)

// TestListenRequiresTheClientCAsCertificate: with a client CA, a
// connection without a certificate, with one another CA signed, or over
// TLS 1.1 fails in the handshake and never reaches the receiver; one the
// CA signed does.
func TestListenRequiresTheClientCAsCertificate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	serverCA, clientCA, otherCA := testpki.New(t, dir, "server"), testpki.New(t, dir, "client"), testpki.New(t, dir, "other")
	certFile, keyFile := serverCA.Issue(t, "server", true)
	caFile := clientCA.CAFile
	var reached atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) })
	s, err := Listen("127.0.0.1:0", &config.ServerTLS{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile}, h, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	roots := x509.NewCertPool()
	roots.AddCert(serverCA.Cert)
	// post presents client whatever CAs the server asks for (Go's client
	// would not offer a certificate whose issuer the server did not
	// name, and the stranger's would never be sent).
	post := func(client *tls.Certificate, version uint16) error {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: min(version, tls.VersionTLS12), MaxVersion: version,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				if client == nil {
					return &tls.Certificate{}, nil
				}
				return client, nil
			}}}}
		resp, err := c.Post("https://"+s.Addr().String()+"/", "application/json", strings.NewReader("{}"))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return err
	}
	if err := post(nil, 0); err == nil {
		t.Error("a client without a certificate was served")
	}
	stranger := otherCA.Client(t, "stranger")
	if err := post(&stranger, 0); err == nil {
		t.Error("a client whose certificate another CA signed was served")
	}
	alertmanager := clientCA.Client(t, "alertmanager")
	if err := post(&alertmanager, tls.VersionTLS11); err == nil {
		t.Error("TLS 1.1 was served")
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the receiver was reached %d times by refused clients", n)
	}
	if err := post(&alertmanager, 0); err != nil {
		t.Fatalf("the client CA's client: %v", err)
	}
	if n := reached.Load(); n != 1 {
		t.Fatalf("the receiver was reached %d times, want once", n)
	}
}

// TestListenRefusesBadTLSFiles: a missing key or a CA file with no
// certificate is an error naming the setting, before anything listens.
func TestListenRefusesBadTLSFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := testpki.New(t, dir, "server").Issue(t, "server", true)
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]config.ServerTLS{
		"missing key": {CertFile: certFile, KeyFile: filepath.Join(dir, "nope.pem")},
		"empty CA":    {CertFile: certFile, KeyFile: keyFile, ClientCAFile: empty},
	} {
		s, err := Listen("127.0.0.1:0", &tc, http.NotFoundHandler(), slog.New(slog.DiscardHandler))
		if err == nil {
			s.Close()
			t.Errorf("%s: listened", name)
			continue
		}
		if !strings.HasPrefix(err.Error(), "intake.alertmanager.tls: ") {
			t.Errorf("%s: %v, want the setting named", name, err)
		}
	}
}

package intake

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-k8s/herald/config"
)

// TestListenRequiresTheClientCAsCertificate: with a client CA, a
// connection without a certificate, with one another CA signed, or over
// TLS 1.1 fails in the handshake and never reaches the receiver; one the
// CA signed does.
func TestListenRequiresTheClientCAsCertificate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	serverCA, clientCA, otherCA := newCA(t, "server CA"), newCA(t, "client CA"), newCA(t, "other CA")
	certFile, keyFile := serverCA.issue(t, dir, "server", true)
	caFile := filepath.Join(dir, "client-ca.pem")
	writePEM(t, caFile, "CERTIFICATE", clientCA.cert.Raw)
	var reached atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) })
	s, err := Listen("127.0.0.1:0", &config.ServerTLS{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile}, h, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	roots := x509.NewCertPool()
	roots.AddCert(serverCA.cert)
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
	stranger := otherCA.pair(t, dir, "stranger")
	if err := post(&stranger, 0); err == nil {
		t.Error("a client whose certificate another CA signed was served")
	}
	alertmanager := clientCA.pair(t, dir, "alertmanager")
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
	certFile, keyFile := newCA(t, "server CA").issue(t, dir, "server", true)
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

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(t *testing.T, name string) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{cert, key}
}

// issue writes a certificate the CA signed, and its key, under dir: a
// server's for 127.0.0.1, or a client's.
func (ca testCA) issue(t *testing.T, dir, name string, server bool) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage, tmpl.IPAddresses = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile
}

// pair is a client certificate the CA signed, as a client presents it.
func (ca testCA) pair(t *testing.T, dir, name string) tls.Certificate {
	t.Helper()
	certFile, keyFile := ca.issue(t, dir, name, false)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

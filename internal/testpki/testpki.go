// Package testpki makes certificate authorities and the certificates they
// sign, as PEM files, for tests of TLS with client certificates: each
// CA lives an hour, its certificates are ECDSA P-256, a server's is for
// 127.0.0.1.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority whose files are written under Dir.
type CA struct {
	Dir string
	// Cert is the CA's certificate, and CAFile the file that holds it.
	Cert   *x509.Certificate
	CAFile string
	key    *ecdsa.PrivateKey
}

// New makes a CA called name, with its certificate in dir/<name>-ca.pem.
func New(t testing.TB, dir, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{Dir: dir, Cert: cert, CAFile: filepath.Join(dir, name+"-ca.pem"), key: key}
	writePEM(t, ca.CAFile, "CERTIFICATE", der)
	return ca
}

// Issue signs a certificate for a server (127.0.0.1) or a client, and
// returns its certificate and key files.
func (ca *CA) Issue(t testing.TB, name string, server bool) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(ca.Dir, name+".pem"), filepath.Join(ca.Dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile
}

// Client is a client certificate the CA signed, as a client presents it.
func (ca *CA) Client(t testing.TB, name string) tls.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(ca.Issue(t, name, false))
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

func writePEM(t testing.TB, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

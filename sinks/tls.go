package sinks

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// TLSOptions are a client's TLS settings; verification is on unless
// InsecureSkipVerify, which the caller should log as a warning.
type TLSOptions struct {
	CAFile, CertFile, KeyFile string
	InsecureSkipVerify        bool
}

// ClientTLS builds a tls.Config: the system roots plus CAFile, and a
// client certificate when given. It returns nil when nothing is set, so
// the library default (verify against system roots) applies.
func ClientTLS(o TLSOptions) (*tls.Config, error) {
	if o == (TLSOptions{}) {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.InsecureSkipVerify} //nolint:gosec // opt-in, logged
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, err
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", o.CAFile)
		}
		cfg.RootCAs = pool
	}
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

package intake

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/ratelog"
)

// Server serves a receiver on a port of its own (not the metrics port),
// with TLS when the configuration gives a certificate.
type Server struct {
	srv  *http.Server
	addr net.Addr
}

// Listen listens on addr and serves h there until Close; with t, over TLS,
// and with t.ClientCAFile, only to clients whose certificate that CA
// signed (checked by the handshake, before a request is read).
func Listen(addr string, t *config.ServerTLS, h http.Handler, logger *slog.Logger) (*Server, error) {
	tlsConfig, err := serverTLS(t)
	if err != nil {
		return nil, fmt.Errorf("intake.alertmanager.tls: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("intake.alertmanager.listen: %w", err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	s := &Server{addr: ln.Addr(), srv: &http.Server{Handler: mux,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: log.New(connErrors{logger, ratelog.New(time.Minute, time.Now)}, "", 0)}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("the Alertmanager receiver stopped", "error", err)
		}
	}()
	logger.Info("Alertmanager receiver listening", "addr", s.addr.String(), "tls", tlsConfig != nil)
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.addr }

// Close stops listening and closes every connection.
func (s *Server) Close() error { return s.srv.Close() }

// connErrors logs the HTTP server's own errors (failed TLS handshakes,
// malformed requests) at most once a minute: anyone who can reach the
// port can cause them.
type connErrors struct {
	logger *slog.Logger
	limit  *ratelog.Limiter
}

func (c connErrors) Write(p []byte) (int, error) {
	if n, ok := c.limit.Allow("conn"); ok {
		c.logger.Warn("Alertmanager receiver: a connection failed", "error", strings.TrimSpace(string(p)), "failuresSinceLastLog", n)
	}
	return len(p), nil
}

// serverTLS is the receiver's TLS: its certificate and, with a client CA,
// a client certificate signed by it required of every connection.
func serverTLS(t *config.ServerTLS) (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.ClientCAFile != "" {
		pem, err := os.ReadFile(t.ClientCAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no certificate in %s", t.ClientCAFile)
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}

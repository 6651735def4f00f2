package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/handlers"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/intake"
	"github.com/herald-k8s/herald/internal/ratelog"
	"github.com/herald-k8s/herald/watcher"
)

// alertIntake is the Alertmanager webhook receiver (internal/intake) as
// herald run serves it: on every replica, so that a follower answers
// 503 and Alertmanager retries until the leader takes the alerts.
type alertIntake struct {
	cfg      *config.AlertmanagerIntake
	store    *intake.Store
	receiver *intake.Receiver
	srv      *http.Server
	addr     net.Addr
}

// newAlertIntake listens on the receiver's address (nil, nil when the
// configuration has no receiver). Alerts go nowhere until lead.
func newAlertIntake(cfg *config.Config, w *watcher.Watcher, logger *slog.Logger, reg prometheus.Registerer) (*alertIntake, error) {
	in := cfg.Intake.Alertmanager
	if in == nil {
		return nil, nil
	}
	sinkNames := in.Sinks
	if len(sinkNames) == 0 {
		for _, s := range cfg.Sinks {
			sinkNames = append(sinkNames, s.Name)
		}
	}
	store := intake.NewStore()
	a := &alertIntake{cfg: in, store: store}
	var token config.Secret
	if in.Token != nil {
		token = in.Token.Secret()
	}
	a.receiver = intake.NewReceiver(intake.Options{
		Config: in, Token: token, ClientCerts: in.TLS != nil && in.TLS.ClientCAFile != "", Store: store, Sinks: sinkNames, Logger: logger, Metrics: intake.NewMetrics(reg),
		Watched: func(kind string) bool { return slices.Contains(w.Kinds(), kind) },
	})
	tlsConfig, err := intakeTLS(in.TLS)
	if err != nil {
		return nil, fmt.Errorf("intake.alertmanager.tls: %w", err)
	}
	ln, err := net.Listen("tcp", in.Listen)
	if err != nil {
		return nil, fmt.Errorf("intake.alertmanager.listen: %w", err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	mux := http.NewServeMux()
	mux.Handle("/", a.receiver)
	a.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: log.New(connErrors{logger, ratelog.New(time.Minute, time.Now)}, "", 0)}
	a.addr = ln.Addr()
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("the Alertmanager receiver stopped", "error", err)
		}
	}()
	logger.Info("Alertmanager receiver listening", "addr", a.addr.String(), "tls", tlsConfig != nil)
	return a, nil
}

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

// intakeTLS is the receiver's TLS: its certificate and, with a client CA,
// a client certificate signed by it required of every connection.
func intakeTLS(t *config.ServerTLS) (*tls.Config, error) {
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

// seed gives a new leader the alerts its ledger holds open.
func (a *alertIntake) seed(tracker *incident.Tracker, logger *slog.Logger) {
	incs, _ := tracker.Snapshot()
	if n := a.store.Seed(incs, a.cfg.AgreeFor); n > 0 {
		logger.Info("alerts firing before this leader restored from the ledger", "alerts", n)
	}
}

// lead takes alerts in while ctx lasts: an alert is answered once its
// key has been reconciled and the ledger holds the outcome.
func (a *alertIntake) lead(ctx context.Context, ctrl *handlers.Controller, tracker *incident.Tracker, saved *incident.Saved) {
	a.receiver.Lead(ctx, intake.Term{Record: func(ctx context.Context, keys []watcher.Key) error {
		if err := ctrl.Settle(ctx, keys); err != nil {
			return err
		}
		return saved.Wait(ctx, tracker.Version())
	}})
}

func (a *alertIntake) close() {
	if a != nil {
		a.srv.Close()
	}
}

// source is the receiver's store as the controller reads it (nil: no
// receiver).
func (a *alertIntake) source() handlers.AlertSource {
	if a == nil {
		return nil
	}
	return a.store
}

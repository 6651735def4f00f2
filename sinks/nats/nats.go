// Package nats publishes herald's JSON payload (docs/payload.md) to NATS:
// core NATS, or JetStream with a publish acknowledgement and the
// idempotency key as Nats-Msg-Id, so the stream drops redeliveries.
package nats

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/herald-k8s/herald/internal/fence"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// Options configure a NATS sink.
type Options struct {
	Name string
	// URL is one server or a comma-separated list.
	URL string
	// Subject template: {namespace}, {kind}, {name}, {reason}, {rule},
	// {severity} and {transition} are replaced by sanitised tokens.
	Subject      string
	JetStream    bool
	CredsFile    string
	NKeySeedFile string
	TLS          sinks.TLSOptions
	// Timeout bounds one publish and its acknowledgement.
	Timeout time.Duration
	Logger  *slog.Logger
	// ClusterName is the payload's cluster and the subject's {cluster}.
	ClusterName string
}

// Sink is a NATS sink.
type Sink struct {
	opts Options
	nc   *nats.Conn
	js   jetstream.JetStream
}

// New connects (retrying in the background if the server is not up yet:
// sends fail and are retried by the dispatcher until it is).
func New(opts Options) (*Sink, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	logger := opts.Logger
	natsOpts := []nats.Option{
		nats.Name("herald"),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		// No reconnect buffer: a publish while disconnected fails (the
		// dispatcher retries it) instead of waiting in the client to go
		// out on reconnect — possibly after this replica was fenced.
		nats.ReconnectBufSize(-1),
		nats.Timeout(opts.Timeout),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if logger != nil {
				logger.Warn("NATS connection lost; notifications wait and are retried", "sink", opts.Name, "error", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			if logger != nil {
				logger.Info("NATS connection restored", "sink", opts.Name, "server", nc.ConnectedUrlRedacted())
			}
		}),
	}
	if opts.CredsFile != "" {
		natsOpts = append(natsOpts, nats.UserCredentials(opts.CredsFile))
	}
	if opts.NKeySeedFile != "" {
		o, err := nats.NkeyOptionFromSeed(opts.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("nats %s: nkey seed: %w", opts.Name, err)
		}
		natsOpts = append(natsOpts, o)
	}
	tlsCfg, err := sinks.ClientTLS(opts.TLS)
	if err != nil {
		return nil, fmt.Errorf("nats %s: TLS: %w", opts.Name, err)
	}
	if tlsCfg != nil {
		natsOpts = append(natsOpts, nats.Secure(tlsCfg))
	}
	nc, err := nats.Connect(opts.URL, natsOpts...)
	if err != nil {
		return nil, fmt.Errorf("nats %s: %w", opts.Name, err)
	}
	s := &Sink{opts: opts, nc: nc}
	if opts.JetStream {
		if s.js, err = jetstream.New(nc); err != nil {
			nc.Close()
			return nil, fmt.Errorf("nats %s: JetStream: %w", opts.Name, err)
		}
	}
	return s, nil
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.opts.Name }

// Close flushes and closes the connection.
func (s *Sink) Close() { s.nc.Close() }

// Send implements sinks.Sink. Every failure is retryable: the server may
// be restarting, or the stream electing a leader.
func (s *Sink) Send(ctx context.Context, n incident.Notification) error {
	payload := sinks.NewPayloadIn(n, s.opts.ClusterName)
	payload.Epoch = fence.EpochFrom(ctx)
	data, err := payload.AppendJSON(make([]byte, 0, 1024))
	if err != nil {
		return fmt.Errorf("nats %s: encoding payload: %w", s.opts.Name, err)
	}
	msg := nats.NewMsg(Subject(s.opts.Subject, payload))
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, payload.ID)
	if payload.Epoch != "" {
		msg.Header.Set("Herald-Epoch", payload.Epoch)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	// The fence at the edge, as the HTTP sinks' transport does: checked
	// just before the message leaves, and the publish cut at the end of
	// the hold on the leader lease.
	ctx, unfence, err := fence.Bound(ctx)
	if err != nil {
		return err
	}
	defer unfence()
	if s.js != nil {
		if _, err := s.js.PublishMsg(ctx, msg, jetstream.WithMsgID(payload.ID)); err != nil {
			return &sinks.Retryable{Err: fmt.Errorf("nats %s: JetStream publish to %s: %w", s.opts.Name, msg.Subject, err)}
		}
		return nil
	}
	// Core NATS: publish only while connected (the client would otherwise
	// buffer the message in memory, where a crash loses it), then flush so
	// the server has it before we call it delivered.
	if !s.nc.IsConnected() {
		// The last error says why (a refused token, a TLS mismatch), which
		// "reconnecting" alone does not.
		if last := s.nc.LastError(); last != nil {
			return &sinks.Retryable{Err: fmt.Errorf("nats %s: not connected (%s): %v", s.opts.Name, s.nc.Status(), last)}
		}
		return &sinks.Retryable{Err: fmt.Errorf("nats %s: not connected (%s)", s.opts.Name, s.nc.Status())}
	}
	if err := s.nc.PublishMsg(msg); err != nil {
		return &sinks.Retryable{Err: fmt.Errorf("nats %s: publish: %w", s.opts.Name, err)}
	}
	if err := s.nc.FlushWithContext(ctx); err != nil {
		return &sinks.Retryable{Err: fmt.Errorf("nats %s: flush: %w", s.opts.Name, err)}
	}
	return nil
}

// Subject renders the subject template for a payload. Each value (an
// Event's reason is anyone's text) becomes exactly one token, so it can
// choose among the subjects the template names but never reach another:
// dots, wildcards, white space and control characters become '_', and so
// does a leading '$' (subjects under $JS, $SYS, $KV are the server's).
func Subject(template string, p sinks.Payload) string {
	const maxToken = 128
	token := func(s string) string {
		if s == "" {
			return "_"
		}
		s = strings.Map(func(r rune) rune {
			if r == '.' || r == '*' || r == '>' || unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError {
				return '_'
			}
			return r
		}, s)
		if s[0] == '$' {
			s = "_" + s[1:]
		}
		return sinks.Head(s, maxToken) // the server closes a connection whose control line passes 4 KB
	}
	kind, ns, name, reason, rule, sev := p.Object.Kind, p.Object.Namespace, p.Object.Name, p.Incident.Reason, p.Incident.Rule, p.Incident.Severity
	if p.Transition == string(incident.Digest) {
		kind, reason = "digest", "digest"
	}
	return strings.NewReplacer(
		"{namespace}", token(ns), "{kind}", token(kind), "{name}", token(name), "{reason}", token(reason),
		"{rule}", token(rule), "{severity}", token(sev), "{transition}", token(p.Transition), "{cluster}", token(p.Cluster),
	).Replace(template)
}

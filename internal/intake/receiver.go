// Package intake takes in alerts raised outside the cluster's objects —
// Alertmanager's, from Prometheus' rules — and hands them to the
// reconcile loop as findings: an alert about a pod is reconciled with the
// pod, so it gets herald's crash context, what changed, routes,
// silences, buttons and acknowledgement like herald's own, and one
// problem seen by both makes one incident.
//
// The way in is an Alertmanager webhook receiver (Receiver): bearer token
// or client certificate, a capped body, version 4 only. Only the leader
// takes alerts; the others answer 503 so that Alertmanager retries. An
// answer of 200 means the alerts are in the incident ledger.
package intake

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/ratelog"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

// LoopAnnotation is on every alert herald's alertmanager sink posts (the
// incident's ID): an alert that carries it is herald's own, come back
// through a route that sends it to herald, and is dropped.
const LoopAnnotation = "herald_incident"

// Options are a receiver's settings and dependencies.
type Options struct {
	Config *config.AlertmanagerIntake
	// Token is the bearer token asked of every request ("" when only
	// client certificates are: the TLS handshake checks those, and
	// ClientCerts must say so).
	Token config.Secret
	// ClientCerts is set when the server asks every client for a
	// certificate its CA signed. Without it or a token, every request is
	// refused: nothing unauthenticated is taken in.
	ClientCerts bool
	Store       *Store
	// Watched says whether herald watches objects of a kind (the key of
	// an alert about one is then the object's).
	Watched func(kind string) bool
	// Sinks receive alerts no route takes (Config.Sinks, or every sink).
	Sinks   []string
	Metrics *Metrics
	Logger  *slog.Logger
	// RecordWithin bounds how long a request waits for its alerts to be
	// in the ledger before it is answered 503 (default 10 s; Alertmanager
	// then retries).
	RecordWithin time.Duration
}

// Term is what the leader lends the receiver while it leads.
type Term struct {
	// Record returns once every key has been reconciled since the call
	// and the ledger holds the result.
	Record func(ctx context.Context, keys []watcher.Key) error
}

// Receiver is the webhook receiver.
type Receiver struct {
	opts Options
	// token is the SHA-256 of "Bearer <token>" (compared as hashes, so
	// the time taken says nothing of the token's length); nil when only
	// certificates are asked.
	token []byte
	term  atomic.Pointer[Term]
	logs  *ratelog.Limiter
	// busy bounds the requests handled at once: each holds its body and
	// may wait for the ledger.
	busy chan struct{}
}

// maxInFlight is how many requests the leader handles at once;
// Alertmanager sends one per group, and retries what is refused.
const maxInFlight = 16

// NewReceiver makes a receiver; it takes nothing until Lead.
func NewReceiver(opts Options) *Receiver {
	if opts.RecordWithin == 0 {
		opts.RecordWithin = 10 * time.Second
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	r := &Receiver{opts: opts, logs: ratelog.New(time.Minute, time.Now), busy: make(chan struct{}, maxInFlight)}
	if t := strings.TrimSpace(opts.Token.Reveal()); t != "" {
		h := sha256.Sum256([]byte("Bearer " + t))
		r.token = h[:]
	}
	return r
}

// Lead takes alerts in for the leader's term, until ctx ends.
func (r *Receiver) Lead(ctx context.Context, t Term) {
	r.term.Store(&t)
	r.opts.Metrics.leading.Set(1)
	<-ctx.Done()
	r.term.Store(nil)
	r.opts.Metrics.leading.Set(0)
}

// answer is the body of every reply: what was taken, or why not.
type answer struct {
	Accepted int    `json:"accepted"`
	Looped   int    `json:"looped,omitempty"`
	Error    string `json:"error,omitempty"`
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	acc, ref := r.serve(req)
	w.Header().Set("Content-Type", "application/json")
	if ref != nil {
		r.opts.Metrics.refused.WithLabelValues(ref.reason).Inc()
		if n, ok := r.logs.Allow(ref.reason); ok {
			// The reason only: the text can quote what the sender wrote.
			r.opts.Logger.Warn("alertmanager intake refused a request", "reason", ref.reason, "status", ref.status, "remote", req.RemoteAddr, "refusedSinceLastLog", n)
		}
		if ref.status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "5")
			// Alertmanager keeps its connection, and a Service balances
			// connections, not requests: closed, its retry may reach
			// another replica (the leader).
			w.Header().Set("Connection", "close")
		}
		w.WriteHeader(ref.status)
		json.NewEncoder(w).Encode(answer{Error: ref.text})
		return
	}
	json.NewEncoder(w).Encode(acc)
}

func (r *Receiver) serve(req *http.Request) (answer, *refusal) {
	if req.Method != http.MethodPost {
		return answer{}, refuse(http.StatusMethodNotAllowed, "method", "only POST is accepted")
	}
	if r.token == nil && !r.opts.ClientCerts {
		// A misconfiguration (config validation refuses it): fail closed.
		return answer{}, refuse(http.StatusUnauthorized, "unauthorized", "this receiver has no token and asks no client certificate: it takes nothing")
	}
	got := sha256.Sum256([]byte(req.Header.Get("Authorization")))
	if r.token != nil && subtle.ConstantTimeCompare(got[:], r.token) != 1 {
		if req.Header.Get("Authorization") == "" {
			return answer{}, refuse(http.StatusUnauthorized, "unauthorized", "no bearer token (set http_config.authorization in the webhook_config)")
		}
		return answer{}, refuse(http.StatusUnauthorized, "unauthorized", "wrong bearer token")
	}
	// Before the body is read: a follower neither reads nor keeps it.
	term := r.term.Load()
	if term == nil {
		return answer{}, refuse(http.StatusServiceUnavailable, "not_leader", "this replica does not lead; retry (the leader takes alerts)")
	}
	select {
	case r.busy <- struct{}{}:
		defer func() { <-r.busy }()
	default:
		return answer{}, refuse(http.StatusServiceUnavailable, "busy", "%d requests are being handled; retry", maxInFlight)
	}
	limit := int64(r.opts.Config.MaxBodyBytes)
	if req.ContentLength > limit {
		return answer{}, refuse(http.StatusRequestEntityTooLarge, "too_large", "body of %d bytes; at most %d (intake.alertmanager.maxBodyBytes)", req.ContentLength, limit)
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, req.Body, limit))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return answer{}, refuse(http.StatusRequestEntityTooLarge, "too_large", "body over %d bytes (intake.alertmanager.maxBodyBytes)", limit)
		}
		return answer{}, refuse(http.StatusBadRequest, "malformed", "reading the body: %v", err)
	}
	msg, ref := decode(body)
	if ref != nil {
		return answer{}, ref
	}
	r.opts.Metrics.received.Add(float64(len(msg.Alerts)))
	acc, keys, full := r.take(msg)
	if full > 0 {
		// What fitted is taken (and recorded below); the rest waits for
		// alerts to resolve, and Alertmanager's retry.
		defer func() { r.opts.Metrics.alerts.WithLabelValues("over_cap").Add(float64(full)) }()
	}
	ctx, cancel := context.WithTimeout(req.Context(), r.opts.RecordWithin)
	defer cancel()
	if err := term.Record(ctx, keys); err != nil {
		// Taken, but not yet in the ledger: a failover now would lose
		// it, so Alertmanager must ask again. A retry finds the alerts
		// already taken, and only waits for the ledger.
		return answer{}, refuse(http.StatusServiceUnavailable, "not_recorded", "the alerts are not in the ledger yet (%v); retry", err)
	}
	if full > 0 {
		return answer{}, refuse(http.StatusServiceUnavailable, "full", "%d alerts not taken: %d fire already, the most herald keeps; retry once some resolve", full, MaxFiring)
	}
	return acc, nil
}

// take puts the message's alerts in the store and returns the keys whose
// findings changed or must be confirmed.
func (r *Receiver) take(msg *Message) (acc answer, keys []watcher.Key, full int) {
	seen := map[watcher.Key]bool{}
	touch := func(k watcher.Key) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	m := r.opts.Metrics
	for _, a := range msg.Alerts {
		if _, ours := a.Annotations[LoopAnnotation]; ours {
			acc.Looped++
			m.alerts.WithLabelValues("looped").Inc()
			continue
		}
		acc.Accepted++
		if a.Status == "resolved" {
			if k, ok := r.opts.Store.resolve(a.Fingerprint); ok {
				m.alerts.WithLabelValues("resolved").Inc()
				touch(k)
			} else {
				m.alerts.WithLabelValues("deduplicated").Inc()
			}
			continue
		}
		t := mapObject(a.Labels, r.opts.Config.Objects)
		key := t.key(a.Fingerprint, r.opts.Watched)
		alert := rules.Alert{
			Name: alertName(a.Labels["alertname"]), Fingerprint: a.Fingerprint, Severity: severity(a.Labels["severity"]),
			Object: t.object, Container: t.container, Mapped: t.mapped,
			Summary: a.Annotations["summary"], Description: a.Annotations["description"], RunbookURL: a.Annotations["runbook_url"],
			Labels: keptLabels(a.Labels), Since: a.StartsAt, Sinks: r.opts.Sinks, Repeat: r.opts.Config.Repeat,
		}
		if alert.Summary == "" {
			alert.Summary = a.Annotations["message"] // kube-prometheus' older rules
		}
		changed, moved, err := r.opts.Store.put(key, alert, r.opts.Config.AgreeFor(alert.Name))
		switch {
		case err != nil:
			acc.Accepted--
			full++
			continue
		case !changed:
			m.alerts.WithLabelValues("deduplicated").Inc()
		case t.mapped:
			m.alerts.WithLabelValues("mapped").Inc()
		default:
			m.alerts.WithLabelValues("unmapped").Inc()
		}
		if moved != nil {
			touch(*moved)
		}
		touch(key)
	}
	m.firing.Set(float64(r.opts.Store.Firing()))
	return acc, keys, full
}

// keptLabels are the labels an alert's finding can show (the first
// rules.MaxAlertLabels by name, and how many more there were): only
// those are kept while it fires.
func keptLabels(labels map[string]string) map[string]string {
	if len(labels) <= rules.MaxAlertLabels {
		return labels
	}
	keys := slices.Sorted(maps.Keys(labels))
	kept := make(map[string]string, rules.MaxAlertLabels)
	for _, k := range keys[:rules.MaxAlertLabels] {
		kept[k] = labels[k]
	}
	return kept
}

// alertName keeps of an alert's name what names can hold (Prometheus
// allows any text): it is the incident's reason, in titles and logs.
func alertName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '_' || r == ':' || r == '.' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
	if len(s) > 128 {
		s = s[:128]
	}
	if s == "" {
		return "Alert"
	}
	return s
}

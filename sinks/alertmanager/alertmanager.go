// Package alertmanager posts herald's incidents to Alertmanager's API
// (POST /api/v2/alerts), so that its routing tree, silences, inhibition
// and receivers apply to them. It speaks the API's postableAlert schema
// with a small struct of its own (the published client would bring in
// the go-openapi stack for four fields); the tests hold it to a real
// Alertmanager.
package alertmanager

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// Options configure an Alertmanager sink.
type Options struct {
	Name string
	// URLs are the replicas' base addresses; every alert goes to each.
	URLs []string
	// Resend is how often open alerts are posted again (the dispatcher's
	// refresh stage does it: sinks.Refresher).
	Resend time.Duration
	// Labels go on every alert; RuleLabels on the alerts of one rule.
	Labels     map[string]string
	RuleLabels map[string]map[string]string
	// ClusterName, when set, is the cluster label.
	ClusterName  string
	GeneratorURL string
	// Username and Password (basic auth) or BearerToken, if any.
	Username, Password, BearerToken string
	Timeout                         time.Duration
	UserAgent                       string
	TLS                             sinks.TLSOptions
	Logger                          *slog.Logger
}

// Sink is an Alertmanager sink.
type Sink struct {
	opts     Options
	client   *http.Client
	endpoint []string // <url>/api/v2/alerts
	redacted []string
	logger   *slog.Logger
}

// New makes an Alertmanager sink with its own HTTP client.
func New(opts Options) (*Sink, error) {
	client, err := sinks.NewHTTPClient(opts.Timeout, opts.TLS)
	if err != nil {
		return nil, fmt.Errorf("alertmanager %s: %w", opts.Name, err)
	}
	s := &Sink{opts: opts, client: client, logger: opts.Logger}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	for _, raw := range opts.URLs {
		u, err := sinks.ParseURL(raw)
		if err != nil {
			return nil, fmt.Errorf("alertmanager %s: %w", opts.Name, err)
		}
		s.endpoint = append(s.endpoint, strings.TrimRight(raw, "/")+"/api/v2/alerts")
		s.redacted = append(s.redacted, u.Scheme+"://"+u.Host)
	}
	return s, nil
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.opts.Name }

// RefreshInterval implements sinks.Refresher: Alertmanager resolves an
// alert it has not heard of within its resolve_timeout.
func (s *Sink) RefreshInterval() time.Duration { return s.opts.Resend }

// Send implements sinks.Sink: it posts the alert (all of a digest's, in
// one request) to every replica. It succeeds when at least one replica
// accepted it: each replica notifies on its own, and the next refresh
// reaches one that was down; when none did, the error is retryable if any
// failure was (network, 429, 5xx).
func (s *Sink) Send(ctx context.Context, n incident.Notification) error {
	alerts := []Alert{}
	if n.Transition == incident.Digest {
		for _, d := range n.Digest {
			alerts = append(alerts, s.alert(d))
		}
	} else {
		alerts = append(alerts, s.alert(n))
	}
	body, err := json.Marshal(alerts)
	if err != nil {
		return fmt.Errorf("alertmanager %s: encoding alerts: %w", s.opts.Name, err)
	}
	var errs []error
	retry := false
	var after time.Duration
	for i := range s.endpoint {
		err := s.post(ctx, i, body)
		if err == nil {
			continue
		}
		errs = append(errs, err)
		if ok, a := sinks.IsRetryable(err); ok {
			retry, after = true, max(after, a)
		}
	}
	switch {
	case len(errs) == 0:
		return nil
	case len(errs) < len(s.endpoint):
		s.logger.Warn("an Alertmanager replica did not take the alert; the others did, and the next refresh tries it again",
			"sink", s.opts.Name, "id", n.ID(), "error", errors.Join(errs...))
		return nil
	case retry:
		return &sinks.Retryable{After: after, Err: errors.Join(errs...)}
	default:
		return errors.Join(errs...)
	}
}

func (s *Sink) post(ctx context.Context, i int, body []byte) error {
	header := http.Header{}
	header.Set("Content-Type", "application/json")
	header.Set("User-Agent", s.opts.UserAgent)
	switch {
	case s.opts.BearerToken != "":
		header.Set("Authorization", "Bearer "+s.opts.BearerToken)
	case s.opts.Username != "":
		header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(s.opts.Username+":"+s.opts.Password)))
	}
	answer, err := sinks.Post(ctx, s.client, s.endpoint[i], header, body, fmt.Sprintf("alertmanager %s (%s)", s.opts.Name, s.redacted[i]))
	if ok, _ := sinks.IsRetryable(err); err != nil && !ok {
		// Alertmanager says what it rejected (a bad label, say).
		// Never what it may echo of the request's credentials.
		return fmt.Errorf("%w: %s", err, sinks.ReasonHiding(answer, s.endpoint[i], s.opts.BearerToken, s.opts.Password, header.Get("Authorization")))
	}
	return err
}

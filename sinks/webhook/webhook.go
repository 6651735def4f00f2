// Package webhook POSTs herald's JSON payload (docs/payload.md) to an HTTP
// endpoint.
package webhook

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/herald-k8s/herald/internal/fence"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// Options configure a webhook sink.
type Options struct {
	Name string
	URL  string
	// Destinations are other URLs, by the name routes choose them by.
	Destinations map[string]string
	Timeout      time.Duration
	Headers      map[string]string
	// UserAgent identifies herald and its version.
	UserAgent string
	// Replica names the herald replica that sends (its leader-election
	// identity), in the Herald-Replica header: a receiver, or an operator
	// reading its log, can tell which replica sent what.
	Replica string
	// Secrets sign each request the Standard Webhooks way; with several
	// (during a rotation) every one signs, and receivers accept any.
	Secrets []string
	// CloudEvents sends a CloudEvents 1.0 structured-mode event.
	CloudEvents bool
	// ClusterName is the payload's cluster (and the CloudEvents source's
	// last segment): the configuration's clusterName.
	ClusterName string
	TLS         sinks.TLSOptions
	// Body, when set, is a template (template.go) that renders the
	// request body instead of herald's payload; ContentType is its type
	// (default application/json).
	Body, ContentType string
}

// Sink is a webhook sink.
type Sink struct {
	opts     Options
	client   *http.Client
	redacted string
	keys     [][]byte
	body     *Body
	now      func() time.Time
}

// New makes a webhook sink with its own HTTP client: shared transports
// (http.DefaultTransport) are neither used nor modified.
func New(opts Options) (*Sink, error) {
	u, err := sinks.ParseURL(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("webhook %s: %w", opts.Name, err)
	}
	client, err := sinks.NewHTTPClient(opts.Timeout, opts.TLS)
	if err != nil {
		return nil, fmt.Errorf("webhook %s: %w", opts.Name, err)
	}
	s := &Sink{opts: opts, client: client, redacted: sinks.RedactURL(u), now: time.Now}
	if opts.Body != "" {
		if s.body, err = CompileBody(opts.Body); err != nil {
			return nil, fmt.Errorf("webhook %s: body: %w", opts.Name, err)
		}
	}
	for i, secret := range opts.Secrets {
		key, err := SigningKey(secret)
		if err != nil {
			return nil, fmt.Errorf("webhook %s: secrets[%d]: %w", opts.Name, i, err)
		}
		s.keys = append(s.keys, key)
	}
	return s, nil
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.opts.Name }

// Send implements sinks.Sink: 2xx is delivered; 429 and 5xx are retryable
// (honouring Retry-After); any other status is final.
func (s *Sink) Send(ctx context.Context, n incident.Notification) error {
	payload := sinks.NewPayloadIn(n, s.opts.ClusterName)
	payload.Epoch = fence.EpochFrom(ctx)
	contentType := "application/json"
	var body []byte
	var err error
	switch {
	case s.body != nil:
		contentType = cmp.Or(s.opts.ContentType, "application/json")
		body, err = s.body.Render(payload, contentType)
	case s.opts.CloudEvents:
		contentType = "application/cloudevents+json"
		body, err = cloudEvent(payload)
	default:
		body, err = payload.AppendJSON(make([]byte, 0, 1024))
	}
	if err != nil {
		return fmt.Errorf("webhook %s: %w", s.opts.Name, err) // not retried: the same template fails again
	}
	header := http.Header{}
	for k, v := range s.opts.Headers {
		header.Set(k, v)
	}
	header.Set("Content-Type", contentType)
	header.Set("User-Agent", s.opts.UserAgent)
	if s.opts.Replica != "" {
		header.Set("Herald-Replica", s.opts.Replica)
	}
	if payload.Epoch != "" {
		header.Set("Herald-Epoch", payload.Epoch)
	}
	// The idempotency key and signature, as Standard Webhooks name them.
	ts := s.now().Unix()
	header.Set("webhook-id", payload.ID)
	header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	if len(s.keys) > 0 {
		header.Set("webhook-signature", Sign(s.keys, payload.ID, ts, body))
	}
	url, dest := sinks.Pick(n, s.opts.Name, s.opts.Destinations, s.opts.URL)
	what := fmt.Sprintf("webhook %s (%s)", s.opts.Name, s.redacted)
	if dest != "" {
		what = fmt.Sprintf("webhook %s (destination %s)", s.opts.Name, dest)
	}
	answer, err := sinks.Post(ctx, s.client, url, header, body, what)
	if retry, _ := sinks.IsRetryable(err); err != nil && !retry {
		// The receiver's reason (a bad signature, a refused token), with
		// the URL's and the headers' secrets cut out.
		headers := make([]string, 0, len(s.opts.Headers))
		for _, v := range s.opts.Headers {
			headers = append(append(headers, v), strings.Fields(v)...) // "Bearer <token>"
		}
		if why := sinks.ReasonHiding(answer, url, headers...); why != "" {
			return fmt.Errorf("%w: %s", err, why)
		}
	}
	return err
}

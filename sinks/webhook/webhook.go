// Package webhook POSTs herald's JSON payload (docs/payload.md) to an HTTP
// endpoint.
package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// Options configure a webhook sink.
type Options struct {
	Name    string
	URL     string
	Timeout time.Duration
	Headers map[string]string
	// UserAgent identifies herald and its version.
	UserAgent string
	// Secrets sign each request the Standard Webhooks way; with several
	// (during a rotation) every one signs, and receivers accept any.
	Secrets []string
	// CloudEvents sends a CloudEvents 1.0 structured-mode event.
	CloudEvents bool
	TLS         sinks.TLSOptions
}

// Sink is a webhook sink.
type Sink struct {
	opts     Options
	client   *http.Client
	redacted string
	keys     [][]byte
	now      func() time.Time
}

// New makes a webhook sink with its own HTTP client: shared transports
// (http.DefaultTransport) are neither used nor modified.
func New(opts Options) (*Sink, error) {
	u, err := url.Parse(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("webhook %s: invalid URL", opts.Name)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 4
	tlsCfg, err := sinks.ClientTLS(opts.TLS)
	if err != nil {
		return nil, fmt.Errorf("webhook %s: TLS: %w", opts.Name, err)
	}
	if tlsCfg != nil {
		transport.TLSClientConfig = tlsCfg
	}
	s := &Sink{
		opts:     opts,
		client:   &http.Client{Timeout: opts.Timeout, Transport: transport},
		redacted: Redact(u),
		now:      time.Now,
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

// Redact keeps scheme and host of u: webhook URLs often carry their secret
// in the path or query, so logs never show either.
func Redact(u *url.URL) string {
	return u.Scheme + "://" + u.Host + "/<redacted>"
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.opts.Name }

// Send implements sinks.Sink: 2xx is delivered; 429 and 5xx are retryable
// (honouring Retry-After); any other status is final.
func (s *Sink) Send(ctx context.Context, n incident.Notification) error {
	payload := sinks.NewPayload(n)
	var doc any = payload
	contentType := "application/json"
	if s.opts.CloudEvents {
		doc, contentType = cloudEvent(payload), "application/cloudevents+json"
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("webhook %s: encoding payload: %w", s.opts.Name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.opts.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook %s (%s): %v", s.opts.Name, s.redacted, redactErr(err))
	}
	for k, v := range s.opts.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", s.opts.UserAgent)
	// The idempotency key and signature, as Standard Webhooks name them.
	ts := s.now().Unix()
	req.Header.Set("webhook-id", payload.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	if len(s.keys) > 0 {
		req.Header.Set("webhook-signature", Sign(s.keys, payload.ID, ts, body))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		err = fmt.Errorf("webhook %s (%s): %v", s.opts.Name, s.redacted, redactErr(err))
		var certErr *tls.CertificateVerificationError
		if errors.As(err, &certErr) || strings.Contains(err.Error(), "x509:") {
			return err // a wrong certificate will not fix itself: not retried
		}
		return &sinks.Retryable{Err: err}
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return &sinks.Retryable{
			After: retryAfter(resp.Header.Get("Retry-After")),
			Err:   fmt.Errorf("webhook %s (%s): HTTP %d", s.opts.Name, s.redacted, resp.StatusCode),
		}
	default:
		return fmt.Errorf("webhook %s (%s): HTTP %d", s.opts.Name, s.redacted, resp.StatusCode)
	}
}

// redactErr drops the URL that net/http repeats in its errors.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// retryAfter parses a Retry-After header in seconds or as an HTTP date.
func retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	if secs, err := strconv.Atoi(h); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

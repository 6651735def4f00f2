package sinks

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/herald-k8s/herald/internal/fence"
)

// This file is what the HTTP integrations (webhook, alertmanager,
// pagerduty, teams) share: a client of their own and one way to read an
// answer.

// ParseURL reads an integration's address: http or https, with a host.
// The error never repeats the address: it may carry a secret (a token in
// the path or the query).
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, errors.New("invalid URL: want http:// or https:// and a host")
	}
	return u, nil
}

// NewHTTPEndpoint checks the address of an HTTP sink (kind name) and
// makes its client; errors name the sink. The PagerDuty, Teams and
// Opsgenie sinks begin with it.
func NewHTTPEndpoint(kind, name, rawURL string, timeout time.Duration, t TLSOptions) (*http.Client, *url.URL, error) {
	u, err := ParseURL(rawURL)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	client, err := NewHTTPClient(timeout, t)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	return client, u, nil
}

// NewHTTPClient makes a client with its own transport: shared transports
// (http.DefaultTransport) are neither used nor modified. It follows
// redirects only to the same host (SameHostRedirects).
func NewHTTPClient(timeout time.Duration, t TLSOptions) (*http.Client, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 4
	tlsCfg, err := ClientTLS(t)
	if err != nil {
		return nil, fmt.Errorf("TLS: %w", err)
	}
	if tlsCfg != nil {
		transport.TLSClientConfig = tlsCfg
	}
	// Fenced: a request made for a leader whose hold has ended is not sent.
	return &http.Client{Timeout: timeout, Transport: fence.Transport(transport), CheckRedirect: SameHostRedirects}, nil
}

// Post sends body to target and reads the answer the way every HTTP sink
// does: 2xx is delivered; 429 and 5xx are retryable, after the wait a
// Retry-After header asks for; any other status is final; a network error
// is retryable unless the certificate is wrong (that will not fix
// itself). what names the sink in errors ("webhook alerts
// (https://hooks.example.com/<redacted>)"): errors never repeat target,
// which may carry a secret. It returns the start of the answer's body.
func Post(ctx context.Context, client *http.Client, target string, header http.Header, body []byte, what string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", what, RedactURLError(err))
	}
	req.Header = header
	resp, err := client.Do(req)
	if err != nil {
		refused := errors.Is(err, ErrRedirectRefused)
		err = fmt.Errorf("%s: %v", what, RedactURLError(err))
		var certErr *tls.CertificateVerificationError
		if errors.As(err, &certErr) || strings.Contains(err.Error(), "x509:") || refused {
			return nil, err
		}
		return nil, &Retryable{Err: err}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return answer, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return answer, &Retryable{
			After: RetryAfter(resp.Header.Get("Retry-After")),
			Err:   &StatusError{What: what, Code: resp.StatusCode},
		}
	default:
		return answer, &StatusError{What: what, Code: resp.StatusCode}
	}
}

// StatusError is an HTTP answer that was not a success. It leaves the
// answer's body out: a receiver whose URL is a secret may echo its path
// back ("no route for /hooks/…"); sinks whose address is not a secret add
// the receiver's reason with Reason.
type StatusError struct {
	What string
	Code int
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s: HTTP %d", e.What, e.Code) }

// Reason is the first line of an answer's body, shortened, for an error.
func Reason(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// ReasonHiding is Reason for a receiver whose address (or a header) is a
// secret: a receiver may echo the path it did not know or the token it
// refused, so the URL's path and query, each of their parts long enough
// to be a secret, and the given secrets are cut out before the answer is
// shortened. A refusal then still says why ("invalid signature").
func ReasonHiding(answer []byte, rawURL string, secrets ...string) string {
	s := string(answer)
	if u, err := url.Parse(rawURL); err == nil {
		secrets = append(secrets, u.RawQuery, u.EscapedPath(), u.Path)
		for _, part := range strings.Split(u.Path, "/") {
			secrets = append(secrets, part)
		}
		for _, vs := range u.Query() {
			secrets = append(secrets, vs...)
		}
	}
	// Longest first, so that a part inside a longer secret does not
	// leave the rest of it behind.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, v := range secrets {
		if len(v) >= 8 {
			s = strings.ReplaceAll(s, v, "<redacted>")
		}
	}
	return Reason([]byte(s))
}

// RedactURL keeps scheme and host of u: webhook and Workflows URLs carry
// their secret in the path or query, so logs never show either.
func RedactURL(u *url.URL) string {
	return u.Scheme + "://" + u.Host + "/<redacted>"
}

// RedactURLError drops the URL net/http repeats in its errors.
func RedactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// RetryAfter parses a Retry-After header in seconds or as an HTTP date.
func RetryAfter(h string) time.Duration {
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

package sinks

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrRedirectRefused: a receiver answered with a redirect herald does not
// follow. A redirect can send the request — the alert, and headers the
// client does not know to drop (a signature, an API key in a custom
// header) — anywhere the receiver names, so herald follows one only to
// the same host and port, never from https to http, and at most
// maxRedirects times. A refusal is final: the same answer comes again.
var ErrRedirectRefused = errors.New("redirect refused")

const maxRedirects = 5

// SameHostRedirects is an http.Client's CheckRedirect for every sink.
func SameHostRedirects(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	switch {
	case len(via) > maxRedirects:
		return fmt.Errorf("%w: more than %d redirects", ErrRedirectRefused, maxRedirects)
	case req.URL.Host != first.Host:
		// Only the host: the rest of the address may carry a secret.
		return fmt.Errorf("%w: to another host (%s); configure the receiver's final address instead", ErrRedirectRefused, req.URL.Host)
	case first.Scheme == "https" && req.URL.Scheme != "https":
		return fmt.Errorf("%w: from https to %s", ErrRedirectRefused, req.URL.Scheme)
	}
	return nil
}

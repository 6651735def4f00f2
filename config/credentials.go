package config

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Credentials a sink sends: header values read from secrets (headersFrom),
// and no credential over plain http:// unless the sink says insecure:
// true. Anyone on the path of an http:// request — a sidecar, a node, a
// proxy — reads its Authorization header, and a token read once is a
// token kept.

// headerNameRE is an HTTP header field name (a token, RFC 9110).
var headerNameRE = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")

// authHeaders are the headers that carry credentials.
var authHeaders = []string{"authorization", "proxy-authorization"}

// validateHeadersFrom checks and reads a sink's headersFrom (at path p),
// beside its headers in the clear.
func (c *Config) validateHeadersFrom(p string, headers map[string]string, from map[string]*SecretRef, add func(string, string, ...any)) {
	for _, name := range slices.Sorted(maps.Keys(from)) {
		q := p + "." + name
		if !headerNameRE.MatchString(name) {
			add(q, "%q is not a valid header name", name)
			continue
		}
		for h := range headers {
			if strings.EqualFold(h, name) {
				add(q, "header %s is set in headers too; set it in one place", name)
			}
		}
		ref := from[name]
		if ref == nil {
			add(q, "a header from a secret needs {file: …} or {env: …}")
			continue
		}
		c.resolveSecret(q, ref, add)
		if strings.ContainsAny(ref.resolved.Reveal(), "\r\n") {
			add(q, "the secret read for header %s holds a line break; a header value is one line", name)
		}
	}
}

// sendsCredentials says what credential a sink with these headers sends
// ("" if none), by name only.
func sendsCredentials(headers map[string]string, from map[string]*SecretRef) string {
	names := slices.Collect(maps.Keys(headers))
	for name := range from {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if slices.Contains(authHeaders, strings.ToLower(name)) {
			return "the " + name + " header"
		}
	}
	return ""
}

// plainCredentials reports (at path p) a credential sent to raw, an
// http:// address, unless insecure. what says which credential; a
// user:password in the address is one too.
func plainCredentials(p, raw, what string, insecure bool, add func(string, string, ...any)) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || insecure {
		return
	}
	if u.User != nil {
		what = "the user and password in the URL"
	}
	if what == "" {
		return
	}
	add(p, "sends %s over plain http://, where anyone on the path can read it: use https://, or set insecure: true on the sink to accept that", what)
}

// validateCredentials checks, for each sink that authenticates, that it
// does not do so over plain http:// (unless insecure: true), and reads
// the webhook's headersFrom.
func (c *Config) validateCredentials(p string, s *Sink, add func(string, string, ...any)) {
	if w := s.Webhook; w != nil {
		c.validateHeadersFrom(p+".webhook.headersFrom", w.Headers, w.HeadersFrom, add)
		what := sendsCredentials(w.Headers, w.HeadersFrom)
		if w.URLFrom != nil {
			plainCredentials(p+".webhook.urlFrom", w.URLFrom.resolved.Reveal(), what, w.Insecure, add)
		} else {
			plainCredentials(p+".webhook.url", w.URL, what, w.Insecure, add)
		}
		// A destination gets the same headers: never over plain http://,
		// and never to another host, which would hand one receiver's
		// credential to another.
		sinkURL := w.URL
		if w.URLFrom != nil {
			sinkURL = w.URLFrom.resolved.Reveal()
		}
		for _, name := range slices.Sorted(maps.Keys(w.Destinations)) {
			d := w.Destinations[name]
			if d == nil {
				continue
			}
			q, raw := p+".webhook.destinations."+name+".url", d.URL
			if d.URLFrom != nil {
				q, raw = p+".webhook.destinations."+name+".urlFrom", d.URLFrom.resolved.Reveal()
			}
			plainCredentials(q, raw, what, w.Insecure, add)
			if len(w.Headers)+len(w.HeadersFrom) > 0 && !sameHost(sinkURL, raw) {
				add(q, "this destination is on another host than the sink's url, and would get the sink's headers (credentials for that host): make it a webhook sink of its own with its own headers")
			}
		}
	}
	if a := s.Alertmanager; a != nil {
		what := ""
		switch {
		case a.BasicAuth != nil:
			what = "basic auth"
		case a.BearerToken != nil:
			what = "a bearer token"
		}
		for i, u := range a.URLs {
			plainCredentials(fmt.Sprintf("%s.alertmanager.urls[%d]", p, i), u, what, a.Insecure, add)
		}
	}
	if sl := s.Slack; sl != nil && sl.Token != nil && sl.APIURL != "" {
		plainCredentials(p+".slack.apiURL", sl.APIURL, "the bot token", sl.Insecure, add)
	}
}

// sameHost reports whether two URLs name the same host and port; true
// when either is not known (a secret not read offline).
func sameHost(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if a == "" || b == "" || errA != nil || errB != nil {
		return true
	}
	return strings.EqualFold(ua.Host, ub.Host)
}

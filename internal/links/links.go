// Package links fills the team's own links (a Grafana dashboard, a log
// search, a runbook wiki) from an incident, for a rule's or a route's
// messages. A link is a Go template of a URL; what it is filled with
// comes from the cluster (names, labels), so every value is URL-escaped
// before it goes in, the result is made a valid URL, and only http and
// https links leave herald.
package links

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/herald-k8s/herald/config"
)

// Link is a filled link, as messages show it.
type Link struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// MaxURL bounds a filled link: Teams refuses an action's URL past 2,000
// characters, and a longer one is a template gone wrong.
const MaxURL = 2000

// Lead is how long before the problem began a link's time window opens:
// the minutes before a failure are where its cause shows.
const Lead = 15 * time.Minute

// Set is a compiled list of links.
type Set []compiled

type compiled struct {
	name string
	url  *template.Template
}

// Data is what a link's template sees (docs/routing.md, Links). Every
// string is already URL-escaped (a query's escaping: safe in a path
// segment and a query alike), so templates put them in as they are.
type Data struct {
	Cluster                string
	Namespace, Kind, Name  string
	Container              string
	Rule, Reason, Severity string
	// Workload is Kind/Name of the object's workload (a pod's
	// Deployment, StatefulSet, DaemonSet or Job; a workload itself).
	Workload                   string
	WorkloadKind, WorkloadName string
	// Labels are the object's labels (a pod's include its workload's
	// template labels: app, app.kubernetes.io/name …).
	Labels map[string]string
	// From and To are the incident's time window: Lead before the
	// problem began, to when the link was filled. FromMs and ToMs are
	// Unix milliseconds (Grafana, Datadog), FromISO and ToISO RFC 3339
	// in UTC (Kibana, Loki).
	From, To       time.Time
	FromMs, ToMs   int64
	FromISO, ToISO string
}

// Window sets the time fields: from Lead before since (now when the
// problem's start is unknown) to now.
func (d Data) Window(since, now time.Time) Data {
	if since.IsZero() || since.After(now) {
		since = now
	}
	d.From, d.To = since.Add(-Lead).UTC(), now.UTC()
	d.FromMs, d.ToMs = d.From.UnixMilli(), d.To.UnixMilli()
	d.FromISO, d.ToISO = d.From.Format(time.RFC3339), d.To.Format(time.RFC3339)
	return d
}

// escaped returns d with every string URL-escaped.
func (d Data) escaped() Data {
	e := url.QueryEscape
	out := d
	out.Cluster, out.Namespace, out.Kind, out.Name, out.Container = e(d.Cluster), e(d.Namespace), e(d.Kind), e(d.Name), e(d.Container)
	out.Rule, out.Reason, out.Severity = e(d.Rule), e(d.Reason), e(d.Severity)
	out.Workload, out.WorkloadKind, out.WorkloadName = e(d.Workload), e(d.WorkloadKind), e(d.WorkloadName)
	out.FromISO, out.ToISO = e(d.FromISO), e(d.ToISO)
	if d.Labels != nil {
		out.Labels = make(map[string]string, len(d.Labels))
		for k, v := range d.Labels {
			out.Labels[k] = e(v)
		}
	}
	return out
}

// Sample is what a link is tried on at load: a pod of a Deployment.
func Sample() Data {
	return Data{
		Cluster: "prod-eu", Namespace: "shop", Kind: "Pod", Name: "api-7d9f-x2k4", Container: "api",
		Rule: "pod-crashloop", Reason: "CrashLoopBackOff", Severity: "critical",
		Workload: "Deployment/api", WorkloadKind: "Deployment", WorkloadName: "api",
		Labels: map[string]string{"app": "api", "app.kubernetes.io/name": "api"},
	}.Window(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), time.Date(2026, 1, 2, 3, 10, 0, 0, time.UTC))
}

// posRE finds "template: url:LINE:COL:" in text/template's errors.
var posRE = regexp.MustCompile(`^template: url:(\d+)(?::(\d+))?: (.*)$`)

// execRE finds the position and field of an execution error.
var execRE = regexp.MustCompile(`^url:(\d+):(\d+): executing "url" at <([^>]*)>: (.*)$`)

// Compile compiles the links at p (rules[0].links), and fills each with
// Sample data so that a link that cannot work fails at load, where it is
// written, not at the first alert. A link's scheme must be written out
// (http:// or https://): where a link leads is the configuration's
// choice, never the cluster's.
func Compile(cfg *config.Config, p string, ls []config.Link) (Set, config.Errors) {
	var set Set
	var errs config.Errors
	for i, l := range ls {
		field := fmt.Sprintf("%s[%d].url", p, i)
		t, err := template.New("url").Option("missingkey=zero").Parse(l.URL)
		if err != nil {
			if m := posRE.FindStringSubmatch(err.Error()); m != nil {
				line, _ := strconv.Atoi(m[1])
				col, _ := strconv.Atoi(m[2])
				errs = append(errs, cfg.ErrorInValue(field, line, col, "%s", m[3]))
			} else {
				errs = append(errs, cfg.ErrorAt(field, "%v", err))
			}
			continue
		}
		lower := strings.ToLower(strings.TrimSpace(l.URL))
		if !strings.HasPrefix(lower, "https://") && !strings.HasPrefix(lower, "http://") {
			errs = append(errs, cfg.ErrorAt(field, "a link must begin with http:// or https://, written out (not from a template's field)"))
			continue
		}
		c := compiled{name: l.Name, url: t}
		_, err = c.fill(Sample())
		var notURL *urlError
		if errors.As(err, &notURL) && strings.Contains(l.URL, "{{") {
			// The sample's names and labels are not the cluster's: a
			// link filled from a label the sample lacks is checked
			// when it is filled.
			err = nil
		}
		if err != nil {
			const fields = "the fields: .Cluster .Namespace .Kind .Name .Container .Rule .Reason .Severity .Workload .WorkloadKind .WorkloadName .Labels .From .To .FromMs .ToMs .FromISO .ToISO"
			if m := execRE.FindStringSubmatch(err.Error()); m != nil {
				line, _ := strconv.Atoi(m[1])
				col, _ := strconv.Atoi(m[2])
				errs = append(errs, cfg.ErrorInValue(field, line, col, "%s: %s (filling it for a sample incident; %s)", m[3], m[4], fields))
			} else {
				errs = append(errs, cfg.ErrorAt(field, "filled for a sample incident (a pod of Deployment shop/api), it %v; %s", err, fields))
			}
			continue
		}
		set = append(set, c)
	}
	return set, errs
}

// Render fills every link of the sets, in order, at most
// config.MaxLinks, the first of a name kept. A link that fails is left
// out and its error returned (the notification goes without it).
func Render(d Data, sets ...Set) (out []Link, errs []error) {
	e := d.escaped()
	seen := map[string]bool{}
	for _, s := range sets {
		for _, c := range s {
			if seen[c.name] || len(out) == config.MaxLinks {
				continue
			}
			u, err := c.fill(e)
			if err != nil {
				errs = append(errs, fmt.Errorf("link %q: %w", c.name, err))
				continue
			}
			seen[c.name] = true
			out = append(out, Link{Name: c.name, URL: u})
		}
	}
	return out, errs
}

// fill executes the template on d (already escaped) and checks the URL.
func (c compiled) fill(d Data) (string, error) {
	var b strings.Builder
	if err := c.url.Execute(&b, d); err != nil {
		return "", errors.New(strings.TrimPrefix(err.Error(), "template: "))
	}
	u, err := Check(b.String())
	if err != nil {
		return "", &urlError{err}
	}
	return u, nil
}

// urlError is a link filled, but not with a URL herald sends.
type urlError struct{ error }

func (e *urlError) Unwrap() error { return e.error }

// Check makes s a valid URL — every byte a URL may not hold
// percent-encoded, so a template's JSON or Lucene query survives Slack's
// and Teams' URL checks — and refuses anything but an absolute http or
// https URL of at most MaxURL bytes.
func Check(s string) (string, error) {
	s = encodeInvalid(strings.TrimSpace(s))
	if len(s) > MaxURL {
		return "", fmt.Errorf("renders a URL of %d bytes; at most %d", len(s), MaxURL)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("renders %q, not a URL: %v", s, err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("renders %q: a link must be an http:// or https:// address", s)
	}
	return s, nil
}

// encodeInvalid percent-encodes the bytes RFC 3986 does not allow in a
// URL (spaces, quotes, braces, non-ASCII, controls), keeping those it
// does and a % that starts an escape (one the template made).
func encodeInvalid(s string) string {
	const allowed = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;="
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		escape := s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2])
		if escape || strings.IndexByte(allowed, s[i]) >= 0 {
			b.WriteByte(s[i])
		} else {
			fmt.Fprintf(&b, "%%%02X", s[i])
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

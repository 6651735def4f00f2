package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// nameRE keeps rule and sink names usable as metric labels and in
// fingerprints.
var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

var severities = map[string]bool{"info": true, "warning": true, "critical": true}

// validate checks what the types alone cannot. What belongs to other
// packages (which detectors exist for a kind) is checked where it is
// compiled, through ErrorAt.
func (c *Config) validate() Errors {
	var errs Errors
	add := func(path, format string, args ...any) { errs = append(errs, c.ErrorAt(path, format, args...)) }

	if c.Workers < 1 || c.Workers > 256 {
		add("workers", "must be between 1 and 256, got %d", c.Workers)
	}

	switch c.Incidents.Startup {
	case "digest", "notify", "silent":
	default:
		add("incidents.startup", "must be digest, notify or silent; got %q", c.Incidents.Startup)
	}
	c.Context.validate(add)
	c.VolumeStats.validate(add)
	c.validateInhibit(add)
	c.validateSilences(add)
	if s := *c.Incidents.Flapping.Starts; s < 0 || s == 1 {
		add("incidents.flapping.starts", "must be 2 or more (or 0 to turn flap damping off), got %d", s)
	}
	if n := *c.Incidents.MaxOpenPerNamespace; n < 0 {
		add("incidents.maxOpenPerNamespace", "must be 0 (no cap) or more, got %d", n)
	}
	if !nameRE.MatchString(c.Incidents.LedgerName) || len(c.Incidents.LedgerName) > 40 {
		add("incidents.ledgerName", "%q is not a valid ConfigMap name prefix (lower-case letters, digits, '-'; at most 40)", c.Incidents.LedgerName)
	}

	sinkNames := map[string]bool{}
	for i, s := range c.Sinks {
		p := fmt.Sprintf("sinks[%d]", i)
		checkName(p, "sink", "", s.Name, sinkNames, add)
		if s.Name != "" {
			sinkNames[s.Name] = true
		}
		types := 0
		for _, set := range []bool{s.Webhook != nil, s.Slack != nil, s.NATS != nil, s.Stdout != nil, s.Alertmanager != nil, s.PagerDuty != nil, s.Teams != nil, s.Opsgenie != nil, s.Email != nil} {
			if set {
				types++
			}
		}
		if types != 1 {
			add(p, "a sink needs exactly one of: webhook, slack, nats, alertmanager, pagerduty, teams, opsgenie, email, stdout")
		}
		if s.RateLimit < 0 {
			add(p+".rateLimit", "must not be negative")
		}
		if s.QueueSize < 1 {
			add(p+".queueSize", "must be at least 1")
		}
		if w := s.Webhook; w != nil {
			c.validateURLOrSecret(p+".webhook", w.URL, w.URLFrom, add)
			for j := range w.Secrets {
				c.resolveSecret(fmt.Sprintf("%s.webhook.secrets[%d]", p, j), &w.Secrets[j], add)
			}
			c.validateTLS(p+".webhook.tls", w.TLS, add)
			if w.Body != "" && w.CloudEvents {
				add(p+".webhook.body", "a templated body replaces the payload; it cannot also be a CloudEvent (remove cloudEvents or body)")
			}
			if w.ContentType != "" && w.Body == "" {
				add(p+".webhook.contentType", "contentType applies to a templated body; herald's own payload is application/json")
			}
		}
		c.validateDestinations(p, &c.Sinks[i], add)
		if o := s.Opsgenie; o != nil {
			c.validateOpsgenie(p, o, add)
		}
		if e := s.Email; e != nil {
			c.validateEmail(p, e, add)
		}
		c.validateSinkDestinations(p, &c.Sinks[i], add)
		c.validateCredentials(p, &c.Sinks[i], add)
		if sl := s.Slack; sl != nil {
			switch {
			case (sl.Token == nil) == (sl.WebhookURL == nil):
				add(p+".slack", "set token (bot token: messages are updated in place) or webhookURL (incoming webhook), not both")
			case sl.Token != nil:
				c.resolveSecret(p+".slack.token", sl.Token, add)
				if sl.Channel == "" {
					add(p+".slack", "a bot token needs a default channel, e.g. channel: \"#alerts\"")
				}
			default:
				c.resolveSecret(p+".slack.webhookURL", sl.WebhookURL, add)
			}
			if sl.APIURL != "" {
				validateURL(p+".slack.apiURL", sl.APIURL, add)
			}
			c.validateInteractive(p+".slack.interactive", sl, add)
			if sl.Token != nil && strings.HasPrefix(sl.Token.resolved.Reveal(), "xapp-") {
				add(p+".slack.token", "this is an app-level token (xapp-…): token takes the bot token (xoxb-…, OAuth & Permissions page); the app-level token goes under interactive.appToken")
			}
		}
		if n := s.NATS; n != nil {
			if n.URL == "" {
				add(p+".nats", "a NATS sink needs a url, e.g. nats://nats:4222")
			} else if u, err := url.Parse(strings.Split(n.URL, ",")[0]); err != nil || (u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss") {
				add(p+".nats.url", "must be nats://, tls://, ws:// or wss:// host:port")
			}
			if strings.ContainsAny(n.Subject, " \t*>") {
				add(p+".nats.subject", "a publish subject cannot contain spaces or wildcards: %q", n.Subject)
			}
			for field, ref := range map[string]*SecretRef{"creds": n.Creds, "nkeySeed": n.NKeySeed} {
				if ref == nil {
					continue
				}
				if ref.File == "" {
					add(p+".nats."+field, "NATS reads credentials from a file: use file: (a mounted Secret)")
					continue
				}
				c.resolveSecret(p+".nats."+field, ref, add)
			}
			c.validateTLS(p+".nats.tls", n.TLS, add)
		}
		if s.Stdout != nil && s.Stdout.Format != "text" && s.Stdout.Format != "json" {
			add(p+".stdout.format", "must be text or json, got %q", s.Stdout.Format)
		}
	}

	if len(c.Rules) == 0 {
		add("rules", "at least one rule is needed")
	}
	ruleNames := map[string]bool{}
	for i, r := range c.Rules {
		p := fmt.Sprintf("rules[%d]", i)
		checkName(p, "rule", "", r.Name, ruleNames, add)
		validateLinks(p+".links", r.Links, add)
		if r.Schedule != nil {
			c.Rules[i].Schedule.compile(p+".schedule", add)
		}
		errs = append(errs, c.validateExclude(p+".exclude", r.Exclude)...)
		if r.Name != "" {
			ruleNames[r.Name] = true
		}
		if r.Kind == "" {
			add(p, "a rule needs a kind, e.g. kind: Pod")
		}
		switch {
		case r.Detector == "" && r.Condition == "":
			add(p, "a rule needs a detector (e.g. detector: crashloop) or a CEL condition")
		case r.Detector != "" && r.Condition != "":
			add(p+".condition", "a rule has either a detector or a condition, not both")
		}
		if r.GroupBy != "" && r.GroupBy != "workload" {
			add(p+".groupBy", "the only grouping is workload; got %q", r.GroupBy)
		}
		if r.RestartStep < -1 {
			add(p+".restartStep", "must be a positive step, or -1 for never; got %d", r.RestartStep)
		}
		if r.Settle != nil && r.Detector != "crashloop" {
			add(p+".settle", "settle applies to the crashloop detector only")
		}
		if len(r.Except) > 0 && r.Detector != "crashloop" {
			add(p+".except", "except applies to the crashloop detector only")
		}
		for j, reason := range r.Except {
			if reason == "" {
				add(fmt.Sprintf("%s.except[%d]", p, j), "a termination reason, e.g. OOMKilled, must not be empty")
			}
		}
		if r.Threshold < 0 {
			add(p+".threshold", "must not be negative, got %d", r.Threshold)
		}
		if !severities[r.Severity] {
			add(p+".severity", "must be one of info, warning, critical; got %q", r.Severity)
		}
		for j, ns := range append(append([]string{}, r.Namespaces.Include...), r.Namespaces.Exclude...) {
			if _, err := path.Match(ns, ""); err != nil {
				field := "include"
				k := j
				if j >= len(r.Namespaces.Include) {
					field, k = "exclude", j-len(r.Namespaces.Include)
				}
				add(fmt.Sprintf("%s.namespaces.%s[%d]", p, field, k), "bad namespace pattern %q: %v", ns, err)
			}
		}
		if len(r.Sinks) == 0 && !c.HasCatchAll() {
			add(p, "a rule needs at least one sink in sinks: (or a last route that takes everything)")
		}
		validateLabels(p+".alertLabels", r.AlertLabels, add)
		for j, name := range r.Sinks {
			if !sinkNames[name] {
				defined := strings.Join(slices.Sorted(maps.Keys(sinkNames)), ", ")
				if defined == "" {
					defined = "none (add a sinks: list)"
				}
				add(fmt.Sprintf("%s.sinks[%d]", p, j), "unknown sink %q; defined sinks: %s", name, defined)
			}
		}
	}
	c.validateRoutes(add)
	c.validateIntake(sinkNames, add)
	return errs
}

// checkName checks the name of the sink, rule or route (what) at p: set,
// usable as a metric label and in fingerprints, and not seen before in
// seen (which it does not record: callers do, as they need). why says,
// when set, what the name is for.
func checkName(p, what, why, name string, seen map[string]bool, add func(string, string, ...any)) {
	switch {
	case name == "":
		add(p, "a %s needs a name%s", what, why)
	case !nameRE.MatchString(name):
		add(p+".name", "%q is not a valid name: use lower-case letters, digits and '-'", name)
	case seen[name]:
		add(p+".name", "%s name %q is used twice", what, name)
	}
}

func validateURL(p, raw string, add func(string, string, ...any)) {
	if raw == "" {
		add(p, "a webhook needs a url")
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse repeats the whole URL, which may hold a token.
		add(p, "not a valid URL: check for spaces or stray characters")
		return
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		add(p, "URL must start with http:// or https://")
		return
	}
	if u.Host == "" {
		add(p, "URL has no host")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			add(p, "URL port %s is not between 1 and 65535", port)
		}
	}
}

// validateURLOrSecret checks a URL given in the clear (url) or read
// from a secret (urlFrom), at path p.
func (c *Config) validateURLOrSecret(p, url string, from *SecretRef, add func(string, string, ...any)) {
	switch {
	case from != nil && url != "":
		add(p+".url", "set url or urlFrom, not both")
	case from != nil:
		c.resolveSecret(p+".urlFrom", from, add)
		if v := from.resolved; v != "" {
			validateURL(p+".urlFrom", v.Reveal(), add)
		}
	default:
		validateURL(p+".url", url, add)
	}
}

// resolveSecret reads a secret reference, reporting where it is broken.
func (c *Config) resolveSecret(p string, r *SecretRef, add func(string, string, ...any)) {
	set := 0
	for _, v := range []string{r.File, r.Env, r.Value} {
		if v != "" {
			set++
		}
	}
	switch {
	case set != 1:
		add(p, "set exactly one of file (a mounted Secret), env, or value")
	case r.Value != "" && !r.AllowPlaintext:
		add(p+".value", "a secret in the config body needs allowPlaintext: true; prefer file: or env:")
	case r.Value != "":
		r.resolved = Secret(r.Value)
		c.need(p, "value in the configuration (allowPlaintext)")
	case c.unread(p) && r.Env != "":
		c.need(p, "env "+r.Env)
	case c.unread(p):
		c.need(p, "file "+r.File)
	case r.Env != "":
		v, ok := os.LookupEnv(r.Env)
		if !ok || strings.TrimSpace(v) == "" {
			add(p+".env", "environment variable %s is not set or empty", r.Env)
		}
		r.resolved = Secret(strings.TrimSpace(v))
	default:
		data, err := os.ReadFile(r.File)
		if err != nil {
			add(p+".file", "cannot read the secret: %v", errors.Unwrap(err))
			return
		}
		if len(strings.TrimSpace(string(data))) == 0 {
			add(p+".file", "the secret file %s is empty", r.File)
		}
		r.resolved = Secret(strings.TrimSpace(string(data)))
	}
}

// need records, offline, what the configuration will read at start.
func (c *Config) need(path, source string) {
	if c.unread(path) {
		c.needs = append(c.needs, Need{Path: path, Source: source})
	}
}

// unread says whether the secret or file at path is left unread:
// offline, every one; for one sink (LoadForSink), every one outside it.
func (c *Config) unread(path string) bool {
	return c.offline || (c.onlySink != "" && !strings.HasPrefix(path, c.onlySink))
}

func (c *Config) validateTLS(p string, t TLSConfig, add func(string, string, ...any)) {
	for _, f := range []struct{ field, path string }{{"caFile", t.CAFile}, {"certFile", t.CertFile}, {"keyFile", t.KeyFile}} {
		switch {
		case f.path == "":
		case c.unread(p):
			c.need(p+"."+f.field, "file "+f.path)
		default:
			if _, err := os.Stat(f.path); err != nil {
				add(p+"."+f.field, "cannot read %s: %v", f.path, errors.Unwrap(err))
			}
		}
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		add(p, "a client certificate needs both certFile and keyFile")
	}
}

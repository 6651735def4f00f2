package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"
)

// The on-call destinations: Alertmanager, PagerDuty and Microsoft Teams.
// Each is one sink type; its integration lives in sinks/<type>.

// AlertmanagerSink posts alerts to Alertmanager's API (/api/v2/alerts), to
// every URL (a highly available Alertmanager is several replicas that each
// must hear of every alert, as Prometheus sends them).
type AlertmanagerSink struct {
	// URLs are the replicas' base addresses, e.g. http://alertmanager:9093.
	URLs []string `yaml:"urls"`
	// ResendInterval re-posts firing alerts while they are open (default
	// 1m): Alertmanager resolves an alert it has not heard of within its
	// resolve_timeout (default 5m).
	ResendInterval time.Duration `yaml:"resendInterval"`
	// Labels are added to every alert (e.g. team: platform); a rule's
	// alertLabels add more.
	Labels map[string]string `yaml:"labels"`
	// ClusterName is the cluster label, to tell clusters apart.
	ClusterName string `yaml:"clusterName"`
	// GeneratorURL is the alert's link back (e.g. a dashboard).
	GeneratorURL string `yaml:"generatorURL"`
	// BasicAuth or BearerToken authenticate to an Alertmanager behind a
	// proxy; both read their secret from a file or the environment.
	BasicAuth   *BasicAuth `yaml:"basicAuth"`
	BearerToken *SecretRef `yaml:"bearerToken"`
	// Insecure allows basicAuth or bearerToken over plain http://.
	Insecure bool      `yaml:"insecure"`
	TLS      TLSConfig `yaml:"tls"`
	// Timeout bounds one request to one replica (default 10s).
	Timeout time.Duration `yaml:"timeout"`
}

// BasicAuth is a user name and a password from a secret.
type BasicAuth struct {
	Username string     `yaml:"username"`
	Password *SecretRef `yaml:"password"`
}

// PagerDutySink triggers and resolves PagerDuty alerts through the Events
// API v2; the incident's ID is the dedup key.
type PagerDutySink struct {
	// RoutingKey is the Events API v2 integration key of a service.
	RoutingKey *SecretRef `yaml:"routingKey"`
	// URL overrides the Events API address (proxies, tests; default
	// https://events.pagerduty.com/v2/enqueue).
	URL string `yaml:"url"`
	// ClusterName is the alert's source prefix and group.
	ClusterName string        `yaml:"clusterName"`
	Timeout     time.Duration `yaml:"timeout"`
	TLS         TLSConfig     `yaml:"tls"`
	// Destinations are other services' routing keys routes may choose.
	Destinations map[string]*Destination `yaml:"destinations"`
}

// TeamsSink posts an Adaptive Card to a Microsoft Teams Workflows
// (Power Automate) webhook.
type TeamsSink struct {
	// URL, or URLFrom: a Workflows URL carries its signature in the query,
	// so it is best kept in a Secret.
	URL         string        `yaml:"url"`
	URLFrom     *SecretRef    `yaml:"urlFrom"`
	ClusterName string        `yaml:"clusterName"`
	Timeout     time.Duration `yaml:"timeout"`
	TLS         TLSConfig     `yaml:"tls"`
	// Destinations are other Workflows URLs routes may choose.
	Destinations map[string]*Destination `yaml:"destinations"`
}

// Defaults of the destinations.
const (
	DefaultResendInterval = time.Minute
	DefaultPagerDutyURL   = "https://events.pagerduty.com/v2/enqueue"
)

// labelNameRE is Prometheus' label name syntax, which Alertmanager
// enforces.
var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// defaultClusterName gives the sinks that show a cluster the top-level
// clusterName, unless they name their own.
func (s *Sink) defaultClusterName(name string) {
	var field *string
	switch {
	case s.Slack != nil:
		field = &s.Slack.ClusterName
	case s.Alertmanager != nil:
		field = &s.Alertmanager.ClusterName
	case s.PagerDuty != nil:
		field = &s.PagerDuty.ClusterName
	case s.Teams != nil:
		field = &s.Teams.ClusterName
	case s.Opsgenie != nil:
		field = &s.Opsgenie.ClusterName
	case s.Email != nil:
		field = &s.Email.ClusterName
	}
	if field != nil && *field == "" {
		*field = name
	}
}

func (s *Sink) defaultDestinations() {
	if a := s.Alertmanager; a != nil {
		if a.ResendInterval == 0 {
			a.ResendInterval = DefaultResendInterval
		}
		if a.Timeout == 0 {
			a.Timeout = DefaultWebhookTimeout
		}
	}
	if p := s.PagerDuty; p != nil {
		if p.URL == "" {
			p.URL = DefaultPagerDutyURL
		}
		if p.Timeout == 0 {
			p.Timeout = DefaultWebhookTimeout
		}
	}
	if t := s.Teams; t != nil && t.Timeout == 0 {
		t.Timeout = DefaultWebhookTimeout
	}
	if o := s.Opsgenie; o != nil {
		o.applyDefaults()
	}
	if e := s.Email; e != nil {
		e.applyDefaults()
	}
}

// validateDestinations checks the alertmanager, pagerduty and teams blocks
// of the sink at path p.
func (c *Config) validateDestinations(p string, s *Sink, add func(string, string, ...any)) {
	if a := s.Alertmanager; a != nil {
		p := p + ".alertmanager"
		if len(a.URLs) == 0 {
			add(p, "an alertmanager sink needs urls: the base address of every replica, e.g. [http://alertmanager:9093]")
		}
		for i, u := range a.URLs {
			validateURL(fmt.Sprintf("%s.urls[%d]", p, i), u, add)
		}
		if a.ResendInterval < time.Second {
			add(p+".resendInterval", "must be at least 1s (and well below Alertmanager's resolve_timeout, 5m by default)")
		}
		validateLabels(p+".labels", a.Labels, add)
		if a.GeneratorURL != "" {
			validateURL(p+".generatorURL", a.GeneratorURL, add)
		}
		if a.BasicAuth != nil && a.BearerToken != nil {
			add(p, "set basicAuth or bearerToken, not both")
		}
		if b := a.BasicAuth; b != nil {
			if b.Username == "" {
				add(p+".basicAuth.username", "basic auth needs a username")
			}
			if b.Password == nil {
				add(p+".basicAuth", "basic auth needs a password: {file: /etc/herald/am-password}")
			} else {
				c.resolveSecret(p+".basicAuth.password", b.Password, add)
			}
		}
		if a.BearerToken != nil {
			c.resolveSecret(p+".bearerToken", a.BearerToken, add)
		}
		c.validateTLS(p+".tls", a.TLS, add)
	}
	if d := s.PagerDuty; d != nil {
		p := p + ".pagerduty"
		if d.RoutingKey == nil {
			add(p, "a pagerduty sink needs a routingKey (the Events API v2 integration key): {file: /etc/herald/pagerduty-key} or {env: PAGERDUTY_ROUTING_KEY}")
		} else {
			c.resolveSecret(p+".routingKey", d.RoutingKey, add)
			if k := d.RoutingKey.resolved; k != "" && len(k.Reveal()) != 32 {
				add(p+".routingKey", "a PagerDuty integration key is 32 characters; the one read has %d", len(k.Reveal()))
			}
		}
		validateURL(p+".url", d.URL, add)
		c.validateTLS(p+".tls", d.TLS, add)
	}
	if t := s.Teams; t != nil {
		p := p + ".teams"
		if t.URL == "" && t.URLFrom == nil {
			add(p, "a teams sink needs the Workflows webhook URL: urlFrom: {file: /etc/herald/teams-url} (it carries a signature)")
		} else {
			c.validateURLOrSecret(p, t.URL, t.URLFrom, add)
		}
		c.validateTLS(p+".tls", t.TLS, add)
	}
}

// validateLabels checks label names and values for Alertmanager.
func validateLabels(p string, labels map[string]string, add func(string, string, ...any)) {
	for _, name := range slices.Sorted(maps.Keys(labels)) {
		if !labelNameRE.MatchString(name) {
			add(p+"."+name, "%q is not a valid label name: letters, digits and _, not starting with a digit", name)
		}
		if labels[name] == "" {
			add(p+"."+name, "an empty label value means no label; remove %s or give it a value", name)
		}
	}
}

package config

import (
	"fmt"
	"slices"
	"time"
)

// OpsgenieSink creates, acknowledges and closes alerts through the Alert
// API v2 of Opsgenie, or of Jira Service Management's operations (its
// successor, the same API under another address); the incident's ID is
// the alert's alias.
type OpsgenieSink struct {
	// APIKey is an API integration's key (sent as "GenieKey <key>").
	APIKey *SecretRef `yaml:"apiKey"`
	// Region is us (api.opsgenie.com, the default) or eu
	// (api.eu.opsgenie.com); URL overrides both: Jira Service
	// Management's is https://api.atlassian.com/jsm/ops/integration.
	Region string `yaml:"region"`
	URL    string `yaml:"url"`
	// Responders are who the alert is for: teams, users, escalations or
	// schedules, by name (a user by username).
	Responders []OpsgenieResponder `yaml:"responders"`
	// Tags are added to every alert (the rule, the reason and the
	// severity always are).
	Tags        []string      `yaml:"tags"`
	ClusterName string        `yaml:"clusterName"`
	Timeout     time.Duration `yaml:"timeout"`
	TLS         TLSConfig     `yaml:"tls"`
	// Insecure allows a url of plain http:// (a proxy on loopback): the
	// key travels in every request's header.
	Insecure bool `yaml:"insecure"`
}

// OpsgenieResponder is one responder of an alert.
type OpsgenieResponder struct {
	Type string `yaml:"type"` // team, user, escalation or schedule
	Name string `yaml:"name"` // a user's username (their e-mail)
}

// The Opsgenie Alert API's addresses.
const (
	OpsgenieUS = "https://api.opsgenie.com"
	OpsgenieEU = "https://api.eu.opsgenie.com"
)

func (o *OpsgenieSink) applyDefaults() {
	if o.URL == "" {
		o.URL = OpsgenieUS
		if o.Region == "eu" {
			o.URL = OpsgenieEU
		}
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultWebhookTimeout
	}
}

func (c *Config) validateOpsgenie(p string, o *OpsgenieSink, add func(string, string, ...any)) {
	p += ".opsgenie"
	if o.APIKey == nil {
		add(p, "an opsgenie sink needs an apiKey (an API integration's key): {file: /var/run/secrets/herald/opsgenie/api-key} or {env: OPSGENIE_API_KEY}")
	} else {
		c.resolveSecret(p+".apiKey", o.APIKey, add)
	}
	if o.Region != "" && o.Region != "us" && o.Region != "eu" {
		add(p+".region", "must be us or eu (or set url: Jira Service Management's is https://api.atlassian.com/jsm/ops/integration); got %q", o.Region)
	}
	validateURL(p+".url", o.URL, add)
	plainCredentials(p+".url", o.URL, "the API key (Authorization: GenieKey)", o.Insecure, add)
	plainCredentials(p+".url", o.URL, "the API key (Authorization: GenieKey)", o.Insecure, add)
	for i, r := range o.Responders {
		rp := fmt.Sprintf("%s.responders[%d]", p, i)
		if !slices.Contains([]string{"team", "user", "escalation", "schedule"}, r.Type) {
			add(rp+".type", "must be team, user, escalation or schedule; got %q", r.Type)
		}
		if r.Name == "" {
			add(rp+".name", "a responder needs a name (a user's username)")
		}
	}
	if len(o.Tags) > 15 {
		add(p+".tags", "at most 15 (Opsgenie keeps 20 tags, and herald adds the rule, reason, severity, cluster and namespace)")
	}
	for i, t := range o.Tags {
		if t == "" || len(t) > 50 {
			add(fmt.Sprintf("%s.tags[%d]", p, i), "a tag is 1 to 50 characters")
		}
	}
	c.validateTLS(p+".tls", o.TLS, add)
}

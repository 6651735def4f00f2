package config

import "time"

// The sinks: block of the schema.

// Sink is one destination; exactly one of its type blocks is set.
type Sink struct {
	Name    string       `yaml:"name"`
	Webhook *WebhookSink `yaml:"webhook"`
	Slack   *SlackSink   `yaml:"slack"`
	NATS    *NATSSink    `yaml:"nats"`
	Stdout  *StdoutSink  `yaml:"stdout"`
	// The destinations of config/destinations.go.
	Alertmanager *AlertmanagerSink `yaml:"alertmanager"`
	PagerDuty    *PagerDutySink    `yaml:"pagerduty"`
	Teams        *TeamsSink        `yaml:"teams"`
	Opsgenie     *OpsgenieSink     `yaml:"opsgenie"`
	Email        *EmailSink        `yaml:"email"`
	// RateLimit is the most messages per second the sink sends (default:
	// 1 for Slack, the platform's limit per channel; unlimited otherwise).
	// When more wait than it allows in the next few seconds, they go out
	// combined into one digest message.
	RateLimit float64 `yaml:"rateLimit"`
	// MaxAge is how long a notification is retried before herald gives up
	// on it (default 24h).
	MaxAge time.Duration `yaml:"maxAge"`
	// QueueSize bounds the notifications waiting for this sink (default
	// 1024).
	QueueSize int `yaml:"queueSize"`
}

// Type names the sink's integration.
func (s Sink) Type() string {
	switch {
	case s.Webhook != nil:
		return "webhook"
	case s.Slack != nil:
		return "slack"
	case s.NATS != nil:
		return "nats"
	case s.Stdout != nil:
		return "stdout"
	case s.Alertmanager != nil:
		return "alertmanager"
	case s.PagerDuty != nil:
		return "pagerduty"
	case s.Teams != nil:
		return "teams"
	case s.Opsgenie != nil:
		return "opsgenie"
	case s.Email != nil:
		return "email"
	}
	return ""
}

// WebhookSink POSTs the JSON payload documented in docs/payload.md.
type WebhookSink struct {
	// URL, or URLFrom when the URL itself is a secret.
	URL     string     `yaml:"url"`
	URLFrom *SecretRef `yaml:"urlFrom"`
	// Timeout bounds one HTTP request (default 10s).
	Timeout time.Duration `yaml:"timeout"`
	// Headers are added to every request; HeadersFrom too, each value
	// read from a secret (a mounted Secret's file, or env): an
	// Authorization header, an API key.
	Headers     map[string]string     `yaml:"headers"`
	HeadersFrom map[string]*SecretRef `yaml:"headersFrom"`
	// Insecure allows credentials (an Authorization header, a user and
	// password in the URL) over plain http:// (config/credentials.go).
	Insecure bool `yaml:"insecure"`
	// Secrets sign requests the Standard Webhooks way (webhook-signature);
	// several allow rotation. Each is whsec_<base64> or raw bytes.
	Secrets []SecretRef `yaml:"secrets"`
	// CloudEvents sends the payload as a CloudEvents 1.0 structured event.
	CloudEvents bool      `yaml:"cloudEvents"`
	TLS         TLSConfig `yaml:"tls"`
	// Body is a Go template that renders the request body instead of
	// herald's payload, for chat tools with their own JSON (Discord,
	// Google Chat, Mattermost, Rocket.Chat: docs/sinks.md). Its data is
	// the payload; json quotes a value as a JSON string.
	Body string `yaml:"body"`
	// ContentType of a templated body (default application/json).
	ContentType string `yaml:"contentType"`
	// Destinations are other URLs routes may choose (config/routes.go).
	Destinations map[string]*Destination `yaml:"destinations"`
}

// SlackSink posts Block Kit messages, by bot token (chat.postMessage, with
// updates in place) or through an incoming webhook (new messages only).
type SlackSink struct {
	Token      *SecretRef `yaml:"token"`
	WebhookURL *SecretRef `yaml:"webhookURL"`
	// Channel is the default channel (bot token mode).
	Channel string `yaml:"channel"`
	// APIURL overrides Slack's API address (tests, proxies).
	APIURL string `yaml:"apiURL"`
	// ClusterName appears in messages, to tell clusters apart.
	ClusterName string `yaml:"clusterName"`
	// Insecure allows the bot token over a plain http:// apiURL.
	Insecure bool `yaml:"insecure"`
	// Interactive adds buttons to the messages (config/interactive.go).
	Interactive *Interactive `yaml:"interactive"`
}

// NATSSink publishes the webhook payload to NATS or JetStream.
type NATSSink struct {
	URL string `yaml:"url"`
	// Subject template; {namespace}, {kind}, {name}, {reason}, {rule},
	// {severity}, {transition} and {cluster} (the top-level clusterName)
	// are replaced, sanitised to one token.
	// Default herald.{namespace}.{kind}.{reason}.
	Subject string `yaml:"subject"`
	// JetStream waits for the stream's acknowledgement and sets
	// Nats-Msg-Id so the server drops redeliveries.
	JetStream bool       `yaml:"jetstream"`
	Creds     *SecretRef `yaml:"creds"`
	NKeySeed  *SecretRef `yaml:"nkeySeed"`
	TLS       TLSConfig  `yaml:"tls"`
	// Timeout bounds one publish (default 5s).
	Timeout time.Duration `yaml:"timeout"`
}

// TLSConfig configures a client's TLS. Verification is on unless
// InsecureSkipVerify is set (which herald logs as a warning).
type TLSConfig struct {
	CAFile             string `yaml:"caFile"`
	CertFile           string `yaml:"certFile"`
	KeyFile            string `yaml:"keyFile"`
	InsecureSkipVerify bool   `yaml:"insecureSkipVerify"`
}

// SecretRef names where a secret comes from: a file (a mounted Secret) or
// an environment variable; Value in the config body only with
// allowPlaintext: true. Load reads it; the value never prints.
type SecretRef struct {
	File           string `yaml:"file"`
	Env            string `yaml:"env"`
	Value          string `yaml:"value"`
	AllowPlaintext bool   `yaml:"allowPlaintext"`

	resolved Secret
}

// String describes where the secret comes from, never its value.
func (r SecretRef) String() string {
	switch {
	case r.File != "":
		return "file:" + r.File
	case r.Env != "":
		return "env:" + r.Env
	case r.Value != "":
		return "value:<secret>"
	}
	return "<unset>"
}

// GoString is String, so %#v hides the value too.
func (r SecretRef) GoString() string { return r.String() }

// Secret returns the value Load read.
func (r *SecretRef) Secret() Secret {
	if r == nil {
		return ""
	}
	return r.resolved
}

// Secret is a secret value; it formats as <secret> so that it never
// reaches a log, an error or herald validate's output by accident.
type Secret string

func (Secret) String() string   { return "<secret>" }
func (Secret) GoString() string { return "<secret>" }

// Reveal returns the value, for the one place that sends it.
func (s Secret) Reveal() string { return string(s) }

// StdoutSink prints one line per notification.
type StdoutSink struct {
	// Format is text (default) or json.
	Format string `yaml:"format"`
}

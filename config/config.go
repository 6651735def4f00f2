// Package config owns herald's YAML schema: strict decoding (unknown keys are
// errors), defaults, and validation. Every error names the place it comes
// from as file:line:col and the path inside the document, so an operator can
// go straight to the line that needs fixing.
package config

import (
	"fmt"
	"os"
	"time"
)

// Config is the whole configuration file.
type Config struct {
	// Workers is how many reconcile workers run in parallel (default 4).
	Workers int    `yaml:"workers"`
	Rules   []Rule `yaml:"rules"`
	Sinks   []Sink `yaml:"sinks"`

	file string
	pos  positions
}

// Rule says which objects to look at, what counts as a problem, and where
// to send the notification.
type Rule struct {
	Name string `yaml:"name"`
	// Kind of object the rule watches, e.g. Pod.
	Kind string `yaml:"kind"`
	// APIVersion of Kind; defaults to the kind's usual group/version.
	APIVersion string `yaml:"apiVersion"`
	// Detector names a built-in detector, e.g. crashloop.
	Detector string `yaml:"detector"`
	// Severity is info, warning or critical (default warning).
	Severity   string            `yaml:"severity"`
	Namespaces NamespaceSelector `yaml:"namespaces"`
	// Sinks the rule's notifications go to, by name.
	Sinks []string `yaml:"sinks"`
}

// NamespaceSelector limits a rule to some namespaces. Empty Include means
// every namespace; Exclude wins over Include.
type NamespaceSelector struct {
	Include []string `yaml:"include"`
	Exclude []string `yaml:"exclude"`
}

// Sink is one destination; exactly one of its type blocks is set.
type Sink struct {
	Name    string       `yaml:"name"`
	Webhook *WebhookSink `yaml:"webhook"`
	Stdout  *StdoutSink  `yaml:"stdout"`
}

// Type names the sink's integration.
func (s Sink) Type() string {
	switch {
	case s.Webhook != nil:
		return "webhook"
	case s.Stdout != nil:
		return "stdout"
	}
	return ""
}

// WebhookSink POSTs the JSON payload documented in docs/payload.md.
type WebhookSink struct {
	URL string `yaml:"url"`
	// Timeout bounds one HTTP request (default 10s).
	Timeout time.Duration `yaml:"timeout"`
	// Headers are added to every request.
	Headers map[string]string `yaml:"headers"`
}

// StdoutSink prints one line per notification.
type StdoutSink struct {
	// Format is text (default) or json.
	Format string `yaml:"format"`
}

// Defaults applied by Load.
const (
	DefaultWorkers        = 4
	DefaultSeverity       = "warning"
	DefaultWebhookTimeout = 10 * time.Second
	DefaultStdoutFormat   = "text"
)

// Load reads, decodes, defaults and validates the file at path. The error,
// when there is one, is an Errors listing every problem found.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(path, data)
}

// Parse is Load for data already in memory; file is used in error messages.
func Parse(file string, data []byte) (*Config, error) {
	cfg := &Config{file: file, pos: positions{}}
	var errs Errors
	decodeDocument(file, data, cfg, cfg.pos, &errs)
	if len(errs) > 0 {
		return nil, errs.sorted()
	}
	cfg.applyDefaults()
	errs = cfg.validate()
	if len(errs) > 0 {
		return nil, errs.sorted()
	}
	return cfg, nil
}

// ErrorAt makes an error located at the node at path (as the decoder
// spelled it, e.g. "rules[0].detector"), or at the nearest enclosing node
// when path itself is absent from the file. Packages that check parts of
// the configuration later (the rule compiler) use it so their errors carry
// positions too.
func (c *Config) ErrorAt(path, format string, args ...any) *Error {
	p := c.pos.nearest(path)
	return &Error{File: c.file, Line: p.Line, Col: p.Col, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// File is the path the configuration was loaded from.
func (c *Config) File() string { return c.file }

func (c *Config) applyDefaults() {
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	for i := range c.Rules {
		r := &c.Rules[i]
		if r.Severity == "" {
			r.Severity = DefaultSeverity
		}
	}
	for i := range c.Sinks {
		s := &c.Sinks[i]
		if s.Webhook != nil && s.Webhook.Timeout == 0 {
			s.Webhook.Timeout = DefaultWebhookTimeout
		}
		if s.Stdout != nil && s.Stdout.Format == "" {
			s.Stdout.Format = DefaultStdoutFormat
		}
	}
}

package config

import (
	"fmt"
	"regexp"
	"time"
)

// Context configures crash context: what herald attaches to a crash alert
// (docs/rules.md#crash-context).
type Context struct {
	// Enabled turns crash context on (default true).
	Enabled *bool       `yaml:"enabled"`
	Logs    ContextLogs `yaml:"logs"`
	Events  struct {
		// Max is how many of the pod's events to attach (default 5).
		Max int `yaml:"max"`
	} `yaml:"events"`
	// Redact are extra regular expressions whose matches are removed
	// from every text herald keeps or sends (findings, log lines, event
	// messages), beside the built-in patterns.
	Redact []string `yaml:"redact"`
	// Wait is the longest a notification waits for its context before it
	// goes out with what has arrived (default 2s).
	Wait time.Duration `yaml:"wait"`
	// Workers gather context for this many notifications at a time
	// (default 4); Rate bounds the API requests per second (default 5).
	Workers int     `yaml:"workers"`
	Rate    float64 `yaml:"rate"`
	// Changes: the "What changed" section (changes.go).
	Changes Changes `yaml:"changes"`
}

// ContextLogs bounds the log lines attached.
type ContextLogs struct {
	// Enabled: attach log lines (default true; needs get on pods/log).
	Enabled  *bool `yaml:"enabled"`
	Lines    int   `yaml:"lines"`
	MaxBytes int   `yaml:"maxBytes"`
}

// RuleContext is a rule's override of the context settings.
type RuleContext struct {
	Enabled *bool `yaml:"enabled"`
	Logs    *bool `yaml:"logs"`
}

// Defaults of the context block.
const (
	DefaultContextLines    = 20
	DefaultContextMaxBytes = 4096
	DefaultContextEvents   = 5
	DefaultContextWait     = 2 * time.Second
	DefaultContextWorkers  = 4
	DefaultContextRate     = 5.0
)

func (c *Context) applyDefaults() {
	c.Enabled = orDefault(c.Enabled, true)
	c.Logs.Enabled = orDefault(c.Logs.Enabled, true)
	if c.Logs.Lines == 0 {
		c.Logs.Lines = DefaultContextLines
	}
	if c.Logs.MaxBytes == 0 {
		c.Logs.MaxBytes = DefaultContextMaxBytes
	}
	if c.Events.Max == 0 {
		c.Events.Max = DefaultContextEvents
	}
	if c.Wait == 0 {
		c.Wait = DefaultContextWait
	}
	if c.Workers == 0 {
		c.Workers = DefaultContextWorkers
	}
	if c.Rate == 0 {
		c.Rate = DefaultContextRate
	}
	c.Changes.applyDefaults()
}

func (c *Context) validate(add func(path, format string, args ...any)) {
	if c.Logs.Lines < 1 || c.Logs.Lines > 500 {
		add("context.logs.lines", "must be between 1 and 500, got %d", c.Logs.Lines)
	}
	if c.Logs.MaxBytes < 256 || c.Logs.MaxBytes > 64<<10 {
		add("context.logs.maxBytes", "must be between 256 and 65536, got %d", c.Logs.MaxBytes)
	}
	if c.Events.Max < 1 || c.Events.Max > 50 {
		add("context.events.max", "must be between 1 and 50, got %d", c.Events.Max)
	}
	if c.Workers < 1 || c.Workers > 64 {
		add("context.workers", "must be between 1 and 64, got %d", c.Workers)
	}
	if c.Rate <= 0 {
		add("context.rate", "must be more than 0 requests per second, got %v", c.Rate)
	}
	c.Changes.validate(add)
	for i, expr := range c.Redact {
		if _, err := regexp.Compile(expr); err != nil {
			add(fmt.Sprintf("context.redact[%d]", i), "not a valid regular expression: %v", err)
		}
	}
}

// LogsOn reports whether the context of the rule's notifications may
// include log lines, and ContextOn whether it gets context at all.
func (c *Config) LogsOn(r Rule) bool {
	return c.ContextOn(r) && isTrue(c.Context.Logs.Enabled) && (r.Context == nil || isTrue(r.Context.Logs))
}

// ContextOn reports whether the rule's notifications get crash context.
func (c *Config) ContextOn(r Rule) bool {
	return isTrue(c.Context.Enabled) && (r.Context == nil || isTrue(r.Context.Enabled))
}

// isTrue reads an optional switch that is on unless set to false.
func isTrue(b *bool) bool { return b == nil || *b }

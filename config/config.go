// Package config owns herald's YAML schema: strict decoding (unknown keys are
// errors), defaults, and validation. Every error names the place it comes
// from as file:line:col and the path inside the document, so an operator can
// go straight to the line that needs fixing.
package config

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the whole configuration file.
type Config struct {
	// ClusterName tells clusters apart: it leads every message's push
	// text and is in every payload (sinks may override it).
	ClusterName string `yaml:"clusterName"`
	// Workers is how many reconcile workers run in parallel (default 4).
	Workers   int       `yaml:"workers"`
	Incidents Incidents `yaml:"incidents"`
	Context   Context   `yaml:"context"`
	Rules     []Rule    `yaml:"rules"`
	Sinks     []Sink    `yaml:"sinks"`
	Inhibit   Inhibit   `yaml:"inhibit"`
	Silences  Silences  `yaml:"silences"`
	// Routes choose, per incident, the sinks and destinations its
	// notifications go to (config/routes.go).
	Routes []Route `yaml:"routes"`
	// Intake takes in alerts from outside the cluster (config/intake.go).
	Intake Intake `yaml:"intake"`
	// VolumeStats tunes the reading of the kubelets' volume stats
	// (config/volumestats.go).
	VolumeStats VolumeStats `yaml:"volumeStats"`

	file  string
	pos   positions
	lines []string // the file's text, to place errors inside values
	// offline: secrets and TLS files are listed, not read (validate
	// --offline, for CI pipelines without the production secrets).
	offline bool
	// onlySink: of the secrets and TLS files, only those under this path
	// ("sinks[3].") are read (LoadForSink); "" reads them all.
	onlySink string
	needs    []Need
}

// Need is a secret or file the configuration reads when herald starts:
// where it is referenced and where it comes from (never its value).
type Need struct {
	Path   string // e.g. sinks[0].slack.token
	Source string // e.g. "env SLACK_BOT_TOKEN", "file /var/run/secrets/herald/slack/token"
}

// Needs lists what the configuration reads at start, in file order: the
// secrets and TLS files a deployment must provide.
func (c *Config) Needs() []Need { return c.needs }

// Incidents tune the incident lifecycle and the ledger.
type Incidents struct {
	// Startup says what happens to the problems found on a first start
	// (empty ledger): digest (default: one summary per sink), notify (one
	// notification each) or silent (recorded, not sent).
	Startup string `yaml:"startup"`
	// ResolveHoldDown is how long a problem must stay gone before its
	// incident resolves; a problem that returns within it continues the
	// same incident. A crash loop's settle time counts towards it.
	// Default 30s; 0s resolves at once.
	ResolveHoldDown *time.Duration `yaml:"resolveHoldDown"`
	// UpdateInterval paces an incident's updates: the first notification
	// goes out at once, later changes within this interval of the last
	// notification are merged into one update sent when it ends. Default
	// 30s; 0s sends every update at once. Rules may override it.
	UpdateInterval *time.Duration `yaml:"updateInterval"`
	// Flapping keeps open an incident whose problem keeps coming back.
	Flapping Flapping `yaml:"flapping"`
	// Retention is how long resolved incidents stay in the ledger
	// (default 24h).
	Retention time.Duration `yaml:"retention"`
	// LedgerName prefixes the ledger's ConfigMaps (default herald-ledger).
	LedgerName string `yaml:"ledgerName"`
	// MaxOpenPerNamespace caps the open incidents of one namespace;
	// problems beyond it are counted in one "too many incidents in
	// namespace X" incident (default 500; 0: no cap).
	MaxOpenPerNamespace *int `yaml:"maxOpenPerNamespace"`
}

// Flapping: an incident whose problem started Starts times within Window
// does not resolve when it clears; it is marked flapping (one update says
// so) and resolves only after Quiet without the problem.
type Flapping struct {
	// Starts is how many starts within Window make an incident flapping
	// (default 3; 0 turns flap damping off).
	Starts *int `yaml:"starts"`
	// Window is how far back starts are counted (default 10m).
	Window time.Duration `yaml:"window"`
	// Quiet is how long a flapping incident's problem must stay gone
	// before it resolves (default 10m).
	Quiet time.Duration `yaml:"quiet"`
}

// Rule says which objects to look at, what counts as a problem, and where
// to send the notification. A rule has either a built-in Detector or a CEL
// Condition.
type Rule struct {
	Name string `yaml:"name"`
	// Kind of object the rule watches, e.g. Pod, or a custom resource's
	// kind together with its APIVersion.
	Kind string `yaml:"kind"`
	// APIVersion of Kind, e.g. apps/v1; defaults to the usual one for
	// built-in kinds and is required for custom resources.
	APIVersion string `yaml:"apiVersion"`
	// Detector names a built-in detector, e.g. crashloop.
	Detector string `yaml:"detector"`
	// Condition is a CEL expression over `object` that is true while the
	// object has the problem.
	Condition string `yaml:"condition"`
	// Reason names the problem a Condition finds (default: the rule name).
	Reason string `yaml:"reason"`
	// For is how long the problem must last before the rule fires; each
	// detector has its own default (0 for most).
	For *time.Duration `yaml:"for"`
	// Threshold is a detector parameter (restarts, warning-events).
	Threshold int `yaml:"threshold"`
	// Window is a detector parameter: how long a past event (an OOM kill,
	// a restart, a Warning event, an eviction) keeps the incident open.
	Window time.Duration `yaml:"window"`
	// Critical is a detector parameter (volume-filling): the percentage
	// full at which a second, critical alert fires (default 90).
	Critical int `yaml:"critical"`
	// Horizon is a detector parameter (volume-filling): alert before the
	// threshold when, at the window's rate, the volume is full within it
	// (default 24h; 0s: no alert from the forecast).
	Horizon *time.Duration `yaml:"horizon"`
	// Reasons is a detector parameter (warning-events): Event reasons to
	// alert on; empty means any Warning.
	Reasons []string `yaml:"reasons"`
	// Settle is a detector parameter (crashloop): how long a container
	// must run and be ready without a new restart before its crash loop
	// counts as over (default 60s; 0s: as soon as it is ready).
	Settle *time.Duration `yaml:"settle"`
	// Except is a detector parameter (crashloop): termination reasons
	// another rule reports, e.g. [OOMKilled] beside an oomkilled rule, so
	// that a container killed for memory again and again is one alert
	// (the OOM kill), not two.
	Except []string `yaml:"except"`
	// UpdateInterval overrides incidents.updateInterval for this rule.
	UpdateInterval *time.Duration `yaml:"updateInterval"`
	// Context overrides the crash context settings for this rule.
	Context *RuleContext `yaml:"context"`
	// RunbookURL is a Go template for the link to this problem's runbook,
	// e.g. https://wiki.example.com/runbooks/{{ .Reason }} (the data of
	// message templates).
	RunbookURL string `yaml:"runbookURL"`
	// Links are the team's own links on this rule's messages (a
	// dashboard, a log search), beside a matching route's.
	Links []Link `yaml:"links"`
	// Severity is info, warning or critical (default warning).
	Severity   string            `yaml:"severity"`
	Namespaces NamespaceSelector `yaml:"namespaces"`
	// Labels is a label selector on the object, in kubectl -l syntax.
	Labels string `yaml:"labels"`
	// Message overrides the default title and text (Go templates).
	Message Message `yaml:"message"`
	// GroupBy: workload makes the pods of one Deployment, StatefulSet,
	// DaemonSet or Job one incident ("api: 3/10 pods CrashLoopBackOff").
	GroupBy string `yaml:"groupBy"`
	// Repeat re-sends a still-firing incident this often (default off).
	Repeat time.Duration `yaml:"repeat"`
	// RestartStep sends an update when a container's restart count has
	// risen this much since the last notification (default 5; -1: never).
	RestartStep int `yaml:"restartStep"`
	// Channel sends this rule's notifications to a Slack channel other
	// than the sink's default (a matching route's channel wins).
	Channel string `yaml:"channel"`
	// Sinks the rule's notifications go to, by name, when no route
	// matches (may be empty when a last route takes everything).
	Sinks []string `yaml:"sinks"`
	// AlertLabels are added to this rule's alerts in Alertmanager (e.g.
	// team: payments), for its routing tree.
	AlertLabels map[string]string `yaml:"alertLabels"`
	// Schedule holds the rule's notifications back during maintenance
	// windows (config/schedule.go).
	Schedule *Schedule `yaml:"schedule"`
	// Exclude drops findings that are known noise (config/exclude.go).
	Exclude *Exclude `yaml:"exclude"`
}

// Message holds Go text/template sources; see docs/rules.md for the data
// and functions they can use.
type Message struct {
	Title string `yaml:"title"`
	Text  string `yaml:"text"`
}

// NamespaceSelector limits a rule to some namespaces. Empty Include means
// every namespace; Exclude wins over Include. Labels selects namespaces by
// their labels (kubectl -l syntax).
type NamespaceSelector struct {
	Include []string `yaml:"include"`
	Exclude []string `yaml:"exclude"`
	Labels  string   `yaml:"labels"`
}

// Defaults applied by Load.
const (
	DefaultWorkers        = 4
	DefaultSeverity       = "warning"
	DefaultWebhookTimeout = 10 * time.Second
	DefaultStdoutFormat   = "text"
	DefaultStartup        = "digest"
	DefaultRetention      = 24 * time.Hour
	DefaultLedgerName     = "herald-ledger"
	DefaultRestartStep    = 5
	DefaultMaxAge         = 24 * time.Hour
	DefaultQueueSize      = 1024
	DefaultSlackRate      = 1.0
	DefaultNATSSubject    = "herald.{namespace}.{kind}.{reason}"
	DefaultNATSTimeout    = 5 * time.Second
	DefaultHoldDown       = 30 * time.Second
	DefaultUpdateInterval = 30 * time.Second
	DefaultFlapStarts     = 3
	DefaultFlapWindow     = 10 * time.Minute
	DefaultFlapQuiet      = 10 * time.Minute
	DefaultMaxOpenPerNS   = 500
)

// related reports whether one path is the other or inside it.
func related(a, b string) bool {
	inside := func(x, y string) bool {
		return x == y || strings.HasPrefix(x, y+".") || strings.HasPrefix(x, y+"[")
	}
	return inside(a, b) || inside(b, a)
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

// ErrorInValue makes an error at a place inside the string value at path:
// line is 1-based and col 0-based within the value, as expression
// compilers report them. It accounts for quotes and block scalars, so a
// CEL type error points at the offending token in the file.
func (c *Config) ErrorInValue(path string, line, col int, format string, args ...any) *Error {
	e := c.ErrorAt(path, format, args...)
	p, ok := c.pos[path]
	if !ok {
		return e
	}
	switch p.style {
	case yaml.LiteralStyle, yaml.FoldedStyle:
		// The value starts on the line after the | or > indicator, at
		// the indentation of its first line.
		e.Line = p.Line + line
		if p.Line < len(c.lines) {
			first := c.lines[p.Line]
			e.Col = len(first) - len(strings.TrimLeft(first, " ")) + col + 1
		}
	case yaml.SingleQuotedStyle, yaml.DoubleQuotedStyle:
		e.Line = p.Line + line - 1
		if line == 1 {
			e.Col = p.Col + 1 + col
		}
	default:
		e.Line = p.Line + line - 1
		if line == 1 {
			e.Col = p.Col + col
		}
	}
	return e
}

// File is the path the configuration was loaded from.
func (c *Config) File() string { return c.file }

func (c *Config) applyDefaults() {
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Incidents.Startup == "" {
		c.Incidents.Startup = DefaultStartup
	}
	if c.Incidents.Retention == 0 {
		c.Incidents.Retention = DefaultRetention
	}
	if c.Incidents.LedgerName == "" {
		c.Incidents.LedgerName = DefaultLedgerName
	}
	c.Context.applyDefaults()
	c.Intake.Alertmanager.applyDefaults()
	c.VolumeStats.applyDefaults()
	inc := &c.Incidents
	inc.ResolveHoldDown = orDefault(inc.ResolveHoldDown, DefaultHoldDown)
	inc.UpdateInterval = orDefault(inc.UpdateInterval, DefaultUpdateInterval)
	inc.Flapping.Starts = orDefault(inc.Flapping.Starts, DefaultFlapStarts)
	inc.MaxOpenPerNamespace = orDefault(inc.MaxOpenPerNamespace, DefaultMaxOpenPerNS)
	if inc.Flapping.Window == 0 {
		inc.Flapping.Window = DefaultFlapWindow
	}
	if inc.Flapping.Quiet == 0 {
		inc.Flapping.Quiet = DefaultFlapQuiet
	}
	for i := range c.Rules {
		r := &c.Rules[i]
		if r.Severity == "" {
			r.Severity = DefaultSeverity
		}
		if r.RestartStep == 0 {
			r.RestartStep = DefaultRestartStep
		}
		r.UpdateInterval = orDefault(r.UpdateInterval, *inc.UpdateInterval)
	}
	for i := range c.Sinks {
		s := &c.Sinks[i]
		s.defaultClusterName(c.ClusterName)
		s.defaultDestinations()
		if s.Webhook != nil && s.Webhook.Timeout == 0 {
			s.Webhook.Timeout = DefaultWebhookTimeout
		}
		if s.Stdout != nil && s.Stdout.Format == "" {
			s.Stdout.Format = DefaultStdoutFormat
		}
		if s.MaxAge == 0 {
			s.MaxAge = DefaultMaxAge
		}
		if s.QueueSize == 0 {
			s.QueueSize = DefaultQueueSize
		}
		if s.Slack != nil && s.RateLimit == 0 {
			s.RateLimit = DefaultSlackRate
		}
		if s.NATS != nil {
			if s.NATS.Subject == "" {
				s.NATS.Subject = DefaultNATSSubject
			}
			if s.NATS.Timeout == 0 {
				s.NATS.Timeout = DefaultNATSTimeout
			}
		}
	}
}

// orDefault returns p, or a pointer to def when p is unset: for settings
// whose zero value means "off", not "default".
func orDefault[T any](p *T, def T) *T {
	if p == nil {
		return &def
	}
	return p
}

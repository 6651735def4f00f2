// Package reload puts a changed configuration file in force without a
// restart: the rules, the routes and the sinks change at run time; what
// is built once at start (workers, incidents, crash context, Slack's
// buttons, the intake) rejects the change as a whole, so a configuration
// is never half applied.
//
// The file is polled, not watched: a mounted ConfigMap changes by a
// swapped symlink, which an inode watch misses.
package reload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/handlers"
	"github.com/herald-k8s/herald/internal/route"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/internal/slackact"
)

// Options are what a Loop needs; Compile and ReplaceSinks are required.
type Options struct {
	Path     string
	Interval time.Duration
	// Current is the configuration in force at start.
	Current    *config.Config
	Controller *handlers.Controller
	Logger     *slog.Logger
	// Registerer takes the loop's two metrics.
	Registerer prometheus.Registerer
	// Compile loads and checks a content of the file as herald validate
	// does (the path is for its errors' positions).
	Compile func(path string, data []byte) (*config.Config, *rules.Set, error)
	// ReplaceSinks builds a new configuration's sinks and puts them in
	// force.
	ReplaceSinks func(*config.Config) error
	// Applied is told of each configuration put in force (inhibitions
	// and maintenance windows follow it); nil: nothing to tell.
	Applied func(*config.Config)
	// Compiled is given each new rule set before it is put in force
	// (hooks the set reports to); nil: nothing to give.
	Compiled func(*rules.Set)
}

// Loop checks the file every interval and applies a change once its
// writer is done.
type Loop struct {
	o        Options
	current  *config.Config
	ok       prometheus.Gauge
	failures prometheus.Counter
}

// New is a loop for the file at o.Path; its metrics are registered.
func New(o Options) (*Loop, error) {
	if o.Compile == nil || o.ReplaceSinks == nil || o.Current == nil || o.Controller == nil || o.Interval <= 0 {
		return nil, fmt.Errorf("reload: Compile, ReplaceSinks, Current, Controller and a positive Interval are required")
	}
	l := &Loop{o: o, current: o.Current,
		ok:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_config_last_reload_successful", Help: "1 if the last configuration change was applied, 0 if it was rejected."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_config_reload_failures_total", Help: "Configuration changes rejected (their errors are logged)."}),
	}
	l.ok.Set(1)
	o.Registerer.MustRegister(l.ok, l.failures)
	return l, nil
}

// Run checks the file until ctx ends.
func (l *Loop) Run(ctx context.Context) {
	data, _ := os.ReadFile(l.o.Path)
	change := steadyChange{last: contentHash(data)}
	tick := time.NewTicker(l.o.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Read once: what is applied is exactly what was checked.
		data, err := os.ReadFile(l.o.Path)
		if err != nil {
			data = nil
		}
		if !change.done(contentHash(data)) {
			continue
		}
		if err := l.apply(ctx, data); err != nil {
			l.ok.Set(0)
			l.failures.Inc()
			l.o.Logger.Error("configuration change rejected; the previous configuration keeps running",
				"config", l.o.Path, "errors", strings.Split(err.Error(), "\n"))
			continue
		}
		l.ok.Set(1)
	}
}

// steadyChange says when a polled file has changed and its writer is
// done: its content differs from the last one applied and read the same
// at two checks in a row. A file written in place (truncated, then
// written) can be read in between, empty or cut; applied, it would be
// rejected, then the whole file applied at the next check. A mounted
// ConfigMap is swapped whole, and waits one interval more.
type steadyChange struct {
	last []byte // the content last applied (its hash)
	seen []byte // a new content seen at the last check, not yet applied
}

// done takes the hash of the content read now (nil: unreadable) and
// says whether to apply it.
func (c *steadyChange) done(h []byte) bool {
	if h == nil || bytes.Equal(h, c.last) {
		c.seen = nil
		return false
	}
	if !bytes.Equal(h, c.seen) {
		c.seen = h
		return false
	}
	c.last, c.seen = h, nil
	return true
}

// contentHash is what a check compares of the file (nil: unreadable).
func contentHash(data []byte) []byte {
	if data == nil {
		return nil
	}
	h := sha256.Sum256(data)
	return h[:]
}

// apply loads and compiles data, the file's content; what cannot change
// at run time rejects the change as a whole, so it never half-applies.
func (l *Loop) apply(ctx context.Context, data []byte) error {
	cfg, set, err := l.o.Compile(l.o.Path, data)
	if err != nil {
		return err
	}
	if l.o.Compiled != nil {
		l.o.Compiled(set)
	}
	if fixed := builtAtStart(l.current, cfg); len(fixed) > 0 {
		return fmt.Errorf("%s changed: these take effect at a restart (roll the pods); rules and sinks can change at run time", strings.Join(fixed, ", "))
	}
	// Sinks first, so that the new rules find the sinks they name.
	if !reflect.DeepEqual(cfg.Sinks, l.current.Sinks) {
		if err := l.o.ReplaceSinks(cfg); err != nil {
			return err
		}
	}
	// The routes first, so the objects Reload queues are routed anew;
	// back to the old ones if the rules cannot go in.
	l.o.Controller.SetRoutes(routesOf(cfg))
	if err := l.o.Controller.Reload(ctx, set, changedRules(l.current, cfg)); err != nil {
		l.o.Controller.SetRoutes(routesOf(l.current))
		return err
	}
	l.current = cfg
	if l.o.Applied != nil {
		l.o.Applied(cfg)
	}
	l.o.Logger.Info("configuration reloaded", "config", l.o.Path, "rules", len(cfg.Rules))
	return nil
}

// builtAtStart names the settings that differ between old and cur and
// that herald builds once, at start.
func builtAtStart(old, cur *config.Config) []string {
	var fixed []string
	if cur.Workers != old.Workers {
		fixed = append(fixed, "workers")
	}
	// By value: the settings whose zero means "off" are pointers.
	if !reflect.DeepEqual(cur.Incidents, old.Incidents) {
		fixed = append(fixed, "incidents")
	}
	// The crash-context stage is built once: its settings, redact
	// patterns among them, would otherwise apply to findings (compiled
	// with the rules) and not to log lines.
	if !reflect.DeepEqual(cur.Context, old.Context) {
		fixed = append(fixed, "context")
	}
	// The buttons' receivers are made once, at start, with their tokens
	// and allow lists: a reload that changed them would put buttons on
	// messages with nothing to receive their presses, or keep letting
	// someone it removed from an allow list press.
	if !reflect.DeepEqual(slackact.Settings(cur), slackact.Settings(old)) {
		fixed = append(fixed, "slack.interactive")
	}
	// The receiver listens from the start, with its token read then.
	// Compared as written, not with the token each parse read: a token
	// file rotated in place would otherwise make every later change of
	// the file refused, rules and sinks too.
	if asWritten(cur.Intake) != asWritten(old.Intake) {
		fixed = append(fixed, "intake")
	}
	return fixed
}

// asWritten is a setting as the file gives it: where its secrets come
// from, not their values (which the YAML form leaves out).
func asWritten(v any) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unmarshalable: %v", err) // never equal to a good one
	}
	return string(out)
}

// routesOf compiles the routes of a configuration Compile accepted (so
// without errors).
func routesOf(cfg *config.Config) *route.Table {
	t, _ := route.Compile(cfg)
	return t
}

// changedRules names the rules in both configurations whose definition
// differs.
func changedRules(old, cur *config.Config) map[string]bool {
	before := map[string]config.Rule{}
	for _, r := range old.Rules {
		before[r.Name] = r
	}
	changed := map[string]bool{}
	for _, r := range cur.Rules {
		if prev, ok := before[r.Name]; ok && !reflect.DeepEqual(prev, r) {
			changed[r.Name] = true
		}
	}
	return changed
}

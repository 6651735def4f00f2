package main

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

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/handlers"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/internal/slackact"
)

// reloader watches the configuration file (a mounted ConfigMap changes
// it by swapping a symlink, so its content is polled rather than its
// inode watched) and puts valid new rules in force without a restart.
type reloader struct {
	path     string
	interval time.Duration
	current  *config.Config
	ctrl     *handlers.Controller
	logger   *slog.Logger
	ok       prometheus.Gauge
	failures prometheus.Counter
	// replaceSinks builds a new configuration's sinks and puts them in
	// force.
	replaceSinks func(*config.Config) error
	// applied is told of each configuration put in force (inhibitions
	// and maintenance windows follow it); nil: nothing to tell.
	applied func(*config.Config)
	// compiled is given each new rule set before it is put in force
	// (hooks the set reports to); nil: nothing to give.
	compiled func(*rules.Set)
}

func newReloader(path string, interval time.Duration, cfg *config.Config, ctrl *handlers.Controller, logger *slog.Logger, reg prometheus.Registerer) *reloader {
	r := &reloader{path: path, interval: interval, current: cfg, ctrl: ctrl, logger: logger,
		ok:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_config_last_reload_successful", Help: "1 if the last configuration change was applied, 0 if it was rejected."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_config_reload_failures_total", Help: "Configuration changes rejected (their errors are logged)."}),
	}
	r.ok.Set(1)
	reg.MustRegister(r.ok, r.failures)
	return r
}

func (r *reloader) run(ctx context.Context) {
	data, _ := os.ReadFile(r.path)
	change := steadyChange{last: contentHash(data)}
	tick := time.NewTicker(r.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Read once: what is applied is exactly what was checked.
		data, err := os.ReadFile(r.path)
		if err != nil {
			data = nil
		}
		if !change.done(contentHash(data)) {
			continue
		}
		if err := r.apply(ctx, data); err != nil {
			r.ok.Set(0)
			r.failures.Inc()
			r.logger.Error("configuration change rejected; the previous configuration keeps running",
				"config", r.path, "errors", strings.Split(err.Error(), "\n"))
			continue
		}
		r.ok.Set(1)
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

// apply loads and compiles data, the file's content; what cannot change
// at run time rejects the change as a whole, so it never half-applies.
func (r *reloader) apply(ctx context.Context, data []byte) error {
	cfg, set, err := compileConfig(r.path, func(path string) (*config.Config, error) { return config.Parse(path, data) })
	if err != nil {
		return err
	}
	if r.compiled != nil {
		r.compiled(set)
	}
	var needRestart []string
	if cfg.Workers != r.current.Workers {
		needRestart = append(needRestart, "workers")
	}
	// By value: the settings whose zero means "off" are pointers.
	if !reflect.DeepEqual(cfg.Incidents, r.current.Incidents) {
		needRestart = append(needRestart, "incidents")
	}
	// The crash-context stage is built once: its settings, redact
	// patterns among them, would otherwise apply to findings (compiled
	// with the rules) and not to log lines.
	if !reflect.DeepEqual(cfg.Context, r.current.Context) {
		needRestart = append(needRestart, "context")
	}
	// The buttons' receivers are made once, at start, with their tokens
	// and allow lists: a reload that changed them would put buttons on
	// messages with nothing to receive their presses, or keep letting
	// someone it removed from an allow list press.
	if !reflect.DeepEqual(slackact.Settings(cfg), slackact.Settings(r.current)) {
		needRestart = append(needRestart, "slack.interactive")
	}
	// The receiver listens from the start, with its token read then.
	if !reflect.DeepEqual(cfg.Intake, r.current.Intake) {
		needRestart = append(needRestart, "intake")
	}
	if len(needRestart) > 0 {
		return fmt.Errorf("%s changed: these take effect at a restart (roll the pods); rules and sinks can change at run time", strings.Join(needRestart, ", "))
	}
	// Sinks first, so that the new rules find the sinks they name.
	if !reflect.DeepEqual(cfg.Sinks, r.current.Sinks) {
		if err := r.replaceSinks(cfg); err != nil {
			return err
		}
	}
	// The routes first, so the objects Reload queues are routed anew;
	// back to the old ones if the rules cannot go in.
	r.ctrl.SetRoutes(routesOf(cfg))
	if err := r.ctrl.Reload(ctx, set, changedRules(r.current, cfg)); err != nil {
		r.ctrl.SetRoutes(routesOf(r.current))
		return err
	}
	r.current = cfg
	if r.applied != nil {
		r.applied(cfg)
	}
	r.logger.Info("configuration reloaded", "config", r.path, "rules", len(cfg.Rules))
	return nil
}

// contentHash is what a check compares of the file (nil: unreadable).
func contentHash(data []byte) []byte {
	if data == nil {
		return nil
	}
	h := sha256.Sum256(data)
	return h[:]
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

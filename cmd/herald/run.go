package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/handlers"
	"github.com/herald-k8s/herald/internal/actions"
	fencing "github.com/herald-k8s/herald/internal/fence"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/leader"
	"github.com/herald-k8s/herald/internal/logbuf"
	"github.com/herald-k8s/herald/internal/preflight"
	"github.com/herald-k8s/herald/internal/reload"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/internal/silence"
	"github.com/herald-k8s/herald/internal/slackact"
	"github.com/herald-k8s/herald/internal/term"
	"github.com/herald-k8s/herald/internal/volumes"
	"github.com/herald-k8s/herald/sinks"
	"github.com/herald-k8s/herald/watcher"
)

func (c cli) cmdRun(ctx context.Context, args []string) int {
	out, errOut := c.stdout, c.stderr
	fs := flag.NewFlagSet("herald run", flag.ContinueOnError)
	configPath := fs.String("config", "", "path of the configuration file (required)")
	fs.StringVar(configPath, "f", "", "shorthand for --config")
	var kf kubeFlags
	kf.register(fs)
	logFormat := fs.String("log-format", "json", "log format: json or text")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	metricsAddr := fs.String("metrics-addr", ":8080", "address of /metrics, /healthz and /readyz; empty to disable")
	namespace := fs.String("namespace", envOr("POD_NAMESPACE", "default"), "herald's own namespace, where the ledger ConfigMaps live")
	noPersist := fs.Bool("no-persist", false, "keep the incident ledger in memory only (restarts forget what was sent)")
	leaderElect := fs.Bool("leader-elect", true, "elect a leader by a Lease, so that only one replica notifies")
	leaseName := fs.String("lease-name", "herald", "name of the leader Lease in --namespace")
	leaseDuration := fs.Duration("lease-duration", 15*time.Second, "how long a lease is valid without renewal")
	renewDeadline := fs.Duration("renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before giving up")
	retryPeriod := fs.Duration("retry-period", 2*time.Second, "how often candidates try to acquire or renew the lease")
	shutdownGrace := fs.Duration("shutdown-grace", 20*time.Second, "after SIGTERM, how long queued notifications may take to go out before herald stops")
	withPprof := fs.Bool("pprof", false, "also serve Go's profiles at /debug/pprof/ on --metrics-addr (for performance work)")
	kubeVerbosity := fs.Int("kube-log-verbosity", 0, "verbosity of the Kubernetes client's own log (with --log-level debug); 4 shows every list and watch the informers make and why; at most 5 (kubelog.go)")
	forceKubeVerbosity := fs.Bool("force-kube-log-verbosity", false, "allow --kube-log-verbosity above 5, where the client logs request headers and bodies (Secrets included)")
	apiCompression := fs.Bool("api-compression", false, "let the API server gzip its large answers (lists, ledger writes); worth it only over a slow link to it, as in-cluster it costs both sides CPU for nothing")
	lagFlags := registerLedgerLag(fs)
	reloadInterval := fs.Duration("config-reload-interval", 10*time.Second, "how often the config file is checked for changes (rules apply without restart); 0 disables")
	if code, ok := parseNoArgs(fs, "herald run -f FILE [--kubeconfig FILE] [--context NAME] [--namespace NS] [flags]", args, out, errOut); !ok {
		return code
	}
	kubeLogWarning, err := checkKubeLogVerbosity(*kubeVerbosity, *forceKubeVerbosity)
	if err != nil {
		fmt.Fprintln(errOut, "herald run:", err)
		return 2
	}
	if err := lagFlags.check(); err != nil {
		fmt.Fprintln(errOut, "herald run:", err)
		return 2
	}
	if err := validateLeaseTimings(*leaseDuration, *renewDeadline, *retryPeriod); *leaderElect && err != nil {
		fmt.Fprintln(errOut, "herald run:", err)
		return 2
	}
	if c.bufferLogs {
		// One write per batch of lines instead of one per line (see
		// internal/logbuf); everything herald run writes to stderr from
		// here on goes through it, so the order of lines is kept.
		// Deferred first, so that it runs last: the lines of the
		// shutdown go out too.
		lw := logbuf.New(errOut, logDelay)
		defer lw.Flush()
		errOut = lw
		log.SetOutput(lw) // the standard logger's lines (net/http's errors) keep their place too
	}
	logger, err := newLogger(errOut, *logFormat, *logLevel)
	if err != nil {
		fmt.Fprintln(errOut, "herald run:", err)
		return 2
	}
	if kubeLogWarning != "" {
		logger.Warn(kubeLogWarning)
	}
	if limit, err := setMemoryLimit(os.Getenv); err != nil {
		logger.Warn("memory limit", "error", err)
	} else if limit > 0 {
		logger.Info("Go memory limit set from the container's", "bytes", limit, "share", memoryLimitShare)
	}
	// Everything that can be checked offline is checked before herald
	// connects to anything: a bad config never half-starts.
	cfg, ruleSet, err := loadConfig(*configPath)
	if err != nil {
		fmt.Fprintln(errOut, err)
		return 1
	}
	for _, w := range configWarnings(cfg) {
		logger.Warn(w, "config", *configPath)
	}
	reg := prometheus.NewRegistry()
	ignoredEvents := newIgnoredEvents(reg, logger)
	ignoredEvents.install(ruleSet)
	muter := silence.NewMuter(*namespace, logger)
	muter.Configure(cfg)
	tracker := newTracker(cfg.Incidents, reg, muter, logger)
	// One identity per term: the Lease's holder, the Herald-Replica header
	// of webhooks, and the user agent of API requests (so the API
	// server's audit log tells replicas apart).
	identity := leader.Identity()
	sinkList, closeSinks, err := buildSinks(cfg, out, tracker, identity, logger)
	if err != nil {
		fmt.Fprintln(errOut, err)
		return 1
	}
	defer closeSinks()
	if c.routeKlog {
		klog.SetSlogLogger(logger) // client-go logs through the same handler
		klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(klogFlags)
		klogFlags.Set("v", strconv.Itoa(*kubeVerbosity))
	}

	restCfg, where, err := kf.load("herald/" + version + " (" + identity + ")")
	if err != nil {
		logger.Error("no Kubernetes client configuration", "error", err)
		return 1
	}
	logger.Info("Kubernetes client configuration", "from", where)
	// Gzip is client-go's default: the API server compresses any answer
	// over 128 KB (a page of pods, a ledger shard's echo) and herald
	// inflates it again (see docs/performance.md), for bytes that only
	// cross the pod network.
	restCfg.DisableCompression = restCfg.DisableCompression || !*apiCompression
	clients, typed, err := newClients(restCfg)
	if err != nil {
		logger.Error("creating the Kubernetes client", "error", err)
		return 1
	}

	// Namespaces always: a namespace's herald.io/silence-until annotation
	// mutes it, besides rules that select namespaces and Slack routing.
	kinds := append(slices.DeleteFunc(ruleSet.Kinds(), func(k string) bool { return k == "Namespace" }), "Namespace")
	if err := preflight.Check(ctx, typed, kinds, *namespace, *leaderElect, !*noPersist, logger, volumeAccess(ruleSet)...); err != nil {
		logger.Error("cannot start", "error", err)
		return 1
	}
	warnSharedNamespace(ctx, clients.Dynamic, *namespace, os.Getenv("POD_NAME"), logger)

	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerStartOvers(reg, os.Getenv(startOversEnv))
	var store incident.Store = &incident.MemoryStore{}
	if !*noPersist {
		if store, err = newLedgerStore(restCfg, *namespace, cfg.Incidents.LedgerName, reg); err != nil {
			logger.Error("herald run", "error", err)
			return 1
		}
	}
	w := watcher.New(clients, 0, logger)
	dispatcher := sinks.NewDispatcher(logger, sinks.NewMetrics(reg), sinkList...)
	dispatcher.OnDelivered(tracker.Delivered)
	notify, gatherContext, err := withContext(ctx, cfg, restCfg, w, dispatcher, logger, reg)
	if err != nil {
		logger.Error("setting up crash context", "error", err)
		return 1
	}
	var moreLogs func(context.Context, incident.Incident, int) (*incident.Logs, error)
	if e, ok := notify.(interface {
		MoreLogs(context.Context, incident.Incident, int) (*incident.Logs, error)
	}); ok {
		moreLogs = e.MoreLogs
	}
	// Before the controller makes any informer: the record sees
	// workloads before the cache strips their pod templates.
	changed, err := newChangeRecord(ctx, cfg, restCfg, w, logger, reg)
	if err != nil {
		logger.Error("setting up the change record", "error", err)
		return 1
	}
	notify = changed.Stage(notify)
	volumeStore := volumes.NewStore()
	alerts, err := newAlertIntake(cfg, w, logger, reg)
	if err != nil {
		logger.Error("starting the Alertmanager receiver", "error", err)
		return 1
	}
	defer alerts.close()
	ctrl, err := handlers.New(handlers.Options{
		Watcher:          w,
		Rules:            ruleSet,
		Incidents:        tracker,
		Dispatcher:       notify,
		Workers:          cfg.Workers,
		Logger:           logger,
		Metrics:          handlers.NewMetrics(reg),
		RouteByNamespace: hasSlack(cfg),
		Routes:           routesOf(cfg),
		ClusterName:      cfg.ClusterName,
		Namespaces:       true,
		Startup:          cfg.Incidents.Startup,
		Delivered:        tracker.Delivered,
		Alerts:           alerts.source(),
		Volumes:          volumeStore,
	})
	if err != nil {
		logger.Error("setting up watches", "error", err)
		return 1
	}
	// After the controller, which decides what the cache keeps (compact
	// pods, annotations the rules read) before any informer is made.
	if err := changed.Watch(ctx); err != nil {
		logger.Error("setting up the change record", "error", err)
		return 1
	}
	if err := watchSilences(ctx, typed, w, muter, kinds, logger); err != nil {
		logger.Error("setting up silences", "error", err)
		return 1
	}
	isLeader := prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_leader", Help: "1 while this replica holds the lease and notifies."})
	ledgerWrites := prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_ledger_writes_total", Help: "Ledger writes (each batches the changes since the last: up to a second, less while deliveries wait to be recorded)."})
	ledgerFailures := prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_ledger_write_errors_total", Help: "Ledger writes that failed (retried at the next tick)."})
	ledgerConflicts := prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_ledger_write_conflicts_total", Help: "Ledger writes refused because another replica wrote the ledger since this one read it (this replica then stops leading; never retried)."})
	ledgerSize := prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_ledger_incidents", Help: "Incidents in the ledger at the last write (open and retained resolved)."})
	reg.MustRegister(isLeader, ledgerWrites, ledgerFailures, ledgerConflicts, ledgerSize,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_cache_synced", Help: "1 once every informer has listed."}, func() float64 { return map[bool]float64{true: 1}[w.Synced()] }),
	)
	saved := incident.NewSaved()
	lag, err := lagFlags.build(logger, reg)
	if err != nil {
		logger.Error("herald run", "error", err)
		return 2
	}
	dispatcher.GateOn(lag)
	ledgerMetrics := &incident.LedgerMetrics{Writes: ledgerWrites.Inc, Failures: ledgerFailures.Inc, Conflicts: ledgerConflicts.Inc, Incidents: func(n int) { ledgerSize.Set(float64(n)) }, Saved: saved, Lag: lag}
	// Slack's buttons: the leader holds the Socket Mode connection.
	interactive := slackact.FromConfig(cfg, actions.Options{
		Incidents: tracker, Dispatch: notify.Dispatch, Saved: saved, Silences: silence.NewClient(clients.Dynamic),
		Events: func(ctx context.Context, ev *corev1.Event) error { _, err := typed.CreateEvent(ctx, ev); return err },
		Logs:   moreLogs, Logger: logger,
	}, reg)
	healthz := leader.NewHealthz(20 * time.Second)
	if *metricsAddr != "" {
		srv, err := serveOps(*metricsAddr, reg, w, typed.Ready, healthz, *withPprof, logger)
		if err != nil {
			logger.Error("starting the metrics server", "addr", *metricsAddr, "error", err)
			return 1
		}
		defer srv.Close()
	}
	logger.Info("herald starting", "version", version, "config", cfg.File(), "kinds", ruleSet.Kinds(), "sinks", len(sinkList), "leaderElection", *leaderElect)
	// Every replica keeps warm caches; only the leader reconciles.
	w.Start(ctx)
	defer w.Shutdown()
	go freeAfterSync(ctx, w.Synced)
	if *reloadInterval > 0 {
		r, err := reload.New(reload.Options{Path: *configPath, Interval: *reloadInterval, Current: cfg, Controller: ctrl, Logger: logger, Registerer: reg,
			Compile: func(path string, data []byte) (*config.Config, *rules.Set, error) {
				return compileConfig(path, func(path string) (*config.Config, error) { return config.Parse(path, data) })
			},
			ReplaceSinks: func(next *config.Config) error {
				lanes, _, err := buildSinks(next, out, tracker, identity, logger)
				if err != nil {
					return err
				}
				dispatcher.Replace(lanes)
				return nil
			},
			Applied:  muter.Configure,
			Compiled: ignoredEvents.install,
		})
		if err != nil {
			logger.Error("setting up the configuration reload", "error", err)
			return 1
		}
		go r.Run(ctx)
	}

	// The fence: everything that sends or writes for the leader runs under
	// fenced, which ends the moment this replica stops believing it leads
	// (leader.Options.OnLost, or the ledger written by another replica),
	// even in the middle of a graceful drain.
	fenced, fence := context.WithCancelCause(context.WithoutCancel(ctx))
	defer fence(nil)
	parts := term.Parts{Tracker: tracker, Store: store, Dispatcher: dispatcher, Controller: ctrl, Logger: logger,
		Namespace: *namespace, Persisted: !*noPersist, LedgerMetrics: ledgerMetrics, Grace: *shutdownGrace,
		Beside: []func(context.Context){
			gatherContext,
			silence.StatusWriter{Muter: muter, Client: clients.Dynamic, Muted: tracker.MutedBy, Every: 5 * time.Second, Logger: logger}.Run,
			volumePoller(cfg, typed, w, ctrl, volumeStore, logger, reg).Run,
		}}
	if interactive != nil { // Slack's buttons
		parts.Beside = append(parts.Beside, interactive)
	}
	if alerts != nil {
		parts.Restored = append(parts.Restored, func(t *incident.Tracker) { alerts.seed(t, logger) })
		parts.Beside = append(parts.Beside, func(ctx context.Context) { alerts.lead(ctx, ctrl, tracker, saved) })
	}
	var runErr error
	lead := func(ctx context.Context) {
		// The election's fence at the edge (checked by every sink and
		// ledger request) goes with the work that outlives ctx too.
		fenced := fencing.With(fenced, fencing.From(ctx))
		runErr = term.Run(ctx, fenced, fence, parts)
	}
	if !*leaderElect {
		isLeader.Set(1)
		lead(ctx)
	} else {
		err := leader.Run(ctx, leader.Options{
			Client: typed, Namespace: *namespace, Name: *leaseName, Identity: identity,
			LeaseDuration: *leaseDuration, RenewDeadline: *renewDeadline, RetryPeriod: *retryPeriod,
			Logger: logger, Healthz: healthz,
			OnLeading: func(on bool) { isLeader.Set(map[bool]float64{true: 1}[on]) },
			OnLost:    func() { fence(fmt.Errorf("%w: %w", incident.ErrFenced, leader.ErrLost)) },
		}, lead)
		if errors.Is(err, leader.ErrLost) {
			// Another replica may lead already: stop at once rather than
			// notify beside it. What was not delivered is in the ledger.
			// The process starts over (main re-executes it), so nothing of
			// this term survives and the pod is not restarted for it.
			logger.Error("lost the leader lease; starting over so that only one replica notifies")
			if c.recordStartOvers {
				startOver(startOverLeaseLost)
			}
			return exitStartOver
		}
		if err != nil {
			logger.Error("leader election failed", "error", err)
			return 1
		}
	}
	if errors.Is(runErr, incident.ErrConflict) {
		logger.Error("the incident ledger changed since this replica read it (another herald replica, or an edit); starting over so that only one replica notifies")
		if c.recordStartOvers {
			startOver(startOverLedgerConflict)
		}
		return exitStartOver
	}
	if runErr != nil {
		logger.Error("herald stopped with an error", "error", runErr)
		return 1
	}
	logger.Info("herald stopped")
	return 0
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func hasSlack(cfg *config.Config) bool {
	for _, s := range cfg.Sinks {
		if s.Slack != nil {
			return true
		}
	}
	return false
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler
	switch format {
	case "json":
		h = slog.NewJSONHandler(w, opts)
	case "text":
		h = slog.NewTextHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format must be json or text, got %q", format)
	}
	if lw, ok := w.(*logbuf.Writer); ok {
		h = logbuf.Urgent(h, lw, slog.LevelWarn) // warnings and errors are not held back
	}
	return slog.New(h), nil
}

// logDelay is the longest a log line of herald run waits to be written
// out with the lines after it (internal/logbuf).
const logDelay = 100 * time.Millisecond

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/herald-k8s/herald/internal/fence"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/leader"
	"github.com/herald-k8s/herald/watcher"
)

// kubeFlags are how every command that talks to a cluster finds it, the
// way kubectl does, so that what works with kubectl works with herald:
// --kubeconfig, else $KUBECONFIG (a colon-separated list, merged), else
// ~/.kube/config, else the in-cluster configuration; --context picks a
// context other than the current one.
type kubeFlags struct {
	kubeconfig, context string
}

func (k *kubeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster)")
	fs.StringVar(&k.context, "context", "", "the kubeconfig context to use (default: the current context)")
}

// load returns the client configuration, with where it points for
// messages ("context kind-prod", "in-cluster").
func (k kubeFlags) load(userAgent string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
	cfg, err := loader.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, "", k.noConfig()
	}
	if err != nil {
		return nil, "", fmt.Errorf("loading the Kubernetes configuration: %w", err)
	}
	where := "in-cluster"
	if raw, err := loader.RawConfig(); err == nil && len(raw.Contexts) > 0 {
		where = "context " + raw.CurrentContext
		if k.context != "" {
			where = "context " + k.context
		}
	}
	cfg.UserAgent = userAgent
	return cfg, where, nil
}

// noConfig says why no configuration was found, naming the files that
// were looked for: a $KUBECONFIG naming a file that is not there is the
// usual cause.
func (k kubeFlags) noConfig() error {
	if env := os.Getenv("KUBECONFIG"); env != "" && k.kubeconfig == "" {
		var absent []string
		for _, f := range filepath.SplitList(env) {
			if _, err := os.Stat(f); err != nil {
				absent = append(absent, f)
			}
		}
		if len(absent) > 0 {
			return fmt.Errorf("no Kubernetes configuration found: $KUBECONFIG names %s, which does not exist (give --kubeconfig FILE, or fix $KUBECONFIG)", strings.Join(absent, ", "))
		}
		return fmt.Errorf("no Kubernetes configuration found in $KUBECONFIG (%s): give --kubeconfig FILE", env)
	}
	return errors.New("no Kubernetes configuration found: give --kubeconfig FILE, set $KUBECONFIG, or create ~/.kube/config (in a pod, the in-cluster configuration is used)")
}

// namespace is the namespace of the context in use (kubectl's default
// namespace: the context's, else "default"; in a pod, the pod's), and
// where it comes from, for the commands that default to it.
func (k kubeFlags) namespace() (string, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
	raw, err := loader.RawConfig()
	if err != nil {
		return "", "", fmt.Errorf("loading the Kubernetes configuration: %w", err)
	}
	if len(raw.Contexts) == 0 {
		// In a pod, client-go would answer the pod's own namespace
		// (herald's, if run there): never what the user meant.
		return "", "", errors.New("no kubeconfig context to take it from (in a pod, give it)")
	}
	current := raw.CurrentContext
	if k.context != "" {
		current = k.context
	}
	ctx, ok := raw.Contexts[current]
	if !ok {
		return "", "", fmt.Errorf("the kubeconfig has no context %q", current)
	}
	if ctx.Namespace == "" {
		return "default", "context " + current + " sets none", nil
	}
	return ctx.Namespace, "the namespace of context " + current, nil
}

// newClients makes herald's own client for built-in kinds (protobuf) and
// the dynamic client and discovery for custom resources (which have no
// protobuf form). Nothing is requested until first use.
func newClients(cfg *rest.Config) (watcher.Clients, *kube.Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return patientWatches{next: rt, every: time.Second} })
	// The ledger's requests are made under the leader's fence: not sent
	// once the hold on the Lease has ended (the election's own are not).
	cfg.Wrap(fence.Transport)
	typed, err := kube.New(cfg)
	if err != nil {
		return watcher.Clients{}, nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return watcher.Clients{}, nil, err
	}
	return watcher.Clients{Builtin: typed, Dynamic: dyn, Resolve: typed.ResourceFor}, typed, nil
}

// patientWatches makes a watch request that cannot reach the API server
// (nothing listens, or the connection cannot be made) wait and try again
// every so often until it can, instead of failing.
//
// Why: every failed watch grows the informer's backoff (up to 30 s, reset
// only after 2 minutes). An API server that restarts has a new watch
// cache whose history starts at its restart, so the first watch after it
// gets 410 Gone and the informer must list again, but only after that
// grown backoff. Crashes that came and went in those seconds were then
// seen only as their final state, never notified. Waiting here keeps the
// backoff at its first step: the list follows the 410 within a second.
//
// Only watches (GET ?watch=true, no body, idempotent) wait, and only for
// errors where the request never reached a server. The request's context
// still ends the wait.
type patientWatches struct {
	next  http.RoundTripper
	every time.Duration
}

func (p patientWatches) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || (req.Body != nil && req.Body != http.NoBody) || req.URL.Query().Get("watch") != "true" {
		return p.next.RoundTrip(req)
	}
	for {
		resp, err := p.next.RoundTrip(req)
		if err == nil || !unreachable(err) {
			return resp, err
		}
		t := time.NewTimer(p.every)
		select {
		case <-req.Context().Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// unreachable reports whether err means no connection to the server
// could be made, so the request was never sent.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// metricsHandler serves the registry's metrics, uncompressed: herald's
// exposition is tens of kilobytes, and a gzip writer for it costs ~1 MB of
// memory held between scrapes (a quarter of the heap of a small cluster's
// herald) and CPU at every scrape; scrapes stay inside the cluster.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, DisableCompression: true})
}

// serveOps serves /metrics, /healthz (the process is up and, if it leads,
// has renewed its lease in time) and /readyz (the caches have synced);
// with withPprof also Go's profiles under /debug/pprof/ (off by default:
// a heap profile shows what is cached, which is not for every scraper).
func serveOps(addr string, reg *prometheus.Registry, w *watcher.Watcher, apiReady func(context.Context) error, lease *leader.Healthz, withPprof bool, logger *slog.Logger) (*http.Server, error) {
	mux := http.NewServeMux()
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.Handle("/metrics", metricsHandler(reg))
	mux.HandleFunc("/healthz", func(rw http.ResponseWriter, r *http.Request) {
		if err := lease.Check(r); err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		rw.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(rw http.ResponseWriter, r *http.Request) {
		if !w.Synced() {
			http.Error(rw, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		// A cache keeps answering while the control plane is away; herald
		// is not ready then, as it sees no change.
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := apiReady(ctx); err != nil {
			http.Error(rw, "API server not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		rw.Write([]byte("ok\n"))
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			logger.Error("metrics server stopped", "error", err)
		}
	}()
	logger.Info("serving metrics and health", "addr", ln.Addr().String())
	return srv, nil
}

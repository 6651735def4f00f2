// Package volumes reads how full the volumes of PersistentVolumeClaims
// are, for the volume-filling detector. Each node's kubelet measures the
// volumes of its pods and serves the figures in its stats summary, which
// herald reads through the API server's node proxy (GET
// /api/v1/nodes/NODE/proxy/stats/summary: the nodes/proxy permission).
// Only the leader polls, each node once per interval with a bounded
// number of requests at once and a timeout each, never on the path of a
// notification; the samples are kept in memory for the longest window a
// rule asks for, and each new one queues its claim to be evaluated.
package volumes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Options configure a Poller.
type Options struct {
	// Interval between the starts of two rounds (a round that takes
	// longer is followed by the next at once).
	Interval time.Duration
	// Concurrency bounds the requests in flight; Timeout each one.
	Concurrency int
	Timeout     time.Duration
	// Window says how long samples are kept: the longest window of the
	// rules that read them; 0 while no rule does (nothing is polled).
	Window func() time.Duration
	// Ready says whether the cache has listed the nodes; Nodes lists the
	// nodes to poll (from the cache; not those NotReady).
	Ready func() bool
	Nodes func() []string
	// Fetch reads a node's stats summary; the caller closes it.
	Fetch func(ctx context.Context, node string) (io.ReadCloser, error)
	// Changed is told of a claim whose samples changed (queue it);
	// Measuring, once a term, when every node has been read (queue
	// every claim).
	Changed   func(namespace, name string)
	Measuring func()
	Store     *Store
	Logger    *slog.Logger
	Metrics   *Metrics
}

// Poller polls the kubelets' stats summaries into a Store.
type Poller struct{ o Options }

// New returns a Poller.
func New(o Options) *Poller { return &Poller{o: o} }

// Run polls until ctx ends (the leader's term). Until its first round is
// read, the store is not Measuring: a claim without samples is one not
// read yet.
func (p *Poller) Run(ctx context.Context) {
	p.o.Store.measuring.Store(false)
	defer p.o.Store.measuring.Store(false)
	t := time.NewTicker(p.o.Interval)
	defer t.Stop()
	for {
		p.Poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Poll makes one round: every node's summary, then what is gone.
func (p *Poller) Poll(ctx context.Context) {
	keep := p.o.Window()
	if keep <= 0 {
		p.changed(p.o.Store.clear())
		return
	}
	if !p.o.Ready() {
		return // the nodes are not listed yet: the next tick reads them
	}
	start := time.Now()
	nodes := p.o.Nodes()
	type result struct {
		node     string
		readings []reading
		err      error
	}
	results := make(chan result)
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(p.o.Concurrency, max(len(nodes), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for node := range work {
				rs, err := p.read(ctx, node)
				results <- result{node, rs, err}
			}
		}()
	}
	go func() {
		defer close(work)
		for _, n := range nodes {
			select {
			case work <- n:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	var failed []string
	var firstErr error
	full := false
	for r := range results {
		if r.err != nil {
			p.o.Metrics.Requests.WithLabelValues("error").Inc()
			failed = append(failed, r.node)
			firstErr = cmpErr(firstErr, r.err)
			continue
		}
		p.o.Metrics.Requests.WithLabelValues("ok").Inc()
		var changed []claimKey
		for _, rd := range r.readings {
			added, isFull := p.o.Store.add(r.node, rd, keep/samplesPerWindow)
			full = full || isFull
			if added {
				changed = append(changed, rd.claim)
			}
		}
		p.changed(changed)
	}
	if ctx.Err() != nil {
		return // the term ended: what was not read is not gone
	}
	p.changed(p.o.Store.forget(time.Now(), keep))
	if !p.o.Store.measuring.Swap(true) {
		// A claim without samples is now one no kubelet measures, not
		// one not read yet: every claim is looked at again, so that an
		// incident kept open meanwhile resolves if it must.
		p.o.Logger.Info("volume stats: every node read", "nodes", len(nodes), "claims", p.o.Store.Len())
		p.o.Measuring()
	}
	took := time.Since(start)
	p.o.Metrics.Round.Set(took.Seconds())
	p.o.Metrics.Claims.Set(float64(p.o.Store.Len()))
	if full {
		p.o.Logger.Warn("volume stats: too many claims to keep; the others are not measured", "max", maxClaims)
	}
	if len(failed) > 0 {
		slices.Sort(failed)
		p.o.Logger.Warn("volume stats: some kubelets did not answer; their claims keep their last readings until the window ends",
			"nodes", len(failed), "of", len(nodes), "first", strings.Join(failed[:min(len(failed), 3)], ","), "error", firstErr)
	}
	if took > p.o.Interval {
		p.o.Logger.Warn("volume stats: a round took longer than the interval; raise volumeStats.concurrency or the interval", "took", took.Round(time.Millisecond), "interval", p.o.Interval, "nodes", len(nodes))
	}
}

// read fetches and parses one node's summary within the timeout.
func (p *Poller) read(ctx context.Context, node string) ([]reading, error) {
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	body, err := p.o.Fetch(ctx, node)
	if err != nil {
		return nil, explain(node, err)
	}
	defer body.Close()
	rs, err := parseSummary(body, time.Now())
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	return rs, nil
}

// errForbidden is what the poller says when herald may not read through the
// node proxy.
var errForbidden = errors.New("forbidden: herald may not get nodes/proxy, which reading the kubelets' volume stats needs (the chart grants it with volumeStats.enabled: true)")

func explain(node string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("node %s: %w: %w", node, errForbidden, err)
	}
	return fmt.Errorf("node %s: %w", node, err)
}

func cmpErr(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

func (p *Poller) changed(ks []claimKey) {
	for _, k := range ks {
		p.o.Changed(k.namespace, k.name)
	}
}

// Metrics are the poller's.
type Metrics struct {
	Requests *prometheus.CounterVec
	Round    prometheus.Gauge
	Claims   prometheus.Gauge
}

// NewMetrics registers the poller's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_volume_stats_requests_total", Help: "Kubelet stats summaries read through the node proxy, by result (ok, error)."}, []string{"result"}),
		Round:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_volume_stats_round_seconds", Help: "How long the last round of reading every node's volume stats took."}),
		Claims:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_volume_stats_claims", Help: "PersistentVolumeClaims whose volume herald has readings of."}),
	}
	reg.MustRegister(m.Requests, m.Round, m.Claims)
	return m
}

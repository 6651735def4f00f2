package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// SoakOptions say how long to churn and on how many pods.
type SoakOptions struct {
	Herald   string
	Pods     int
	Duration time.Duration
	// Fraction of r_max to offer (the issue asks for half).
	Fraction float64
	Dir      string
	Logf     func(format string, args ...any)
}

// Sample is herald's state at one moment of a soak.
type Sample struct {
	At         float64 `json:"at_seconds"`
	RSS        int64   `json:"rss_bytes"`
	Heap       int64   `json:"heap_alloc_bytes"`
	Goroutines int     `json:"goroutines"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Expected   int     `json:"expected"`  // notifications due so far
	Delivered  int     `json:"delivered"` // notifications received so far
}

// SoakReport is what a soak measured; soak.json holds it.
type SoakReport struct {
	Date      time.Time `json:"date"`
	Pods      int       `json:"pods"`
	RMax      float64   `json:"r_max"`
	Rate      float64   `json:"rate"`
	Duration  float64   `json:"duration_seconds"`
	Samples   []Sample  `json:"samples"`
	Latency   Latency   `json:"latency"`
	Delivered int       `json:"delivered"`
	Missed    int       `json:"missed"`
	// MissedKeys names the first missed patches (pod, restart count,
	// crash or ready, when due), to look them up in herald's log.
	MissedKeys []string `json:"missed_keys,omitempty"`
	Duplicated int      `json:"duplicated"`
	Unexpected int      `json:"unexpected"`
	// RefusedPatches were refused by the API server (not counted as due).
	RefusedPatches int     `json:"refused_patches"`
	CPUPer1000     float64 `json:"cpu_seconds_per_1000"`
	// RSSSlope is the least-squares slope of RSS over the last half of
	// the run (the last 30 minutes of an hour), in bytes per hour, and
	// RSSNoise the standard deviation of the samples around that line.
	RSSSlope float64 `json:"rss_slope_bytes_per_hour"`
	RSSNoise float64 `json:"rss_noise_bytes"`
}

// Soak churns pods at a steady fraction of r_max for the duration with
// herald running, sampling its RSS, heap, goroutines and CPU every 10 s,
// and counts every notification against the patches that caused it.
func Soak(ctx context.Context, opts SoakOptions) (*SoakReport, error) {
	r := &run{opts: Options{Herald: opts.Herald, Dir: opts.Dir, Logf: opts.Logf}}
	env, err := startControlPlane(ctx, opts.Dir, "", opts.Logf)
	if err != nil {
		return nil, err
	}
	defer env.Stop()
	r.env = env
	if err := r.setUp(ctx); err != nil {
		return nil, err
	}
	defer r.recv.Close()
	defer r.kubelet.Close()
	if err := createPods(ctx, r.client, 0, opts.Pods, Patchers, opts.Logf); err != nil {
		return nil, err
	}
	r.pods.grow(opts.Pods)
	rep := &SoakReport{Date: time.Now().UTC(), Pods: opts.Pods}
	if rep.RMax, err = maxRate(ctx, r.client, r.pods, Patchers, 5*time.Second); err != nil {
		return nil, err
	}
	rep.Rate = math.Floor(opts.Fraction * rep.RMax)
	h, err := startHerald(opts.Herald, r.kubeconfig, r.config, opts.Dir, opts.Pods, 0, true, 0)
	if err != nil {
		return nil, err
	}
	defer h.stop()
	if _, err := h.waitSynced(5 * time.Minute); err != nil {
		return nil, err
	}
	if err := h.waitWorking(5 * time.Minute); err != nil {
		return nil, err
	}
	opts.Logf("bench: soak of %s at %.0f patches/s (%.0f%% of r_max %.0f) on %d pods", opts.Duration, rep.Rate, 100*opts.Fraction, rep.RMax, opts.Pods)

	obs := newObserver(nil, time.Now())
	r.recv.current.Store(obs)
	begin := time.Now()
	cpu0, _ := h.cpuSeconds()
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan []Sample, 1)
	go func() { sampled <- sampleEvery(sampleCtx, 10*time.Second, h, obs, begin, opts.Logf) }()
	for time.Since(begin) < opts.Duration && ctx.Err() == nil {
		ops := r.pods.plan(rep.Rate, 10*time.Second)
		start := time.Now()
		obs.expect(ops, start)
		if res := send(ctx, r.client, ops, start, Patchers); len(res.failed) > 0 {
			// A refused patch changed nothing: no notification is due. A
			// soak whose control plane refuses writes is void from then on.
			obs.forget(res.failed)
			rep.RefusedPatches += len(res.failed)
			opts.Logf("bench: %d patches refused by the API server: %v", len(res.failed), res.firstErr)
		}
	}
	awaitComplete(obs, time.Minute)
	stopSampling()
	rep.Samples = <-sampled
	cpu1, _ := h.cpuSeconds()
	rep.Duration = time.Since(begin).Seconds()
	rep.Latency, rep.Delivered, rep.Missed, rep.Duplicated, rep.Unexpected = obs.summary()
	rep.MissedKeys = obs.missedKeys(20, begin)
	if rep.Delivered > 0 {
		rep.CPUPer1000 = (cpu1 - cpu0) / float64(rep.Delivered) * 1000
	}
	rep.RSSSlope, rep.RSSNoise = slope(rep.Samples)
	b, _ := json.MarshalIndent(rep, "", "  ")
	return rep, os.WriteFile(filepath.Join(opts.Dir, "soak.json"), append(b, '\n'), 0o644)
}

func sampleEvery(ctx context.Context, every time.Duration, h *heraldProc, obs *observer, begin time.Time, logf func(string, ...any)) []Sample {
	var out []Sample
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
		m, err := h.get("/metrics")
		if err != nil {
			logf("bench: sampling: %v", err)
			continue
		}
		s := Sample{At: time.Since(begin).Seconds(), RSS: h.rss(), Heap: int64(metricValue(string(m), "go_memstats_heap_alloc_bytes")),
			Goroutines: int(metricValue(string(m), "go_goroutines"))}
		s.CPUSeconds, _ = h.cpuSeconds()
		obs.mu.Lock()
		for _, due := range obs.due {
			if due.Before(time.Now()) {
				s.Expected++
			}
		}
		s.Delivered = len(obs.latency)
		obs.mu.Unlock()
		out = append(out, s)
		if len(out)%6 == 0 {
			logf("bench: soak %5.0fs: RSS %.1f MB, heap %.1f MB, %d goroutines, %d of %d notifications due so far", s.At, mb(s.RSS), mb(s.Heap), s.Goroutines, s.Delivered, s.Expected)
		}
	}
}

// slope fits RSS = a + b·t over the last half of the samples and returns
// b (bytes per hour) and the residuals' standard deviation.
func slope(samples []Sample) (perHour, noise float64) {
	half := samples[len(samples)/2:]
	if len(half) < 3 {
		return math.NaN(), math.NaN()
	}
	var st, sr float64
	for _, s := range half {
		st += s.At
		sr += float64(s.RSS)
	}
	n := float64(len(half))
	mt, mr := st/n, sr/n
	var num, den float64
	for _, s := range half {
		num += (s.At - mt) * (float64(s.RSS) - mr)
		den += (s.At - mt) * (s.At - mt)
	}
	b := num / den
	var ss float64
	for _, s := range half {
		d := float64(s.RSS) - (mr + b*(s.At-mt))
		ss += d * d
	}
	return b * 3600, math.Sqrt(ss / n)
}

// Table prints the soak's summary and a row per minute.
func (r *SoakReport) Table(w io.Writer) {
	fmt.Fprintf(w, "soak %s: %d pods, %.0f patches/s (r_max %.0f), %.0f s\n", r.Date.Format("2006-01-02 15:04 UTC"), r.Pods, r.Rate, r.RMax, r.Duration)
	if r.RefusedPatches > 0 {
		fmt.Fprintf(w, "WARNING: the API server refused %d patches; the run is not a clean soak from the first refusal on\n", r.RefusedPatches)
	}
	fmt.Fprintf(w, "notifications: %d delivered, %d missed, %d duplicated, %d unexpected; latency p50 %.1f p99 %.1f p99.9 %.1f max %.1f ms; %.2f CPU-s/1000\n",
		r.Delivered, r.Missed, r.Duplicated, r.Unexpected, r.Latency.P50, r.Latency.P99, r.Latency.P999, r.Latency.Max, r.CPUPer1000)
	for _, k := range r.MissedKeys {
		fmt.Fprintf(w, "  missed: %s\n", k)
	}
	fmt.Fprintf(w, "RSS slope over the last half: %+.2f MB/h (residual noise %.2f MB)\n\n", r.RSSSlope/1e6, r.RSSNoise/1e6)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "minute\tRSS MB\theap MB\tgoroutines\tdelivered\tdue\t")
	var rows []string
	for i, s := range r.Samples {
		if (i+1)%6 == 0 || i == len(r.Samples)-1 {
			rows = append(rows, fmt.Sprintf("%.0f\t%.1f\t%.1f\t%d\t%d\t%d\t", math.Round(s.At/60), mb(s.RSS), mb(s.Heap), s.Goroutines, s.Delivered, s.Expected))
		}
	}
	fmt.Fprintln(tw, strings.Join(slices.Compact(rows), "\n"))
	tw.Flush()
}

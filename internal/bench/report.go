package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what a run measured; bench.json holds it.
type Report struct {
	Date      time.Time `json:"date"`
	GoVersion string    `json:"go"`
	CPUs      int       `json:"cpus"`
	StepSecs  float64   `json:"step_seconds"`
	// GOMAXPROCS herald and the floor notifier ran with (0: Go's
	// default).
	GOMAXPROCS int `json:"gomaxprocs,omitempty"`
	// NoPprof: herald ran without --pprof (Options.NoPprof); its heap
	// figures are then the heap allocated, not the live heap.
	NoPprof bool `json:"no_pprof,omitempty"`
	// APIServerMemoryLimit is the API server's GOMEMLIMIT ("": none).
	APIServerMemoryLimit string `json:"apiserver_memory_limit,omitempty"`
	// MemoryLimit herald was told of (Options.MemoryLimit; 0: none).
	MemoryLimit int64 `json:"memory_limit_bytes,omitempty"`
	// MemoryLimitHeld: the kernel held each herald to MemoryLimit, in a
	// memory cgroup of its own (memcg.go), as a container's runtime does.
	MemoryLimitHeld bool `json:"memory_limit_held,omitempty"`

	Sizes []SizeResult `json:"sizes"`
	// Slope is the cost of one more cached pod, between the two largest
	// sizes: RSS and live heap bytes per pod.
	SlopeRSS  float64 `json:"slope_rss_bytes_per_pod"`
	SlopeHeap float64 `json:"slope_heap_bytes_per_pod"`

	// RMax is the status patches per second the control plane answers
	// with Patchers goroutines patching back to back (herald stopped).
	RMax    float64 `json:"r_max"`
	ChurnAt int     `json:"churn_pods"`
	// IdleCPU is herald's CPU time per second as leader with a synced
	// cache and nothing changing, before the churn steps (a share of a
	// core: 0.005 is 0.5%).
	IdleCPU float64       `json:"idle_cpu_share"`
	Churn   []ChurnResult `json:"churn"`
	// HeraldRSSAfterChurn and FloorRSSAfterChurn are each process's RSS
	// after its last churn step (bytes). The floor notifier keeps no
	// cache, so its figure is the least a notifier's process costs, not a
	// cached notifier's.
	HeraldRSSAfterChurn int64 `json:"herald_rss_after_churn_bytes,omitempty"`
	// HeraldContainerAfterChurn is what the churn's herald's memory
	// cgroup saw, from its start (Report.MemoryLimitHeld).
	HeraldContainerAfterChurn *Container `json:"herald_container_after_churn,omitempty"`
	FloorRSSAfterChurn        int64      `json:"floor_rss_after_churn_bytes,omitempty"`
	// CacheRSSAfterSync and CacheRSSAfterChurn are the cache notifier's
	// (a cache of whole pods, as kubewatch keeps) once synced and after
	// its last churn step.
	CacheRSSAfterSync  int64 `json:"cache_rss_after_sync_bytes,omitempty"`
	CacheRSSAfterChurn int64 `json:"cache_rss_after_churn_bytes,omitempty"`
	// CacheContainer is what the cache notifier's memory cgroup saw
	// (Report.MemoryLimitHeld): through its steps, or to its OOM kill.
	CacheContainer *Container `json:"cache_container,omitempty"`
	// Sustained is the highest rate herald kept up with: every
	// notification delivered exactly once and p99.9 under a second.
	Sustained float64 `json:"sustained_rate"`
}

// SizeResult is one cluster size.
type SizeResult struct {
	Pods int `json:"pods"`
	// Objects are the other objects beside the pods (Options.Cluster).
	Objects  *Objects `json:"objects,omitempty"`
	BareList float64  `json:"bare_list_seconds"` // a paginated LIST of every pod (and, with Objects, of every kind herald lists)
	Sync     float64  `json:"herald_sync_seconds"`
	// SyncPaged is herald's sync with client-go's streaming list off
	// (KUBE_FEATURE_WatchListClient=false): pages of LIST, then a watch.
	SyncPaged float64 `json:"herald_sync_paged_seconds"`
	Memory    Memory  `json:"memory"`
	// Container is what herald's memory cgroup saw from its start to
	// the memory reading (Report.MemoryLimitHeld; nil otherwise).
	Container *Container `json:"container,omitempty"`
	// APIServer is what the bare LIST and herald's two starts cost the
	// API server.
	APIServer struct {
		List           APIServerCost `json:"bare_list"`
		StartPaged     APIServerCost `json:"herald_start_paged"`
		StartStreaming APIServerCost `json:"herald_start_streaming"`
	} `json:"apiserver"`
}

// ChurnResult is one offered rate, on the floor and through herald.
type ChurnResult struct {
	Rate   float64    `json:"rate"`
	Floor  StepResult `json:"floor"`
	Cache  StepResult `json:"cache"` // the cache notifier's, timed by the floor watch
	Herald StepResult `json:"herald"`
}

// StepResult is one step's outcome. For the floor, "delivered" counts
// watch events; for herald, webhook notifications.
type StepResult struct {
	Offered    int     `json:"offered"`
	Sent       int     `json:"sent"`
	Failed     int     `json:"failed"`
	Achieved   float64 `json:"achieved_rate"`
	Latency    Latency `json:"latency"`
	Delivered  int     `json:"delivered"`
	Missed     int     `json:"missed"`
	Duplicated int     `json:"duplicated"`
	Unexpected int     `json:"unexpected"`
	// CPUSeconds is herald's CPU time in the step (for the floor, the
	// floor notifier's); CPUPer1000 divides it by the notifications.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	CPUPer1000 float64 `json:"cpu_seconds_per_1000,omitempty"`
	// Notified is how many POSTs the floor notifier made in the step.
	Notified int `json:"notified,omitempty"`
}

// Exact reports whether every patch was seen exactly once, and nothing
// else.
func (s StepResult) Exact() bool {
	return s.Failed == 0 && s.Missed == 0 && s.Duplicated == 0 && s.Unexpected == 0
}

// Seconds turns a duration into float seconds for the report.
func Seconds(d time.Duration) float64 { return d.Seconds() }

func newReport(opts Options) *Report {
	return &Report{Date: time.Now().UTC(), GoVersion: runtime.Version(), CPUs: runtime.NumCPU(),
		StepSecs: opts.Step.Seconds(), ChurnAt: opts.ChurnAt, GOMAXPROCS: opts.GOMAXPROCS, NoPprof: opts.NoPprof, MemoryLimit: opts.MemoryLimit, APIServerMemoryLimit: opts.APIServerMemoryLimit}
}

// rates are the rates to offer: the asked ones up to r_max, plus (with
// withMax) 80% and 100% of r_max, rounded down.
func (r *Report) rates(asked []float64, rmax float64, withMax bool) []float64 {
	var out []float64
	for _, rate := range asked {
		if rate <= rmax {
			out = append(out, rate)
		}
	}
	for _, f := range []float64{0.8, 1} {
		if rate := math.Floor(f * rmax); withMax && rate >= 1 && !slices.Contains(out, rate) {
			out = append(out, rate)
		}
	}
	slices.Sort(out)
	return out
}

// finish derives the slope and the sustained rate.
func (r *Report) finish() {
	if n := len(r.Sizes); n >= 2 {
		a, b := r.Sizes[n-2], r.Sizes[n-1]
		pods := float64(b.Pods - a.Pods)
		r.SlopeRSS = float64(b.Memory.RSS-a.Memory.RSS) / pods
		r.SlopeHeap = float64(b.Memory.Heap-a.Memory.Heap) / pods
	}
	for _, c := range r.Churn {
		if c.Herald.Exact() && c.Herald.Latency.P999 < 1000 {
			r.Sustained = max(r.Sustained, c.Rate)
		}
	}
}

func (r *Report) write(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Table prints the report as the tables docs/performance.md shows.
func (r *Report) Table(w io.Writer) {
	fmt.Fprintf(w, "herald-bench %s, %s, %d CPUs", r.Date.Format("2006-01-02 15:04 UTC"), r.GoVersion, r.CPUs)
	if r.GOMAXPROCS > 0 {
		fmt.Fprintf(w, ", herald and the floor notifier at GOMAXPROCS=%d", r.GOMAXPROCS)
	}
	if r.NoPprof {
		fmt.Fprint(w, ", herald without --pprof (heap = allocated, garbage included)")
	}
	if r.MemoryLimit > 0 {
		fmt.Fprintf(w, ", herald's memory limit %d MiB (Go's soft limit at 85%%", r.MemoryLimit>>20)
		if r.MemoryLimitHeld {
			fmt.Fprint(w, "; held by a memory cgroup, as in a container")
		}
		fmt.Fprint(w, ")")
	}
	if r.APIServerMemoryLimit != "" {
		fmt.Fprintf(w, ", the API server at GOMEMLIMIT=%s", r.APIServerMemoryLimit)
	}
	fmt.Fprint(w, "\n\n")
	for _, s := range r.Sizes {
		if o := s.Objects; o != nil {
			fmt.Fprintf(w, "beside %d pods: %d Deployments, %d ReplicaSets, %d ConfigMaps, %d Secrets, %d Nodes (the bare LIST pages through the pods, Deployments, Nodes, ConfigMaps and Secrets)\n",
				s.Pods, o.Deployments, o.ReplicaSets, o.ConfigMaps, o.Secrets, o.Nodes)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pods\tbare LIST s\therald sync s\tsync/LIST\tRSS MB\tanon MB\tfile MB\tpeak MB\theap MB\tRSS B/pod\theap B/pod\t")
	for _, s := range r.Sizes {
		m := s.Memory
		fmt.Fprintf(tw, "%d\t%.2f\t%.2f\t%.2f×\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.0f\t\n", s.Pods, s.BareList, s.Sync, s.Sync/s.BareList,
			mb(m.RSS), mb(m.RSSAnon), mb(m.RSSFile), mb(m.PeakRSS), mb(m.Heap), float64(m.RSS)/float64(s.Pods), float64(m.Heap)/float64(s.Pods))
	}
	tw.Flush()
	for _, s := range r.Sizes {
		if c := s.Container; c != nil {
			fmt.Fprintf(w, "%d pods, herald in its memory cgroup from its start to the reading: %s\n", s.Pods, c)
		}
	}
	fmt.Fprint(w, "\nwhat herald's start cost the API server, beside a bare LIST (each on a freshly restarted API server)\n\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pods	\tCPU s	allocated MB	RSS +MB	pod LISTs	sync s	")
	for _, s := range r.Sizes {
		for _, c := range []struct {
			what string
			cost APIServerCost
			secs float64
		}{{"bare LIST", s.APIServer.List, s.BareList}, {"herald, paged lists", s.APIServer.StartPaged, s.SyncPaged}, {"herald, streaming list", s.APIServer.StartStreaming, s.Sync}} {
			fmt.Fprintf(tw, "%d\t%s\t%.2f\t%.1f\t%.1f\t%d\t%.2f\t\n", s.Pods, c.what, c.cost.CPUSeconds, mb(c.cost.Allocated), mb(c.cost.PeakRSSGrowth), c.cost.PodLists, c.secs)
		}
	}
	tw.Flush()
	if len(r.Sizes) >= 2 {
		fmt.Fprintf(w, "\nslope between the two largest sizes: %.0f B RSS, %.0f B heap per cached pod\n", r.SlopeRSS, r.SlopeHeap)
	}
	if len(r.Churn) == 0 {
		return
	}
	fmt.Fprintf(w, "\nidle on %d pods (leader, nothing changing): %.2f%% of a core\n", r.ChurnAt, 100*r.IdleCPU)
	fmt.Fprintf(w, "\nchurn on %d pods, %.0f s per rate; r_max %.0f patches/s\n\n", r.ChurnAt, r.StepSecs, r.RMax)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rate/s\tpatches\tL0 p50\tL0 p99\tL0 p99.9\therald p50\tp99\tp99.9\tmax\tp99−L0 p99\tdelivered\tmissed\tdup\tunexpected\tCPU s/1000\tfloor CPU s/1000\tcache CPU s/1000\t")
	cacheKilled := r.CacheContainer != nil && r.CacheContainer.OOMKills > 0 && r.CacheRSSAfterSync == 0
	for _, c := range r.Churn {
		f, h := c.Floor, c.Herald
		cache := fmt.Sprintf("%.2f", c.Cache.CPUPer1000)
		if cacheKilled {
			cache = "killed"
		}
		fmt.Fprintf(tw, "%.0f\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%+.1f\t%d\t%d\t%d\t%d\t%.2f\t%.2f\t%s\t\n", c.Rate, h.Offered,
			f.Latency.P50, f.Latency.P99, f.Latency.P999, h.Latency.P50, h.Latency.P99, h.Latency.P999, h.Latency.Max,
			h.Latency.P99-f.Latency.P99, h.Delivered, h.Missed, h.Duplicated, h.Unexpected, h.CPUPer1000, f.CPUPer1000, cache)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nlatencies in ms from each patch's due time; sustained (exactly once, p99.9 < 1 s) up to %.0f/s (%.0f%% of r_max)\n",
		r.Sustained, 100*r.Sustained/max(r.RMax, 1))
	cacheRSS := fmt.Sprintf("%.1f MB (%.1f MB after its sync)", mb(r.CacheRSSAfterChurn), mb(r.CacheRSSAfterSync))
	if cacheKilled {
		cacheRSS = "killed at its memory limit before its cache synced"
	}
	fmt.Fprintf(w, "RSS after the churn: herald %.1f MB, the floor notifier (no cache) %.1f MB, the cache notifier (whole pods) %s\n",
		mb(r.HeraldRSSAfterChurn), mb(r.FloorRSSAfterChurn), cacheRSS)
	if c := r.HeraldContainerAfterChurn; c != nil {
		fmt.Fprintf(w, "herald in its memory cgroup, from its start to the churn's end: %s\n", c)
	}
	if c := r.CacheContainer; c != nil {
		fmt.Fprintf(w, "the cache notifier in its memory cgroup: %s\n", c)
	}
	var notes []string
	for _, c := range r.Churn {
		if !c.Floor.Exact() {
			notes = append(notes, fmt.Sprintf("floor at %.0f/s: %d failed, %d missed, %d dup", c.Rate, c.Floor.Failed, c.Floor.Missed, c.Floor.Duplicated))
		}
		if c.Cache.Notified != c.Cache.Delivered {
			notes = append(notes, fmt.Sprintf("cache notifier at %.0f/s: posted %d of %d", c.Rate, c.Cache.Notified, c.Cache.Delivered))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "note: "+strings.Join(notes, "; "))
	}
}

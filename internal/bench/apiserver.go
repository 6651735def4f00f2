package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/testenv"
)

// APIServerCost is what one operation cost the API server: its CPU, the
// bytes it allocated, how far its RSS rose above where it was, and how
// many LISTs of pods it answered (0 when the informer's initial list
// came as a watch's initial events: the streaming list).
type APIServerCost struct {
	CPUSeconds    float64 `json:"cpu_seconds"`
	Allocated     int64   `json:"allocated_bytes"`
	PeakRSSGrowth int64   `json:"peak_rss_growth_bytes"`
	PodLists      int     `json:"pod_lists"`
}

// apiserverProbe measures the API server process while an operation
// runs: CPU from /proc (user + system), allocation and requests from its
// own /metrics, RSS sampled every 20 ms. Each operation is measured on a
// freshly started API server (etcd keeps the objects), its pods' watch
// cache filled again: a Go heap grown by an earlier operation would be
// reused before RSS grows, and the operation measured first would pay
// for what the next one found already mapped.
type apiserverProbe struct {
	env    *testenv.Env
	client kubernetes.Interface
}

// fresh restarts the API server and waits until its pods' watch cache
// is filled, as after a control plane's rolling restart.
func (p apiserverProbe) fresh(ctx context.Context) error {
	p.env.StopAPIServer()
	if err := p.env.StartAPIServer(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		page, err := p.metrics(ctx)
		if err == nil && watchCacheReady(page, "pods") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the restarted API server's pods watch cache was not filled within 2 min (%v)", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// watchCacheReady says whether the page counts an initialization of the
// resource's watch cache.
func watchCacheReady(page, resource string) bool {
	for line := range strings.Lines(page) {
		if strings.HasPrefix(line, "apiserver_watch_cache_initializations_total{") && strings.Contains(line, `resource="`+resource+`"`) {
			return !strings.HasSuffix(strings.TrimSpace(line), " 0")
		}
	}
	return false
}

func (p apiserverProbe) measure(ctx context.Context, op func() error) (APIServerCost, error) {
	if err := p.fresh(ctx); err != nil {
		return APIServerCost{}, err
	}
	pid := p.env.PIDs()[0]
	cpu0, page0, err := p.read(ctx, pid)
	if err != nil {
		return APIServerCost{}, err
	}
	rss0 := processRSS(pid)
	var peak int64 // the sampler's; read after it has ended (sampled)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, processRSS(pid))
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	opErr := op()
	close(stop)
	<-sampled
	if opErr != nil {
		return APIServerCost{}, opErr
	}
	cpu1, page1, err := p.read(ctx, pid)
	if err != nil {
		return APIServerCost{}, err
	}
	return APIServerCost{
		CPUSeconds:    cpu1 - cpu0,
		Allocated:     int64(metricValue(page1, "go_memstats_alloc_bytes_total") - metricValue(page0, "go_memstats_alloc_bytes_total")),
		PeakRSSGrowth: max(peak-rss0, 0),
		PodLists:      int(podLists(page1) - podLists(page0)),
	}, nil
}

// read is the API server's CPU time so far and its /metrics page.
func (p apiserverProbe) read(ctx context.Context, pid int) (cpu float64, page string, err error) {
	if cpu, err = processCPU(pid); err != nil {
		return 0, "", err
	}
	page, err = p.metrics(ctx)
	return cpu, page, err
}

func (p apiserverProbe) metrics(ctx context.Context) (string, error) {
	b, err := p.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("the API server's /metrics: %w", err)
	}
	return string(b), nil
}

// podLists sums apiserver_request_total over the LISTs of pods.
func podLists(page string) float64 {
	var n float64
	for line := range strings.Lines(page) {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="pods"`) || !strings.Contains(line, `verb="LIST"`) {
			continue
		}
		if i := strings.LastIndexByte(strings.TrimSpace(line), ' '); i > 0 {
			v, _ := strconv.ParseFloat(strings.TrimSpace(line)[i+1:], 64)
			n += v
		}
	}
	return n
}

// processCPU is the user+system CPU time of pid, in seconds.
func processCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may
	// hold spaces: utime is field 14, stime 15.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100, nil // USER_HZ is 100 on Linux
}

// processRSS is pid's resident set size (0 if it cannot be read).
func processRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

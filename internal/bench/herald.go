package bench

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// heraldProc is herald running as its own process, as in a cluster, so
// its RSS and CPU are its own and not the benchmark's.
type heraldProc struct {
	name    string // "herald", or what else the process is
	cmd     *exec.Cmd
	addr    string // metrics, health and pprof
	log     string
	started time.Time
	exited  chan struct{}
	// profiling: herald runs with --pprof, and is profiled.
	profiling bool
	// memcg, if set, is the memory cgroup the process runs in (a
	// container's limit, memcg.go); held is what it saw when the
	// process exited.
	memcg *memcg
	held  Container
}

// heraldCgroups numbers the memory cgroups this benchmark makes.
var heraldCgroups atomic.Int64

// startHerald starts herald; with limit > 0, in a memory cgroup of its
// own held to limit bytes, as a container is.
func startHerald(bin, kubeconfig, config, dir string, n, gomaxprocs int, profiling bool, limit int64, env ...string) (*heraldProc, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	args := []string{"run", "--config", config, "--kubeconfig", kubeconfig, "--metrics-addr", addr, "--config-reload-interval", "0"}
	if profiling {
		args = append(args, "--pprof")
	}
	h, err := startProc("herald", bin, args, append(procEnv(gomaxprocs), env...), filepath.Join(dir, fmt.Sprintf("herald-%d.log", n)), limit)
	if err != nil {
		return nil, err
	}
	h.addr, h.profiling = addr, profiling
	return h, nil
}

// startProc starts a measured process (herald, or a reference notifier)
// logging to log; with limit > 0, in a memory cgroup of its own held to
// limit bytes.
func startProc(name, bin string, args, env []string, log string, limit int64) (*heraldProc, error) {
	p := &heraldProc{name: name, log: log, exited: make(chan struct{})}
	logFile, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	if limit > 0 {
		if p.memcg, err = newMemcg(fmt.Sprintf("herald-bench-%d-%d", os.Getpid(), heraldCgroups.Add(1)), limit); err != nil {
			logFile.Close()
			return nil, fmt.Errorf("holding the %s to its memory limit: %w", name, err)
		}
		bin, args = p.memcg.wrap(bin, args)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		if p.memcg != nil {
			p.memcg.remove()
		}
		return nil, err
	}
	go func() {
		p.cmd.Wait()
		logFile.Close()
		if p.memcg != nil {
			p.held, _ = p.memcg.read()
			p.memcg.remove()
		}
		close(p.exited)
	}()
	return p, nil
}

// procEnv is the environment of a measured process: the bench's, with
// GOMAXPROCS set if gomaxprocs is.
func procEnv(gomaxprocs int) []string {
	env := os.Environ()
	if gomaxprocs > 0 {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(gomaxprocs))
	}
	return env
}

// waitFor polls cond every 20 ms until it holds, herald exits, or
// timeout.
func (h *heraldProc) waitFor(what string, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		select {
		case <-h.exited:
			return fmt.Errorf("%s exited while waiting for %s%s:\n%s", h.name, what, h.killedForMemory(), h.tail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no %s within %s:\n%s", h.name, what, timeout, h.tail())
		}
	}
	return nil
}

// waitSynced waits until /readyz answers (every cache has listed) and
// returns the time since the process started.
func (h *heraldProc) waitSynced(timeout time.Duration) (time.Duration, error) {
	err := h.waitFor("cache sync", timeout, func() bool {
		resp, err := http.Get("http://" + h.addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return time.Since(h.started), err
}

// waitWorking waits until herald leads, its workers run (the startup
// reconcile is over) and its work queue is empty (the initial list's keys
// are done): from then on every change is a live one, and memory is
// what the cache costs at rest.
func (h *heraldProc) waitWorking(timeout time.Duration) error {
	return h.waitFor("workers and an empty queue", timeout, func() bool {
		b, _ := os.ReadFile(h.log)
		if !strings.Contains(string(b), `"msg":"starting workers"`) {
			return false
		}
		m, err := h.get("/metrics")
		return err == nil && strings.Contains(string(m), `herald_workqueue_depth{name="herald"} 0`+"\n")
	})
}

// container reports what herald's memory cgroup saw so far (nil without
// one).
func (h *heraldProc) container() *Container {
	if h.memcg == nil {
		return nil
	}
	select {
	case <-h.exited:
		c := h.held
		return &c
	default:
	}
	c, err := h.memcg.read()
	if err != nil {
		return nil
	}
	return &c
}

// killedForMemory says, for an error, that the kernel killed herald
// at its memory limit, if it did.
func (h *heraldProc) killedForMemory() string {
	if c := h.container(); c != nil && c.OOMKills > 0 {
		return fmt.Sprintf(" (killed at its %d MiB memory limit: out of memory)", c.Limit>>20)
	}
	return ""
}

func (h *heraldProc) get(path string) ([]byte, error) {
	resp, err := http.Get("http://" + h.addr + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// Memory is herald's footprint after a forced garbage collection.
type Memory struct {
	RSS     int64 `json:"rss_bytes"`
	RSSAnon int64 `json:"rss_anon_bytes"` // heap, stacks: what grows with the cache
	RSSFile int64 `json:"rss_file_bytes"` // the binary's mapped pages
	PeakRSS int64 `json:"peak_rss_bytes"`
	Heap    int64 `json:"heap_alloc_bytes"` // live Go heap (with -no-pprof: allocated, garbage included)
}

// memory forces a GC (through the heap profile endpoint, whose profile it
// writes to profile when not empty) and reads RSS from /proc and the live
// heap from /metrics. Without profiling there is no endpoint to force a
// collection: the heap read is then the heap allocated, garbage included.
func (h *heraldProc) memory(profile string) (Memory, error) {
	if h.profiling {
		heap, err := h.get("/debug/pprof/heap?gc=1")
		if err != nil {
			return Memory{}, err
		}
		if profile != "" {
			if err := os.WriteFile(profile, heap, 0o644); err != nil {
				return Memory{}, err
			}
		}
	}
	status, err := h.status()
	if err != nil {
		return Memory{}, err
	}
	m := Memory{RSS: status["VmRSS"], RSSAnon: status["RssAnon"], RSSFile: status["RssFile"], PeakRSS: status["VmHWM"]}
	metrics, err := h.get("/metrics")
	if err != nil {
		return m, err
	}
	m.Heap = int64(metricValue(string(metrics), "go_memstats_heap_alloc_bytes"))
	return m, nil
}

// status reads the memory lines of /proc/<pid>/status, in bytes.
func (h *heraldProc) status() (map[string]int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", h.cmd.Process.Pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, _ := strings.Cut(sc.Text(), ":")
		if kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64); err == nil {
			out[name] = kb << 10
		}
	}
	return out, sc.Err()
}

// rss is herald's resident set size now (0 if it cannot be read).
func (h *heraldProc) rss() int64 { return processRSS(h.cmd.Process.Pid) }

// metricValue reads one unlabelled sample from a Prometheus text page.
func metricValue(page, name string) float64 {
	for line := range strings.Lines(page) {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

// cpuSeconds is the user+system CPU time herald's process has used.
func (h *heraldProc) cpuSeconds() (float64, error) { return processCPU(h.cmd.Process.Pid) }

// saveProfile writes one of herald's pprof endpoints to path; a failure
// is logged, as the measurement goes on without it.
func (h *heraldProc) saveProfile(endpoint, path string, logf func(string, ...any)) {
	b, err := h.get(endpoint)
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		logf("bench: %s: %v", endpoint, err)
	}
}

// cpuProfile records a CPU profile of the next d into path, in the
// background; the returned channel reports the result.
func (h *heraldProc) cpuProfile(d time.Duration, path string) <-chan error {
	done := make(chan error, 1)
	go func() {
		b, err := h.get(fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds())))
		if err == nil {
			err = os.WriteFile(path, b, 0o644)
		}
		done <- err
	}()
	return done
}

// idle profiles herald for d into path, then measures its CPU share over
// another d with nothing changing (apart, so the profiler's own cost is
// not counted; the first window also lets the start's last work, such as
// returning the initial list's memory to the OS, finish).
func (h *heraldProc) idle(d time.Duration, path string) (float64, error) {
	if !h.profiling {
		time.Sleep(d) // the same settling time, unprofiled
	} else if err := <-h.cpuProfile(d, path); err != nil {
		return 0, fmt.Errorf("idle CPU profile: %w", err)
	}
	cpu0, err := h.cpuSeconds()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	time.Sleep(d) // the measurement window itself: herald is left alone
	cpu1, err := h.cpuSeconds()
	if err != nil {
		return 0, err
	}
	return (cpu1 - cpu0) / time.Since(start).Seconds(), nil
}

// stop sends SIGTERM and waits for herald to drain and exit.
func (h *heraldProc) stop() {
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
	case <-time.After(40 * time.Second):
		h.cmd.Process.Kill()
		<-h.exited
	}
}

func (h *heraldProc) tail() string {
	b, _ := os.ReadFile(h.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

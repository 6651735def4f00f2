package bench

// A container's memory limit, held by the kernel: with -memory-limit,
// each herald process runs in a memory cgroup of its own whose limit is
// that figure, as the kubelet puts a container in one. Go's soft limit
// (GOMEMLIMIT, from HERALD_MEMORY_LIMIT) only asks the collector to
// hold the heap; the cgroup is what reclaims the binary's pages at the
// limit and, failing that, kills the process: "no OOM kill" is then
// something the benchmark can see (memory.oom_control's oom_kill, or
// memory.events' oom_kill on cgroup v2).

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Container is what the kernel's memory cgroup saw of one herald
// process held to a limit.
type Container struct {
	Limit int64 `json:"limit_bytes"`
	// Peak is the most memory charged to the process at once: anonymous
	// memory, and the page cache it read (its binary's pages among it),
	// which the kernel takes back first at the limit.
	Peak int64 `json:"peak_bytes"`
	// AtLimit counts the times a charge met the limit and the kernel
	// reclaimed pages to make room (cgroup v1's failcnt; v2's "max"
	// events).
	AtLimit int64 `json:"at_limit"`
	// OOMKills counts processes the kernel killed for the limit.
	OOMKills int64 `json:"oom_kills"`
}

func (c *Container) String() string {
	return fmt.Sprintf("peak %.1f MiB of %d MiB (memory and page cache charged), %d times at the limit (pages reclaimed), %d OOM kills",
		float64(c.Peak)/(1<<20), c.Limit>>20, c.AtLimit, c.OOMKills)
}

// memcg is one memory cgroup, made for one process.
type memcg struct {
	dir string
	v2  bool
}

// memcgRoots are where a memory cgroup can be made: cgroup v2's
// unified hierarchy (when it has the memory controller), then v1's
// memory hierarchy.
var memcgRoots = []struct {
	dir string
	v2  bool
}{{"/sys/fs/cgroup", true}, {"/sys/fs/cgroup/unified", true}, {"/sys/fs/cgroup/memory", false}}

// newMemcg makes a memory cgroup named name with limit bytes, or says
// why none can be made here (not root, no memory controller).
func newMemcg(name string, limit int64) (*memcg, error) {
	var tried []string
	for _, root := range memcgRoots {
		if root.v2 {
			controllers, err := os.ReadFile(filepath.Join(root.dir, "cgroup.controllers"))
			if err != nil || !strings.Contains(" "+string(controllers)+" ", " memory ") {
				continue
			}
		} else if _, err := os.Stat(filepath.Join(root.dir, "memory.limit_in_bytes")); err != nil {
			continue
		}
		m := &memcg{dir: filepath.Join(root.dir, name), v2: root.v2}
		if err := os.Mkdir(m.dir, 0o755); err != nil {
			tried = append(tried, err.Error())
			continue
		}
		if err := m.setLimit(limit); err != nil {
			m.remove()
			tried = append(tried, err.Error())
			continue
		}
		return m, nil
	}
	if len(tried) == 0 {
		return nil, errors.New("no memory cgroup hierarchy is mounted under /sys/fs/cgroup")
	}
	return nil, fmt.Errorf("no memory cgroup could be made (run as root): %s", strings.Join(tried, "; "))
}

func (m *memcg) setLimit(limit int64) error {
	file, value := "memory.limit_in_bytes", strconv.FormatInt(limit, 10)
	if m.v2 {
		file = "memory.max"
	} else {
		// Swap would let the process outgrow its limit unseen; a
		// container's limit on a node without swap is memory alone.
		if err := os.WriteFile(filepath.Join(m.dir, "memory.swappiness"), []byte("0"), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(m.dir, file), []byte(value), 0o644)
}

// procs is the file a process's pid is written to, to move it in.
func (m *memcg) procs() string { return filepath.Join(m.dir, "cgroup.procs") }

// wrap returns the command that runs bin with args inside the cgroup:
// a shell that moves itself in, then becomes bin, so that every page
// herald ever touches is charged to it (a process moved in after it
// started would leave its first pages outside).
func (m *memcg) wrap(bin string, args []string) (string, []string) {
	return "/bin/sh", append([]string{"-c", `echo $$ > "$1" && shift && exec "$@"`, "sh", m.procs(), bin}, args...)
}

// read reports what the cgroup saw so far.
func (m *memcg) read() (Container, error) {
	var c Container
	var err error
	if m.v2 {
		if c.Limit, err = readInt(filepath.Join(m.dir, "memory.max")); err != nil {
			return c, err
		}
		if c.Peak, err = readInt(filepath.Join(m.dir, "memory.peak")); err != nil {
			return c, err
		}
		events, err := readKeyed(filepath.Join(m.dir, "memory.events"))
		c.AtLimit, c.OOMKills = events["max"], events["oom_kill"]
		return c, err
	}
	if c.Limit, err = readInt(filepath.Join(m.dir, "memory.limit_in_bytes")); err != nil {
		return c, err
	}
	if c.Peak, err = readInt(filepath.Join(m.dir, "memory.max_usage_in_bytes")); err != nil {
		return c, err
	}
	if c.AtLimit, err = readInt(filepath.Join(m.dir, "memory.failcnt")); err != nil {
		return c, err
	}
	oom, err := readKeyed(filepath.Join(m.dir, "memory.oom_control"))
	c.OOMKills = oom["oom_kill"]
	return c, err
}

// remove deletes the cgroup once its process has exited.
func (m *memcg) remove() { os.Remove(m.dir) }

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// readKeyed reads a file of "key value" lines.
func readKeyed(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), " "); ok {
			out[k], _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return out, s.Err()
}

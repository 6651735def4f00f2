package bench

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// allocateMiB, in a test binary's environment, makes it allocate and
// touch that many MiB, then exit: a process whose memory a test chooses.
const allocateMiB = "HERALD_BENCH_TEST_ALLOCATE_MIB"

func allocateIfAsked() {
	n, err := strconv.Atoi(os.Getenv(allocateMiB))
	if err != nil {
		return
	}
	held := make([][]byte, 0, n)
	for range n {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // touched, so charged
		}
		held = append(held, b)
	}
	os.Stdout.WriteString("allocated " + strconv.Itoa(len(held)) + " MiB\n")
	os.Exit(0)
}

// memcgOrSkip makes a memory cgroup, or skips where this machine lets
// none be made (not root).
func memcgOrSkip(t *testing.T, limit int64) *memcg {
	t.Helper()
	m, err := newMemcg("herald-bench-test-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(heraldCgroups.Add(1), 10), limit)
	if err != nil {
		t.Skipf("no memory cgroup here: %v", err)
	}
	t.Cleanup(m.remove)
	return m
}

// TestMemcgHoldsAProcessToItsLimit: a process run in the cgroup is
// charged from its first page, killed by the kernel when it outgrows the
// limit, and the cgroup says so; one within the limit is left alone.
func TestMemcgHoldsAProcessToItsLimit(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, mib int) (*memcg, error) {
		m := memcgOrSkip(t, 64<<20)
		bin, args := m.wrap(self, nil)
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), allocateMiB+"="+strconv.Itoa(mib))
		out, err := cmd.CombinedOutput()
		t.Logf("%s: %v: %s", name, err, out)
		return m, err
	}

	m, err := run("within", 16)
	if err != nil {
		t.Fatalf("16 MiB under a 64 MiB limit: %v", err)
	}
	c, err := m.read()
	if err != nil {
		t.Fatal(err)
	}
	if c.Limit != 64<<20 || c.OOMKills != 0 || c.Peak < 16<<20 || c.Peak > 64<<20 {
		t.Errorf("16 MiB under a 64 MiB limit: %+v; want the limit, no OOM kill and a peak of 16 to 64 MiB", c)
	}

	m, err = run("over", 256)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 {
		t.Fatalf("256 MiB under a 64 MiB limit: %v, want killed by a signal", err)
	}
	if c, err = m.read(); err != nil {
		t.Fatal(err)
	}
	if c.OOMKills != 1 || c.Peak > 64<<20 || c.Peak < 60<<20 {
		t.Errorf("256 MiB under a 64 MiB limit: %+v; want one OOM kill at a peak of the limit", c)
	}
}

// TestHeraldHeldToItsMemoryLimit: herald started with a limit runs in a
// cgroup of its own, and a kill at the limit is named as such.
func TestHeraldHeldToItsMemoryLimit(t *testing.T) {
	memcgOrSkip(t, 64<<20) // only to skip where none can be made
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h, err := startHerald(self, "kubeconfig", "config", t.TempDir(), 1, 0, false, 64<<20, allocateMiB+"=256")
	if err != nil {
		t.Fatal(err)
	}
	defer h.stop()
	_, err = h.waitSynced(time.Minute)
	if err == nil || !strings.Contains(err.Error(), "killed at its 64 MiB memory limit") {
		t.Fatalf("herald over its limit: %v; want it named killed at its limit", err)
	}
	if c := h.container(); c == nil || c.OOMKills != 1 {
		t.Errorf("the cgroup saw %+v, want one OOM kill", c)
	}
	if _, err := os.Stat(h.memcg.dir); !os.IsNotExist(err) {
		t.Errorf("the cgroup %s is left behind (%v)", h.memcg.dir, err)
	}
}

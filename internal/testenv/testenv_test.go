package testenv

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// pgrep lists the pids whose command line contains pattern.
func pgrep(t *testing.T, pattern string) []string {
	t.Helper()
	out, err := exec.Command("pgrep", "-f", pattern).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
			return nil // no match
		}
		t.Fatalf("pgrep: %v", err)
	}
	return strings.Fields(string(out))
}

func TestStartServesAndStopLeavesNoProcesses(t *testing.T) {
	dir := t.TempDir()
	env, err := Start(context.Background(), Options{Logf: t.Logf, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := pgrep(t, dir); len(got) != 2 {
		t.Errorf("pgrep %s while running: %v, want etcd and kube-apiserver", dir, got)
	}
	client, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	v, err := client.Discovery().ServerVersion()
	if err != nil || v.GitVersion != KubeVersion {
		t.Errorf("server version %v, %v; want %s", v, err, KubeVersion)
	}
	env.Stop()
	env.Stop() // safe twice
	if got := pgrep(t, dir); len(got) != 0 {
		t.Errorf("processes left after Stop: %v", got)
	}
}

func TestConfigForActsAsAnotherUser(t *testing.T) {
	env := New(t)
	ctx := context.Background()
	admin, _ := env.Client()
	if _, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("admin cannot list pods: %v", err)
	}
	alice, err := kubernetes.NewForConfig(env.ConfigFor("alice", "devs"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = alice.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("alice listing pods without RBAC: %v, want Forbidden", err)
	}
}

// TestConcurrentBuildersBuildOnce: two callers at once, one build lock:
// each program is built once, by whoever holds the lock, the other finds
// it there, and no temporary file is left. Two of the test images'
// programs stand in for the control plane's (which link for a minute and
// a half of CPU; make testenv builds those with the same buildMissing).
func TestConcurrentBuildersBuildOnce(t *testing.T) {
	binDir := filepath.Join(t.TempDir(), "bin")
	builds := []goBuild{
		{"./images/pause", filepath.Join(binDir, "pause"), "-s -w"},
		{"./images/workload", filepath.Join(binDir, "workload"), "-s -w"},
	}
	var mu sync.Mutex
	var building []string
	logf := func(format string, args ...any) {
		if line := fmt.Sprintf(format, args...); strings.HasPrefix(line, "testenv: building ") {
			mu.Lock()
			building = append(building, line)
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { errs[i] = buildMissing(context.Background(), binDir, sourceDir(), builds, logf) })
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
	}
	if len(building) != len(builds) {
		t.Errorf("%d builds for %d programs and two callers, want each built once:\n%s", len(building), len(builds), strings.Join(building, "\n"))
	}
	for _, b := range builds {
		if info, err := os.Stat(b.out); err != nil || info.Mode()&0o111 == 0 {
			t.Errorf("%s: %v, want an executable", b.out, err)
		}
	}
	entries, _ := os.ReadDir(binDir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// TestControlPlaneBinariesAreTheTestedVersions: the control plane in the
// cache (built by make testenv) says the versions herald is tested with.
func TestControlPlaneBinariesAreTheTestedVersions(t *testing.T) {
	bins, err := EnsureBinaries(context.Background(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bins.Etcd, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), strings.TrimPrefix(EtcdVersion, "v")) {
		t.Errorf("etcd --version: %v\n%s", err, out)
	}
	out, err = exec.Command(bins.KubeAPIServer, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), KubeVersion) {
		t.Errorf("kube-apiserver --version: %v\n%s", err, out)
	}
}

// TestStartAgainWhenAPortIsTaken: a port picked free and taken by another
// listener before etcd binds it (tests in parallel) makes the start try
// again on new ports, not fail, and not use what took it: a listener
// that never answers, or another test's etcd, healthy and answering.
func TestStartAgainWhenAPortIsTaken(t *testing.T) {
	other, err := Start(context.Background(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Stop()
	otherEtcd, err := url.Parse(other.EtcdURL)
	if err != nil {
		t.Fatal(err)
	}
	otherAddr, err := net.ResolveTCPAddr("tcp", otherEtcd.Host)
	if err != nil {
		t.Fatal(err)
	}
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	for name, taken := range map[string]net.Addr{"a listener that never answers": silent.Addr(), "another test's etcd": otherAddr} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			var logs syncLines
			env, err := Start(context.Background(), Options{Dir: t.TempDir(), Logf: logs.add, freePorts: func(n int) ([]int, error) {
				calls++
				ports, err := freePorts(n)
				if calls == 1 && err == nil {
					ports[0] = taken.(*net.TCPAddr).Port // etcd's client port
				}
				return ports, err
			}})
			if err != nil {
				t.Fatalf("start with a taken port: %v", err)
			}
			defer env.Stop()
			if calls != 2 || !logs.has("starting again on new ports") {
				t.Errorf("ports picked %d times (want 2), logs:\n%s", calls, logs.String())
			}
			client, err := env.Client()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.Discovery().ServerVersion(); err != nil {
				t.Errorf("the second start does not serve: %v", err)
			}
		})
	}
}

type syncLines struct {
	mu    sync.Mutex
	lines []string
}

func (s *syncLines) add(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, fmt.Sprintf(format, args...))
}

func (s *syncLines) has(sub string) bool {
	return strings.Contains(s.String(), sub)
}

func (s *syncLines) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

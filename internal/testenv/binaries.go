package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// Versions of the control plane herald is tested against. They must match
// internal/testenv/tools/go.mod.
const (
	KubeVersion = "v1.36.3"
	EtcdVersion = "v3.6.8"
)

// Binaries are the paths of the control-plane programs (the scheduler,
// controller-manager, kubelet and kube-proxy are for a real node,
// Options.Node).
type Binaries struct {
	KubeAPIServer         string
	Etcd                  string
	KubeScheduler         string
	KubeControllerManager string
	Kubelet               string
	KubeProxy             string
}

// sourceDir is this package's directory, known at compile time; the tools
// module and the default cache sit relative to it.
func sourceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// CacheDir is where built binaries live: $HERALD_CACHE_DIR, or .cache at
// the top of the repository (git-ignored).
func CacheDir() string {
	if d := os.Getenv("HERALD_CACHE_DIR"); d != "" {
		return d
	}
	return filepath.Join(sourceDir(), "..", "..", ".cache")
}

// EnsureBinaries returns the control-plane binaries, building any that are
// missing from the Go module proxy first. logf gets progress lines, since a
// cold build takes minutes. Concurrent callers, in this process or others,
// serialise on a file lock, and each binary is built to a temporary name
// and renamed, so a reader never sees half a file.
func EnsureBinaries(ctx context.Context, logf func(format string, args ...any)) (Binaries, error) {
	return ensureBinariesIn(ctx, filepath.Join(CacheDir(), "bin"), logf)
}

func ensureBinariesIn(ctx context.Context, binDir string, logf func(format string, args ...any)) (Binaries, error) {
	bins := Binaries{
		KubeAPIServer:         filepath.Join(binDir, "kube-apiserver-"+KubeVersion),
		Etcd:                  filepath.Join(binDir, "etcd-"+EtcdVersion),
		KubeScheduler:         filepath.Join(binDir, "kube-scheduler-"+KubeVersion),
		KubeControllerManager: filepath.Join(binDir, "kube-controller-manager-"+KubeVersion),
		Kubelet:               filepath.Join(binDir, "kubelet-"+KubeVersion),
		KubeProxy:             filepath.Join(binDir, "kube-proxy-"+KubeVersion),
	}
	if exists(bins.KubeAPIServer) && exists(bins.Etcd) && exists(bins.KubeScheduler) && exists(bins.KubeControllerManager) && exists(bins.Kubelet) && exists(bins.KubeProxy) {
		return bins, nil
	}
	// Kubernetes' release builds stamp the version in; without it the
	// server reports v0.0.0-master to clients.
	kubeLDFlags := "-X k8s.io/component-base/version.gitVersion=" + KubeVersion +
		" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"
	return bins, buildMissing(ctx, binDir, filepath.Join(sourceDir(), "tools"), []goBuild{
		{"go.etcd.io/etcd/server/v3", bins.Etcd, ""},
		{"k8s.io/kubernetes/cmd/kube-apiserver", bins.KubeAPIServer, kubeLDFlags},
		{"k8s.io/kubernetes/cmd/kube-scheduler", bins.KubeScheduler, kubeLDFlags},
		{"k8s.io/kubernetes/cmd/kube-controller-manager", bins.KubeControllerManager, kubeLDFlags},
		{"k8s.io/kubernetes/cmd/kubelet", bins.Kubelet, kubeLDFlags},
		{"k8s.io/kubernetes/cmd/kube-proxy", bins.KubeProxy, kubeLDFlags},
	}, logf)
}

// goBuild is one program built into the cache: `go build -ldflags=ldflags
// -o out pkg`.
type goBuild struct{ pkg, out, ldflags string }

// buildMissing builds, in the module at dir, each of builds whose output
// does not exist yet, holding binDir's build lock: a concurrent caller
// (in this process or another) waits, then finds the outputs there. Each
// is built to a temporary name and renamed, so a reader never sees half
// a file.
func buildMissing(ctx context.Context, binDir, dir string, builds []goBuild, logf func(format string, args ...any)) error {
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	unlock, err := lockBuilds(binDir)
	if err != nil {
		return err
	}
	defer unlock()
	for _, b := range builds {
		if exists(b.out) { // built by whoever held the lock before us
			continue
		}
		logf("testenv: building %s into %s (the first build takes several minutes on 2 cores)", b.pkg, binDir)
		start := time.Now()
		tmp := fmt.Sprintf("%s.tmp-%d", b.out, os.Getpid())
		cmd := exec.CommandContext(ctx, "go", "build", "-ldflags="+b.ldflags, "-o", tmp, b.pkg)
		cmd.Dir = dir
		stopProgress := progress(logf, filepath.Base(b.out), start)
		out, err := cmd.CombinedOutput()
		stopProgress()
		if err != nil {
			os.Remove(tmp)
			return fmt.Errorf("building %s in %s: %w\n%s", b.pkg, dir, err, out)
		}
		if err := os.Rename(tmp, b.out); err != nil {
			return err
		}
		logf("testenv: built %s in %s", filepath.Base(b.out), time.Since(start).Round(time.Second))
	}
	return nil
}

// lockBuilds takes the cache's build lock, shared by every process that
// may build into binDir; unlock (or the process ending) releases it.
func lockBuilds(binDir string) (unlock func(), err error) {
	lock, err := os.OpenFile(filepath.Join(binDir, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return nil, fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	return func() { lock.Close() }, nil // closing the file releases the lock
}

// progress logs a line every 30 s until stopped, so a long build is never
// silent.
func progress(logf func(string, ...any), what string, start time.Time) (stop func()) {
	t := time.NewTicker(30 * time.Second)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-t.C:
				logf("testenv: still building %s (%s so far)", what, time.Since(start).Round(time.Second))
			case <-done:
				return
			}
		}
	}()
	return func() { t.Stop(); close(done) }
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}

// HelmVersion is the helm the chart is tested with.
const HelmVersion = "v3.22.0"

// EnsureHelm returns the helm binary, building it from the Go module
// proxy into the cache first if needed (about 1.5 min cold), under the
// same lock as the control-plane binaries.
func EnsureHelm(ctx context.Context, logf func(format string, args ...any)) (string, error) {
	return ensureInstalled(ctx, logf, "helm", "helm.sh/helm/v3/cmd/helm", HelmVersion)
}

// PromtoolVersion is the Prometheus release whose promtool checks the
// chart's alerting rules.
const PromtoolVersion = "v0.316.0"

// EnsurePromtool returns Prometheus' promtool, built like helm (about 2
// min cold). Without service discovery (remove_all_sd): promtool's rule
// checks need none, and one discovery dependency's source is not served
// by the module proxy.
func EnsurePromtool(ctx context.Context, logf func(format string, args ...any)) (string, error) {
	return ensureInstalled(ctx, logf, "promtool", "github.com/prometheus/prometheus/cmd/promtool", PromtoolVersion, "-tags", "remove_all_sd")
}

// ensureInstalled returns <cache>/bin/<name>-<version>, go-installing pkg
// at version there first if needed.
func ensureInstalled(ctx context.Context, logf func(format string, args ...any), name, pkg, version string, flags ...string) (string, error) {
	binDir := filepath.Join(CacheDir(), "bin")
	out := filepath.Join(binDir, name+"-"+version)
	if exists(out) {
		return out, nil
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockBuilds(binDir)
	if err != nil {
		return "", err
	}
	defer unlock()
	if exists(out) {
		return out, nil
	}
	tmp, err := os.MkdirTemp(binDir, "."+name+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	logf("testenv: building %s %s into %s", name, version, binDir)
	start := time.Now()
	stop := progress(logf, name, start)
	cmd := exec.CommandContext(ctx, "go", append(append([]string{"install"}, flags...), pkg+"@"+version)...)
	cmd.Env = append(os.Environ(), "GOBIN="+tmp)
	cmd.Dir = tmp // outside any module: go install pkg@version builds it on its own
	output, err := cmd.CombinedOutput()
	stop()
	if err != nil {
		return "", fmt.Errorf("building %s: %w\n%s", name, err, output)
	}
	if err := os.Rename(filepath.Join(tmp, name), out); err != nil {
		return "", err
	}
	logf("testenv: built %s in %s", name, time.Since(start).Round(time.Second))
	return out, nil
}

// ActionlintVersion checks the GitHub Actions workflows.
const ActionlintVersion = "v1.7.12"

// EnsureActionlint returns actionlint, built like helm.
func EnsureActionlint(ctx context.Context, logf func(format string, args ...any)) (string, error) {
	return ensureInstalled(ctx, logf, "actionlint", "github.com/rhysd/actionlint/cmd/actionlint", ActionlintVersion)
}

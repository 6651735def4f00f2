package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// RegistryVersion is the CNCF distribution registry that images and OCI
// charts are pushed to in tests, as to a user's registry.
const RegistryVersion = "v3.1.2"

// EnsureRegistry returns the registry binary, built from the Go module
// proxy into the cache first if needed.
func EnsureRegistry(ctx context.Context, logf func(format string, args ...any)) (string, error) {
	return ensureInstalled(ctx, logf, "registry", "github.com/distribution/distribution/v3/cmd/registry", RegistryVersion)
}

// Registry is a real OCI registry (distribution) serving plain HTTP.
type Registry struct {
	// Host is its host:port, as image references and `helm push
	// oci://` name it.
	Host string
	proc *process
}

// StartRegistry runs a registry for the test on host (an address of this
// machine: 127.0.0.1, or a test node's host end, which the node's
// containerd pulls from) and stops it when the test ends.
func StartRegistry(t testing.TB, host string) *Registry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, err := RunRegistry(ctx, t.TempDir(), host, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// RunRegistry runs a registry storing its content under dir, on a free
// port of host. Stop it with Stop.
func RunRegistry(ctx context.Context, dir, host string, logf func(format string, args ...any)) (*Registry, error) {
	bin, err := EnsureRegistry(ctx, logf)
	if err != nil {
		return nil, err
	}
	for attempt := range 3 { // a port taken between the probe and the bind: try another
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, err
		}
		addr := net.JoinHostPort(host, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
		l.Close()
		config := filepath.Join(dir, "config.yml")
		cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\n  accesslog: {disabled: true}\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n",
			filepath.Join(dir, "data"), addr)
		if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
			return nil, err
		}
		proc, err := startProcess(bin, filepath.Join(dir, fmt.Sprintf("registry-%d.log", attempt)), "serve", config)
		if err != nil {
			return nil, err
		}
		client := &http.Client{Timeout: time.Second}
		if waitFor(ctx, proc, 30*time.Second, func() bool { return httpOK(client, "http://"+addr+"/v2/") }) == nil {
			return &Registry{Host: addr, proc: proc}, nil
		}
		logf("registry did not start:\n%s", proc.tail(20))
		proc.stop()
	}
	return nil, fmt.Errorf("the registry did not become ready (logs in %s)", dir)
}

// Stop stops the registry.
func (r *Registry) Stop() { r.proc.stop() }

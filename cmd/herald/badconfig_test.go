package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// countingAPIServer is a kubeconfig whose API server is a listener that
// only counts connections: a bad configuration must never reach it.
func countingAPIServer(t *testing.T) (kubeconfig string, conns *atomic.Int32) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns = &atomic.Int32{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://%s"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, ln.Addr())), 0o600)
	return kubeconfig, conns
}

// positioned is an error line that says where: file:line:col.
var positioned = regexp.MustCompile(`^testdata/bad-config/[a-z0-9-]+\.yaml:\d+:\d+: \S`)

// TestBadConfigCorpus runs `herald run` on every broken configuration
// under testdata/bad-config: each exits 1 before connecting to anything,
// says what is wrong and where (file:line:col on every line), and says it
// exactly as its .err file records (go test -run TestBadConfigCorpus
// -update rewrites them; review the diff).
func TestBadConfigCorpus(t *testing.T) {
	t.Setenv("HERALD_TEST_UNSET_SECRET", "")
	os.Unsetenv("HERALD_TEST_UNSET_SECRET") // restored by Setenv's cleanup
	kc, conns := countingAPIServer(t)
	files, _ := filepath.Glob("testdata/bad-config/*.yaml")
	if len(files) < 50 {
		t.Fatalf("%d broken configurations, want at least 50", len(files))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runMain(context.Background(), []string{"run", "--config", file, "--kubeconfig", kc, "--metrics-addr", "127.0.0.1:0"}, &stdout, &stderr)
			if code != 1 {
				t.Errorf("exit code %d, want 1; stderr:\n%s", code, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("wrote to stdout: %q", stdout.String())
			}
			for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				if !positioned.MatchString(line) {
					t.Errorf("error line without file:line:col: %q", line)
				}
			}
			golden := strings.TrimSuffix(file, ".yaml") + ".err"
			if *update {
				os.WriteFile(golden, stderr.Bytes(), 0o644)
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got := stderr.String(); got != string(want) {
				t.Errorf("stderr:\n%s\nwant (%s):\n%s", got, golden, want)
			}
		})
	}
	checkCorpusOffline(t, files)
	if n := conns.Load(); n != 0 {
		t.Errorf("herald made %d connections to the API server with bad configurations", n)
	}

	// Files that cannot be read at all: named, exit 1, no connection.
	for _, tt := range []struct{ path, want string }{
		{"testdata/bad-config", "is a directory"},
		{"testdata/bad-config/does-not-exist.yaml", "no such file or directory"},
	} {
		var stderr bytes.Buffer
		if code := runMain(context.Background(), []string{"run", "--config", tt.path, "--kubeconfig", kc}, &bytes.Buffer{}, &stderr); code != 1 ||
			!strings.Contains(stderr.String(), tt.path) || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and the path with %q", tt.path, code, stderr.String(), tt.want)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("herald made %d connections with unreadable configurations", n)
	}
}

// readingError matches the errors only reading a secret or TLS file finds:
// validate --offline does not read them.
var readingError = regexp.MustCompile(`(\.env: environment variable .* is not set or empty|\.file: cannot read the secret|\.file: the secret file .* is empty|(caFile|certFile|keyFile): cannot read )`)

// checkCorpusOffline: validate --offline finds every error of the corpus
// but those of reading secrets and files, with the same positions; a file
// whose errors are all of that kind passes.
func checkCorpusOffline(t *testing.T, files []string) {
	t.Helper()
	passed := 0
	for _, file := range files {
		var stdout, stderr bytes.Buffer
		code := runMain(context.Background(), []string{"validate", "--offline", "-f", file}, &stdout, &stderr)
		golden, err := os.ReadFile(strings.TrimSuffix(file, ".yaml") + ".err")
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, line := range strings.Split(strings.TrimSpace(string(golden)), "\n") {
			if !readingError.MatchString(line) {
				want = append(want, line)
			}
		}
		switch {
		case len(want) == 0 && code == 0:
			passed++
		case len(want) == 0:
			t.Errorf("validate --offline %s: exit %d, want 0 (its only errors are reading secrets or files):\n%s", file, code, stderr.String())
		case code != 1 || strings.TrimSpace(stderr.String()) != strings.Join(want, "\n"):
			t.Errorf("validate --offline %s: exit %d\n%s\nwant exit 1 and\n%s", file, code, stderr.String(), strings.Join(want, "\n"))
		}
	}
	t.Logf("validate --offline: %d of %d broken configurations fail as they should; %d are only missing secrets or files", len(files)-passed, len(files), passed)
}

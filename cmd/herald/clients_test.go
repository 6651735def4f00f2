package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// countingTransport counts round trips and reports each failed one.
type countingTransport struct {
	next     http.RoundTripper
	attempts atomic.Int32
	failed   chan error
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.attempts.Add(1)
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		select {
		case c.failed <- err:
		default:
		}
	}
	return resp, err
}

// closedAddr is an address nothing listens on (for now).
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestPatientWatchesWaitForTheServer(t *testing.T) {
	beside(t)
	addr := closedAddr(t)
	counting := &countingTransport{next: &http.Transport{}, failed: make(chan error, 1)}
	client := &http.Client{Transport: patientWatches{next: counting, every: 20 * time.Millisecond}}

	done := make(chan error, 1)
	go func() {
		resp, err := client.Get("http://" + addr + "/api/v1/pods?watch=true&resourceVersion=7")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = &net.AddrError{Err: resp.Status, Addr: addr}
			}
		}
		done <- err
	}()
	// The watch keeps trying while nothing listens...
	<-counting.failed
	<-counting.failed
	select {
	case err := <-done:
		t.Fatalf("the watch returned (%v) before the server was there", err)
	default:
	}
	// ...and gets through once the server is up.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	go srv.Serve(ln)
	defer srv.Close()
	if err := <-done; err != nil {
		t.Fatalf("the watch failed after the server came: %v", err)
	}
	if n := counting.attempts.Load(); n < 3 {
		t.Errorf("%d attempts; want at least 3", n)
	}
}

func TestPatientWatchesOnlyWaitForWatches(t *testing.T) {
	beside(t)
	addr := closedAddr(t)
	counting := &countingTransport{next: &http.Transport{}, failed: make(chan error, 1)}
	client := &http.Client{Transport: patientWatches{next: counting, every: 20 * time.Millisecond}}
	for _, path := range []string{"/api/v1/pods", "/api/v1/pods?watch=false", "/readyz"} {
		counting.attempts.Store(0)
		if _, err := client.Get("http://" + addr + path); err == nil {
			t.Fatalf("GET %s succeeded with nothing listening", path)
		}
		if n := counting.attempts.Load(); n != 1 {
			t.Errorf("GET %s: %d attempts; a request that is not a watch must fail at once", path, n)
		}
	}
	// A watch whose context ends stops waiting and returns the error.
	select {
	case <-counting.failed:
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/v1/pods?watch=true", nil)
	done := make(chan error, 1)
	go func() {
		_, err := client.Do(req)
		done <- err
	}()
	<-counting.failed
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a canceled watch returned no error")
	}
}

// TestMetricsAreServedUncompressed: a scraper that offers gzip (Prometheus
// does) gets the exposition as it is, so no gzip writer is held between
// scrapes; the metrics are all there.
func TestMetricsAreServedUncompressed(t *testing.T) {
	beside(t)
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(3)
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	metricsHandler(reg).ServeHTTP(rec, req)
	if enc := rec.Header().Get("Content-Encoding"); enc != "" {
		t.Errorf("Content-Encoding %q, want none", enc)
	}
	if !strings.Contains(rec.Body.String(), "herald_test_total 3\n") {
		t.Errorf("exposition lacks the counter:\n%s", rec.Body.String())
	}
}

// TestMissingKubeconfigIsNamed: $KUBECONFIG naming a file that is not
// there is said as such, with the file, not as "set $KUBECONFIG".
func TestMissingKubeconfigIsNamed(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "prod.kubeconfig")
	t.Setenv("KUBECONFIG", missing)
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // in a pod, client-go would fall back to in-cluster
	var out, errOut bytes.Buffer
	code := runMain(context.Background(), []string{"incidents"}, &out, &errOut)
	if code == 0 || !strings.Contains(errOut.String(), "$KUBECONFIG names "+missing+", which does not exist") {
		t.Errorf("exit %d, %q", code, errOut.String())
	}
}

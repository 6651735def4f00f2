package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestHealthcheck(t *testing.T) {
	beside(t)
	ready := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || !ready {
			http.Error(w, "not the leader's caches yet\x1b[2J", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	run := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := runMain(context.Background(), append([]string{"healthcheck"}, args...), &out, &out)
		return code, out.String()
	}
	if code, out := run("--url", srv.URL+"/readyz"); code != 0 || !strings.Contains(out, "200 OK") {
		t.Errorf("ready: %d %q", code, out)
	}
	ready = false
	code, out := run("--url", srv.URL+"/readyz")
	if code != 1 || !strings.Contains(out, "503 Service Unavailable: not the leader's caches yet") || strings.Contains(out, "\x1b") {
		t.Errorf("not ready: %d %q", code, out)
	}
	if code, out := run("--url", "http://127.0.0.1:1/readyz", "--timeout", "1s"); code != 1 || !strings.Contains(out, "connection refused") {
		t.Errorf("nothing listening: %d %q", code, out)
	}
	// --wait asks again until herald is ready.
	var asked atomic.Int32
	later := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) < 3 {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
		}
	}))
	defer later.Close()
	if code, out := run("--url", later.URL+"/readyz", "--wait", "30s"); code != 0 || asked.Load() != 3 {
		t.Errorf("--wait: %d %q after %d requests; want 0 at the third", code, out, asked.Load())
	}
	if code, out := run("--url", srv.URL+"/readyz", "--wait", "2s"); code != 1 || strings.Count(out, "503") != 1 {
		t.Errorf("--wait that runs out: %d %q; want 1 and the last answer", code, out)
	}
	if code, out := run("--url", "127.0.0.1:8080/readyz"); code != 2 || !strings.Contains(out, "want http://HOST:PORT/readyz") {
		t.Errorf("a URL without scheme: %d %q", code, out)
	}
}

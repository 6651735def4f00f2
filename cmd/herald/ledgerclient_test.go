package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestLedgerClientHasItsOwnLimit: the ledger's client is held to its own
// rate limit (50/s, burst 100), not to the configuration's (here client-
// go's default, 5/s, burst 10: 40 writes would take 6 s, and the gate
// then holds every sink behind the ledger), nor to none.
func TestLedgerClientHasItsOwnLimit(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"herald-ledger","namespace":"default","resourceVersion":"1"}}`))
	}))
	defer srv.Close()
	client, err := newLedgerClient(&rest.Config{Host: srv.URL, QPS: 5, Burst: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	for i := range 40 {
		if _, err := client.GetConfigMap(ctx, "default", "herald-ledger"); err != nil {
			t.Fatalf("request %d after %s: %v (the ledger's requests are throttled)", i+1, time.Since(start).Round(time.Millisecond), err)
		}
	}
	if n := requests.Load(); n != 40 {
		t.Errorf("the API server saw %d requests, want 40", n)
	}
	// 110 more: from a full bucket of 100, 150 requests take at least a
	// second at 50 a second.
	for i := range 110 {
		if _, err := client.GetConfigMap(context.Background(), "default", "herald-ledger"); err != nil {
			t.Fatalf("request %d: %v", 41+i, err)
		}
	}
	if took := time.Since(start); took < 950*time.Millisecond {
		t.Errorf("150 requests in %s: the ledger's client is not held to %d a second past a burst of %d", took, ledgerQPS, ledgerBurst)
	}
}

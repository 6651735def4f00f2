package alertmanager

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// TestAuthAndTLS: basic auth and bearer tokens reach an Alertmanager
// behind a TLS proxy; the proxy's certificate is verified (an unknown CA
// is a final error, not retried), and trusted with caFile.
func TestAuthAndTLS(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Header.Get("Authorization"))
		if r.URL.Path != "/api/v2/alerts" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
	n := crashLoop(time.Now())

	untrusted, err := New(Options{Name: "am", URLs: []string{srv.URL}, Timeout: 5 * time.Second, BearerToken: "t0ken"})
	if err != nil {
		t.Fatal(err)
	}
	err = untrusted.Send(context.Background(), n)
	if retry, _ := sinks.IsRetryable(err); err == nil || retry || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("an unknown CA: err = %v (retryable %v), want a final certificate error", err, retry)
	}
	headers := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
	if len(headers()) != 0 {
		t.Fatalf("the request reached the server over an unverified connection")
	}

	for _, o := range []Options{
		{BearerToken: "t0ken"},
		{Username: "herald", Password: "pa55"},
	} {
		o.Name, o.URLs, o.Timeout, o.TLS = "am", []string{srv.URL}, 5*time.Second, sinks.TLSOptions{CAFile: caFile}
		s, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Send(context.Background(), incident.Notification{Incident: n.Incident, Transition: incident.Firing, Seq: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if got := headers(); len(got) != 2 || got[0] != "Bearer t0ken" || got[1] != "Basic aGVyYWxkOnBhNTU=" {
		t.Errorf("Authorization headers = %q", got)
	}
}

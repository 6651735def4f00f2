package incident

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/internal/kube"
)

// holdProxy stands between a ledger store and the real API server and
// can hold one write on its way: the store's client gives up on it (its
// answer is late), while the API server has it still to apply — as a
// slow API server, or a busy machine, does. The test then decides when
// the write lands.
type holdProxy struct {
	t       *testing.T
	backend http.RoundTripper
	target  string

	mu      sync.Mutex
	hold    func(*http.Request) bool // the next request to hold, if set
	pending *heldWrite
	// held receives each write as it is held.
	held chan *heldWrite
}

// heldWrite is a request the proxy holds: applied once, by release or by
// the next request for the same object.
type heldWrite struct {
	method, path, uri string
	header            http.Header
	body              []byte
	once              sync.Once
	status            int
	answerHeader      http.Header
	answer            []byte
	applied           chan struct{}
}

// newHoldProxy starts a proxy to the API server cfg reaches and returns
// it with a ledger client that goes through it.
func newHoldProxy(t *testing.T, cfg *rest.Config) (*holdProxy, *kube.Client) {
	backend, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{t: t, backend: backend, target: strings.TrimSuffix(cfg.Host, "/"), held: make(chan *heldWrite, 1)}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { // a write still held lands before the server stops
		p.mu.Lock()
		h := p.pending
		p.mu.Unlock()
		if h != nil {
			p.apply(h)
		}
	})
	client, err := kube.New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return p, client
}

// holdNext holds the next request that match says to hold.
func (p *holdProxy) holdNext(match func(*http.Request) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = match
}

// release applies the held write now and returns the API server's status.
func (p *holdProxy) release(h *heldWrite) int {
	p.apply(h)
	return h.status
}

func (p *holdProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	p.mu.Lock()
	if p.hold != nil && p.hold(r) {
		h := &heldWrite{method: r.Method, path: r.URL.Path, uri: r.URL.RequestURI(), header: r.Header.Clone(), body: body, applied: make(chan struct{})}
		p.hold, p.pending = nil, h
		p.mu.Unlock()
		p.held <- h
		<-h.applied // the client may have gone: the write lands all the same
		for k, v := range h.answerHeader {
			w.Header()[k] = v
		}
		w.WriteHeader(h.status)
		w.Write(h.answer)
		return
	}
	var pending *heldWrite
	if p.pending != nil && p.pending.path == r.URL.Path {
		pending, p.pending = p.pending, nil
	}
	p.mu.Unlock()

	if pending != nil && r.Method != http.MethodGet {
		p.apply(pending) // the late write lands just before the next one
	}
	resp, err := p.send(r.Context(), r.Method, r.URL.RequestURI(), r.Header, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if pending != nil && r.Method == http.MethodGet {
		p.apply(pending) // the late write lands just after a read of the object
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

// apply sends a held write to the API server, once.
func (p *holdProxy) apply(h *heldWrite) {
	h.once.Do(func() {
		p.mu.Lock()
		if p.pending == h {
			p.pending = nil
		}
		p.mu.Unlock()
		resp, err := p.send(context.Background(), h.method, h.uri, h.header, h.body)
		if err != nil {
			p.t.Errorf("applying the held %s %s: %v", h.method, h.path, err)
			h.status = http.StatusBadGateway
		} else {
			h.answer, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			h.status, h.answerHeader = resp.StatusCode, resp.Header
		}
		close(h.applied)
	})
}

func (p *holdProxy) send(ctx context.Context, method, uri string, header http.Header, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.target+uri, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = header.Clone()
	return p.backend.RoundTrip(req)
}

// shardWrite matches a PUT of a shard (not the claim) of ledger in
// namespace.
func shardWrite(namespace, ledger string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		name, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/"+namespace+"/configmaps/"+ledger+"-")
		return ok && r.Method == http.MethodPut && name != "claim"
	}
}

package sinks

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRedirectsStayOnTheHost: a receiver that redirects to another host
// (another port counts) gets nothing sent there and the send fails for
// good; a redirect on the same host is followed (307 keeps the POST).
func TestRedirectsStayOnTheHost(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
	}))
	defer other.Close()
	var got atomic.Value
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
		case "/moved":
			http.Redirect(w, r, "/final", http.StatusPermanentRedirect)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusTemporaryRedirect)
		case "/final":
			got.Store(r.Method + " " + r.Header.Get("X-Key"))
		}
	}))
	defer recv.Close()
	client, err := NewHTTPClient(5*time.Second, TLSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	header := func() http.Header { return http.Header{"X-Key": {"k3y"}} }
	ctx := context.Background()

	_, err = Post(ctx, client, recv.URL+"/away", header(), []byte(`{"alert":1}`), "webhook w")
	var retry *Retryable
	if !errors.Is(err, ErrRedirectRefused) && !strings.Contains(fmtErr(err), "redirect refused") {
		t.Errorf("redirect to another host: %v, want it refused", err)
	}
	if errors.As(err, &retry) {
		t.Errorf("a refused redirect is retried: %v", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the other host received %d requests", n)
	}
	if _, err := Post(ctx, client, recv.URL+"/moved", header(), []byte(`{}`), "webhook w"); err != nil {
		t.Errorf("redirect on the same host: %v", err)
	}
	if v, _ := got.Load().(string); v != "POST k3y" {
		t.Errorf("same-host redirect arrived as %q, want POST with its header", v)
	}
	if _, err := Post(ctx, client, recv.URL+"/loop", header(), []byte(`{}`), "webhook w"); !strings.Contains(fmtErr(err), "more than") {
		t.Errorf("a redirect loop: %v", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

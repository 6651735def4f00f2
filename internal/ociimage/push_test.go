package ociimage

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/herald-k8s/herald/internal/testenv"
)

// TestPushToRegistry pushes the image to a real registry (distribution)
// and reads it back as a puller does: the tag resolves to the image
// index's digest, each platform's manifest and blobs are there.
func TestPushToRegistry(t *testing.T) {
	dir := builtLayout(t)
	reg := testenv.StartRegistry(t, "127.0.0.1")
	ref := Reference{Registry: reg.Host, Repository: "herald/herald", Tag: "9.9.9"}
	pushed, err := (Pusher{PlainHTTP: true}).Push(context.Background(), dir, ref)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + reg.Host + "/v2/herald/herald"
	get := func(path, accept string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", path, resp.Status, body)
		}
		return resp, body
	}
	resp, body := get("/manifests/9.9.9", MediaTypeIndex)
	if got := resp.Header.Get("Docker-Content-Digest"); got != pushed.Digest || resp.Header.Get("Content-Type") != MediaTypeIndex {
		t.Errorf("the tag resolves to %s (%s), pushed %s", got, resp.Header.Get("Content-Type"), pushed.Digest)
	}
	var index struct{ Manifests []Descriptor }
	if err := json.Unmarshal(body, &index); err != nil || len(index.Manifests) != 1 || *index.Manifests[0].Platform != hostPlatform {
		t.Fatalf("index: %s, %v", body, err)
	}
	_, body = get("/manifests/"+index.Manifests[0].Digest, MediaTypeManifest)
	var manifest struct {
		Config Descriptor
		Layers []Descriptor
	}
	if err := json.Unmarshal(body, &manifest); err != nil {
		t.Fatal(err)
	}
	for _, blob := range append(manifest.Layers, manifest.Config) {
		if _, data := get("/blobs/"+blob.Digest, ""); int64(len(data)) != blob.Size {
			t.Errorf("blob %s: %d bytes, want %d", blob.Digest, len(data), blob.Size)
		}
	}

	// A layout whose blob was edited is refused before anything is sent.
	tampered := filepath.Join(t.TempDir(), "layout")
	if err := os.CopyFS(tampered, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blobPath(tampered, manifest.Config.Digest), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = (Pusher{PlainHTTP: true}).Push(context.Background(), tampered, Reference{Registry: reg.Host, Repository: "other", Tag: "1"})
	if err == nil || !strings.Contains(err.Error(), "holds content of digest") {
		t.Errorf("a tampered layout: %v", err)
	}
}

// TestPushStaysOnTheRegistry: an upload location or a redirect to
// another host is refused before a blob or manifest is sent there (a HEAD
// may follow the registry to where it keeps its blobs).
func TestPushStaysOnTheRegistry(t *testing.T) {
	dir := builtLayout(t)
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodHead && r.Method != http.MethodGet {
			elsewhere.Add(1) // content sent off the registry
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer other.Close()
	for name, handler := range map[string]http.HandlerFunc{
		"upload location on another host": func(w http.ResponseWriter, r *http.Request) {
			switch r.Method {
			case http.MethodHead:
				w.WriteHeader(http.StatusNotFound)
			case http.MethodPost:
				w.Header().Set("Location", other.URL+"/upload/1")
				w.WriteHeader(http.StatusAccepted)
			}
		},
		"redirect to another host": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
		},
	} {
		t.Run(name, func(t *testing.T) {
			reg := httptest.NewServer(handler)
			defer reg.Close()
			host := strings.TrimPrefix(reg.URL, "http://")
			_, err := (Pusher{PlainHTTP: true}).Push(context.Background(), dir, Reference{Registry: host, Repository: "herald", Tag: "1"})
			if err == nil || elsewhere.Load() != 0 {
				t.Errorf("push: %v; %d requests with content reached the other host", err, elsewhere.Load())
			}
		})
	}
}

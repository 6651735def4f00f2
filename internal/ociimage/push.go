package ociimage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Reference is where an image goes: registry host[:port], repository and
// tag, as in 127.0.0.1:5000/herald/herald:0.2.0.
type Reference struct {
	Registry, Repository, Tag string
}

func (r Reference) String() string { return r.Registry + "/" + r.Repository + ":" + r.Tag }

// ParseReference reads HOST[:PORT]/REPO[/...]:TAG.
func ParseReference(s string) (Reference, error) {
	host, rest, ok := strings.Cut(s, "/")
	colon := strings.LastIndex(rest, ":")
	if !ok || host == "" || colon <= 0 || colon == len(rest)-1 {
		return Reference{}, fmt.Errorf("image reference %q: want REGISTRY/REPOSITORY:TAG (e.g. 127.0.0.1:5000/herald:0.2.0)", s)
	}
	return Reference{Registry: host, Repository: rest[:colon], Tag: rest[colon+1:]}, nil
}

// Pusher sends an OCI layout to a registry by the OCI distribution
// specification's push API: every blob by a monolithic upload (skipped
// when the registry has it), each platform's manifest by digest, then
// the index by tag. It speaks to registries that need no login (a
// registry of your own, a test's); the release workflow pushes to public
// registries with their own tooling.
type Pusher struct {
	Client *http.Client
	// PlainHTTP speaks http:// instead of https://.
	PlainHTTP bool
}

// Push pushes the image of the layout at dir as ref.
func (p Pusher) Push(ctx context.Context, dir string, ref Reference) (Descriptor, error) {
	var top struct{ Manifests []Descriptor }
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return Descriptor{}, err
	}
	if err := json.Unmarshal(data, &top); err != nil || len(top.Manifests) != 1 {
		return Descriptor{}, fmt.Errorf("%s/index.json: want one image index (%v)", dir, err)
	}
	index := top.Manifests[0]
	indexData, err := readBlob(dir, index)
	if err != nil {
		return Descriptor{}, err
	}
	var images struct{ Manifests []Descriptor }
	if err := json.Unmarshal(indexData, &images); err != nil {
		return Descriptor{}, fmt.Errorf("image index %s: %w", index.Digest, err)
	}
	for _, m := range images.Manifests {
		manifestData, err := readBlob(dir, m)
		if err != nil {
			return Descriptor{}, err
		}
		var manifest struct {
			Config Descriptor
			Layers []Descriptor
		}
		if err := json.Unmarshal(manifestData, &manifest); err != nil {
			return Descriptor{}, fmt.Errorf("manifest %s: %w", m.Digest, err)
		}
		for _, blob := range append([]Descriptor{manifest.Config}, manifest.Layers...) {
			if err := p.pushBlob(ctx, dir, ref, blob); err != nil {
				return Descriptor{}, err
			}
		}
		if err := p.putManifest(ctx, ref, m.Digest, m.MediaType, manifestData); err != nil {
			return Descriptor{}, err
		}
	}
	return index, p.putManifest(ctx, ref, ref.Tag, index.MediaType, indexData)
}

func (p Pusher) base(ref Reference) string {
	scheme := "https"
	if p.PlainHTTP {
		scheme = "http"
	}
	return scheme + "://" + ref.Registry + "/v2/" + ref.Repository
}

// client is Client, or one with a timeout that follows no redirect of a
// request with content to another host or scheme (a redirected PUT would
// send the blob there); a HEAD or GET may go where the registry keeps
// its blobs (a bucket).
func (p Pusher) client() *http.Client {
	if p.Client != nil {
		return p.Client
	}
	return &http.Client{Timeout: 5 * time.Minute, CheckRedirect: sameOrigin}
}

func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return fmt.Errorf("%d redirects", len(via))
	}
	if req.Method == http.MethodHead || req.Method == http.MethodGet {
		return nil
	}
	if first := via[0].URL; req.URL.Host != first.Host || req.URL.Scheme != first.Scheme {
		return fmt.Errorf("the registry redirects to %s://%s: not following it off %s://%s", req.URL.Scheme, req.URL.Host, first.Scheme, first.Host)
	}
	return nil
}

// digestPattern is the one digest form herald's layouts use.
var digestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

func (p Pusher) pushBlob(ctx context.Context, dir string, ref Reference, d Descriptor) error {
	if !digestPattern.MatchString(d.Digest) {
		return fmt.Errorf("a blob's digest %q is not sha256:<64 hex digits>", cleanText(d.Digest))
	}
	base := p.base(ref)
	resp, err := p.do(ctx, http.MethodHead, base+"/blobs/"+d.Digest, "", nil)
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusOK {
		return nil // the registry has it
	}
	data, err := readBlob(dir, d)
	if err != nil {
		return err
	}
	resp, err = p.do(ctx, http.MethodPost, base+"/blobs/uploads/", "", nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("starting the upload of %s to %s: %s", d.Digest, ref.Registry, resp.Status)
	}
	location, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
	if err != nil || resp.Header.Get("Location") == "" {
		return fmt.Errorf("the registry's upload location %q: %v", cleanText(resp.Header.Get("Location")), err)
	}
	if location.Host != resp.Request.URL.Host || location.Scheme != resp.Request.URL.Scheme {
		return fmt.Errorf("the registry's upload location is on %s://%s, not %s://%s: not sending the blob there",
			location.Scheme, cleanText(location.Host), resp.Request.URL.Scheme, resp.Request.URL.Host)
	}
	q := location.Query()
	q.Set("digest", d.Digest)
	location.RawQuery = q.Encode()
	resp, err = p.do(ctx, http.MethodPut, location.String(), "application/octet-stream", data)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("uploading %s to %s: %s", d.Digest, ref.Registry, resp.Status)
	}
	return nil
}

func (p Pusher) putManifest(ctx context.Context, ref Reference, reference, mediaType string, data []byte) error {
	resp, err := p.do(ctx, http.MethodPut, p.base(ref)+"/manifests/"+url.PathEscape(reference), mediaType, data)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("putting manifest %s to %s: %s", reference, ref, resp.Status)
	}
	return nil
}

// do sends one request and reads (and closes) the answer; an error
// answer's body, cut, goes into the status for the error messages.
func (p Pusher) do(ctx context.Context, method, target, contentType string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := p.client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode >= 400 && len(text) > 0 {
		resp.Status = cleanText(resp.Status + ": " + strings.TrimSpace(string(text)))
	}
	return resp, nil
}

// cleanText keeps what may be printed of a registry's words: printable
// ASCII, other bytes as '?'.
func cleanText(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c >= 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}

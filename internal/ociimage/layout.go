package ociimage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// layout is an OCI image layout being written: oci-layout, index.json and
// blobs/sha256/<hex> (image-layout.md of the OCI image specification).
type layout struct{ dir string }

func newLayout(dir string) (*layout, error) {
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		return nil, err
	}
	// First, so that a build stopped halfway leaves a directory the next
	// build knows as its own and replaces.
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		return nil, err
	}
	return &layout{dir: dir}, nil
}

// writeBlob stores data under its digest and describes it.
func (l *layout) writeBlob(mediaType string, data []byte) (Descriptor, error) {
	sum := sha256.Sum256(data)
	d := Descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data))}
	return d, os.WriteFile(blobPath(l.dir, d.Digest), data, 0o644)
}

func (l *layout) writeJSON(mediaType string, v any) (Descriptor, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return Descriptor{}, err
	}
	return l.writeBlob(mediaType, data)
}

// finish writes oci-layout and index.json, which names the image index
// by tag.
func (l *layout) finish(image Descriptor, tag string) error {
	image.Annotations = map[string]string{"org.opencontainers.image.ref.name": tag}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": MediaTypeIndex, "manifests": []Descriptor{image}})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(l.dir, "index.json"), index, 0o644)
}

func blobPath(dir, digest string) string {
	return filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

// readBlob reads a blob of the layout at dir and checks its digest: a
// layout is a directory anyone may have edited.
func readBlob(dir string, d Descriptor) ([]byte, error) {
	if !digestPattern.MatchString(d.Digest) {
		return nil, fmt.Errorf("a blob's digest %q is not sha256:<64 hex digits>", cleanText(d.Digest))
	}
	data, err := os.ReadFile(blobPath(dir, d.Digest))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != d.Digest {
		return nil, fmt.Errorf("blob %s holds content of digest %s", d.Digest, got)
	}
	return data, nil
}

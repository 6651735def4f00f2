// Package ociimage builds herald's container image without Docker: an OCI
// image layout (an image index with one manifest per platform) holding
// what the Dockerfile's final stage holds — the static binary at /herald,
// the non-root user 65532, CA certificates — with the Dockerfile's
// ENTRYPOINT, CMD and USER (TestMatchesDockerfile holds the two
// together). Push sends a layout to a registry by the OCI distribution
// API.
//
// It exists because the machines herald is built and tested on have no
// Docker engine, and because an image built from the Go toolchain alone
// is reproducible: the same commit gives the same digests.
package ociimage

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// What the Dockerfile's final stage sets; TestMatchesDockerfile reads the
// Dockerfile and compares.
var (
	// Entrypoint is the image's ENTRYPOINT.
	Entrypoint = []string{"/herald"}
	// Cmd is the image's CMD: the chart's pods pass their own args.
	Cmd = []string{"run", "--config", "/etc/herald/config.yaml"}
)

const (
	// User is the image's USER: distroless' "nonroot".
	User = "65532:65532"
	// BinaryPath is where the binary lives in the image.
	BinaryPath = "/herald"
	// CACertificates is where Go's crypto/x509 looks first on Linux, and
	// where Debian's ca-certificates puts its bundle.
	CACertificates = "/etc/ssl/certs/ca-certificates.crt"
	// Source is the repository, for the image's source label.
	Source = "https://github.com/herald-k8s/herald"
	// License is the SPDX identifier of the LICENSE file.
	License = "Apache-2.0"
)

// Media types of the OCI image specification.
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// Platform is an OS and architecture of the image index.
type Platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
}

func (p Platform) String() string { return p.OS + "/" + p.Architecture }

// ParsePlatforms reads "linux/amd64,linux/arm64".
func ParsePlatforms(s string) ([]Platform, error) {
	var out []Platform
	for _, f := range strings.Split(s, ",") {
		osName, arch, ok := strings.Cut(strings.TrimSpace(f), "/")
		if !ok || osName != "linux" || arch == "" {
			return nil, fmt.Errorf("platform %q: want linux/ARCH (e.g. linux/amd64,linux/arm64)", f)
		}
		out = append(out, Platform{OS: osName, Architecture: arch})
	}
	return out, nil
}

// Options say what to build.
type Options struct {
	// Source is the repository's top directory (the main package is
	// ./cmd/herald under it).
	Source string
	// Out is the OCI image layout directory to write; it is replaced.
	Out string
	// Tag names the image in the layout (org.opencontainers.image.ref.name).
	Tag string
	// Version, Revision and Created stamp the binary and the labels.
	Version, Revision string
	Created           time.Time
	Platforms         []Platform
	// CACertificates is the host's CA bundle to copy (Debian's
	// ca-certificates); empty: CACertificates.
	CACertificates string
}

// Result describes what Build wrote.
type Result struct {
	// Index is the image index's digest: the image's digest.
	Index Descriptor
	// Manifests has one entry per platform, in Options.Platforms' order.
	Manifests []PlatformImage
}

// PlatformImage is one platform's manifest and the size of its layer.
type PlatformImage struct {
	Platform           Platform
	Manifest           Descriptor
	LayerSize          int64 // compressed, as pulled
	UncompressedBinary int64
}

// Descriptor is an OCI content descriptor.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *Platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Labels are the OCI annotations both the image config and the manifests
// carry (the keys the Dockerfile's LABEL sets too).
func (o Options) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "herald",
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.revision": o.Revision,
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.licenses": License,
		"org.opencontainers.image.created":  o.Created.UTC().Format(time.RFC3339),
	}
}

// Build compiles herald for each platform and writes the layout.
func Build(ctx context.Context, o Options) (Result, error) {
	if len(o.Platforms) == 0 {
		return Result{}, fmt.Errorf("no platform to build")
	}
	if o.CACertificates == "" {
		o.CACertificates = CACertificates
	}
	certs, err := os.ReadFile(o.CACertificates)
	if err != nil {
		return Result{}, fmt.Errorf("the image's CA certificates: %w (Debian's ca-certificates package provides them: apt-get install ca-certificates)", err)
	}
	if err := o.check(); err != nil {
		return Result{}, err
	}
	// Out is replaced only if it is a layout (an earlier build's) or
	// absent: a mistyped -out must not delete a directory of yours.
	if entries, err := os.ReadDir(o.Out); err == nil && len(entries) > 0 {
		if _, err := os.Stat(filepath.Join(o.Out, "oci-layout")); err != nil {
			return Result{}, fmt.Errorf("%s exists and is not an OCI image layout: not replacing it (choose another -out)", o.Out)
		}
		if err := os.RemoveAll(o.Out); err != nil {
			return Result{}, err
		}
	}
	layout, err := newLayout(o.Out)
	if err != nil {
		return Result{}, err
	}
	var res Result
	for _, p := range o.Platforms {
		binary, err := compile(ctx, o, p)
		if err != nil {
			return Result{}, err
		}
		img, err := writePlatformImage(layout, o, p, binary, certs)
		if err != nil {
			return Result{}, err
		}
		res.Manifests = append(res.Manifests, img)
	}
	index := struct {
		SchemaVersion int               `json:"schemaVersion"`
		MediaType     string            `json:"mediaType"`
		Manifests     []Descriptor      `json:"manifests"`
		Annotations   map[string]string `json:"annotations"`
	}{SchemaVersion: 2, MediaType: MediaTypeIndex, Annotations: o.Labels()}
	for _, m := range res.Manifests {
		index.Manifests = append(index.Manifests, m.Manifest)
	}
	if res.Index, err = layout.writeJSON(MediaTypeIndex, index); err != nil {
		return Result{}, err
	}
	return res, layout.finish(res.Index, o.Tag)
}

// versionPattern and revisionPattern bound what is stamped into the
// binary with -ldflags -X: a space would start another linker flag.
var (
	versionPattern  = regexp.MustCompile(`^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	revisionPattern = regexp.MustCompile(`^([0-9a-f]{7,64}|[0-9A-Za-z._-]{1,64})$`)
)

func (o Options) check() error {
	if !versionPattern.MatchString(o.Version) {
		return fmt.Errorf("version %q: want a semantic version such as 0.2.0 or 0.2.0-rc.1", o.Version)
	}
	if !revisionPattern.MatchString(o.Revision) {
		return fmt.Errorf("revision %q: want a commit id", o.Revision)
	}
	if !versionPattern.MatchString(o.Tag) && !revisionPattern.MatchString(o.Tag) {
		return fmt.Errorf("tag %q: want a version", o.Tag)
	}
	return nil
}

// buildEnv is the environment of the release build: the caller's (the
// Go caches, the proxy), without what would change the binary behind
// the flags' back.
func buildEnv(p Platform) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GOFLAGS", "GOEXPERIMENT", "GOAMD64", "GOARM64", "GOARM", "CGO_ENABLED", "GOOS", "GOARCH":
			continue
		}
		env = append(env, kv)
	}
	// GOFLAGS empty, not absent: a value saved by go env -w applies
	// otherwise.
	return append(env, "GOFLAGS=", "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
}

// compile builds the static binary the Dockerfile's build stage builds.
func compile(ctx context.Context, o Options, p Platform) ([]byte, error) {
	dir, err := os.MkdirTemp("", "herald-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "herald")
	ldflags := fmt.Sprintf("-s -w -X main.version=%s -X main.revision=%s -X main.buildDate=%s",
		o.Version, o.Revision, o.Created.UTC().Format(time.RFC3339))
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", bin, "./cmd/herald")
	cmd.Dir = o.Source
	cmd.Env = buildEnv(p)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building herald for %s: %w\n%s", p, err, out)
	}
	return os.ReadFile(bin)
}

// imageConfig is the OCI image configuration (config and rootfs).
type imageConfig struct {
	Created      string         `json:"created"`
	Architecture string         `json:"architecture"`
	OS           string         `json:"os"`
	Config       RunConfig      `json:"config"`
	RootFS       rootFS         `json:"rootfs"`
	History      []historyEntry `json:"history"`
}

// RunConfig is what an image configuration says of how to run it.
type RunConfig struct {
	User       string            `json:"User"`
	Env        []string          `json:"Env"`
	Entrypoint []string          `json:"Entrypoint"`
	Cmd        []string          `json:"Cmd"`
	WorkingDir string            `json:"WorkingDir"`
	Labels     map[string]string `json:"Labels"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type historyEntry struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

func writePlatformImage(layout *layout, o Options, p Platform, binary, certs []byte) (PlatformImage, error) {
	layer, diffID, err := rootFilesystem(binary, certs, o.Created)
	if err != nil {
		return PlatformImage{}, err
	}
	layerDesc, err := layout.writeBlob(MediaTypeLayer, layer)
	if err != nil {
		return PlatformImage{}, err
	}
	created := o.Created.UTC().Format(time.RFC3339)
	config := imageConfig{
		Created: created, Architecture: p.Architecture, OS: p.OS,
		Config: RunConfig{
			User:       User,
			Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=" + CACertificates},
			Entrypoint: Entrypoint, Cmd: Cmd, WorkingDir: "/", Labels: o.Labels(),
		},
		RootFS:  rootFS{Type: "layers", DiffIDs: []string{diffID}},
		History: []historyEntry{{Created: created, CreatedBy: "herald make image: /herald, CA certificates, user 65532"}},
	}
	configDesc, err := layout.writeJSON(MediaTypeConfig, config)
	if err != nil {
		return PlatformImage{}, err
	}
	manifest := struct {
		SchemaVersion int               `json:"schemaVersion"`
		MediaType     string            `json:"mediaType"`
		Config        Descriptor        `json:"config"`
		Layers        []Descriptor      `json:"layers"`
		Annotations   map[string]string `json:"annotations"`
	}{2, MediaTypeManifest, configDesc, []Descriptor{layerDesc}, o.Labels()}
	manifestDesc, err := layout.writeJSON(MediaTypeManifest, manifest)
	if err != nil {
		return PlatformImage{}, err
	}
	platform := p
	manifestDesc.Platform = &platform
	return PlatformImage{Platform: p, Manifest: manifestDesc, LayerSize: layerDesc.Size, UncompressedBinary: int64(len(binary))}, nil
}

// ReadConfig returns the image configuration of platform p in the
// layout at dir (for tests and `make image`'s summary).
func ReadConfig(dir string, p Platform) (cfg RunConfig, err error) {
	var index struct{ Manifests []Descriptor }
	if err := readJSONBlob(dir, "", filepath.Join(dir, "index.json"), &index); err != nil {
		return cfg, err
	}
	if len(index.Manifests) != 1 {
		return cfg, fmt.Errorf("index.json: %d entries, want 1", len(index.Manifests))
	}
	var imageIndex struct{ Manifests []Descriptor }
	if err := readJSONBlob(dir, index.Manifests[0].Digest, "", &imageIndex); err != nil {
		return cfg, err
	}
	for _, m := range imageIndex.Manifests {
		if m.Platform == nil || *m.Platform != p {
			continue
		}
		var manifest struct{ Config Descriptor }
		if err := readJSONBlob(dir, m.Digest, "", &manifest); err != nil {
			return cfg, err
		}
		var c imageConfig
		if err := readJSONBlob(dir, manifest.Config.Digest, "", &c); err != nil {
			return cfg, err
		}
		return c.Config, nil
	}
	return cfg, fmt.Errorf("no manifest for %s", p)
}

func readJSONBlob(dir, digest, path string, v any) error {
	if path == "" {
		path = blobPath(dir, digest)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// ChartAppVersion reads appVersion from a Chart.yaml: the image's tag is
// the chart's appVersion, so the chart's default image is the one built.
func ChartAppVersion(chartYAML string) (string, error) { return chartField(chartYAML, "appVersion") }

// ChartVersion reads the chart's own version from a Chart.yaml.
func ChartVersion(chartYAML string) (string, error) { return chartField(chartYAML, "version") }

// chartField reads a top-level scalar of a Chart.yaml.
func chartField(chartYAML, key string) (string, error) {
	data, err := os.ReadFile(chartYAML)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			if v = strings.Trim(strings.TrimSpace(v), `"'`); v != "" {
				return v, nil
			}
		}
	}
	return "", fmt.Errorf("%s: no %s", chartYAML, key)
}

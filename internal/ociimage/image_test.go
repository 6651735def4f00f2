package ociimage

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/testenv"
)

var hostPlatform = Platform{OS: "linux", Architecture: runtime.GOARCH}

// built is one build of the image for the host's platform, shared by the
// tests that only read it.
// built is the image `make image`'s command builds with testOptions' values,
// in a process of its own (testenv.BuildHeraldImage says why); the tests
// read it, and TestReproducible builds it again with Build.
var built = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "herald-image-test-")
	if err != nil {
		return "", err
	}
	o := testOptions(filepath.Join(dir, "layout"))
	_, err = testenv.BuildHeraldImage(context.Background(), testenv.HeraldImage{
		Out: o.Out, Version: o.Version, Revision: o.Revision, Created: o.Created})
	return o.Out, err
})

func testOptions(out string) Options {
	return Options{Source: "../..", Out: out, Tag: "9.9.9", Version: "9.9.9", Revision: "0123abc",
		Created: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), Platforms: []Platform{hostPlatform}}
}

func builtLayout(t *testing.T) string {
	t.Helper()
	dir, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// dockerfileStage is what the Dockerfile's final stage says.
type dockerfileStage struct {
	user              string
	entrypoint, cmd   []string
	copiedTo          []string
	labels            []string
	base              string
	buildArgsInLDFlag []string
}

// readDockerfile reads the final stage of a Dockerfile, joining
// continued lines.
func readDockerfile(t *testing.T, path string) dockerfileStage {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		if s := strings.TrimSpace(cur.String()); s != "" {
			lines = append(lines, s)
		}
		cur.Reset()
	}
	var st dockerfileStage
	jsonArray := func(s string) []string {
		var v []string
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("Dockerfile: %q is not the exec form (a JSON array): %v", s, err)
		}
		return v
	}
	for _, line := range lines {
		instr, rest, _ := strings.Cut(line, " ")
		switch instr {
		case "FROM":
			st = dockerfileStage{base: rest, buildArgsInLDFlag: st.buildArgsInLDFlag}
		case "USER":
			st.user = rest
		case "ENTRYPOINT":
			st.entrypoint = jsonArray(rest)
		case "CMD":
			st.cmd = jsonArray(rest)
		case "COPY":
			f := strings.Fields(rest)
			st.copiedTo = append(st.copiedTo, f[len(f)-1])
		case "LABEL":
			for _, kv := range strings.Fields(rest) {
				if k, _, ok := strings.Cut(kv, "="); ok {
					st.labels = append(st.labels, k)
				}
			}
		case "RUN":
			if strings.Contains(rest, "go build") {
				for _, f := range strings.Fields(rest) {
					if strings.HasPrefix(f, "main.") {
						st.buildArgsInLDFlag = append(st.buildArgsInLDFlag, strings.SplitN(f, "=", 2)[0])
					}
				}
			}
		}
	}
	return st
}

// layerFiles returns the files of the platform's one layer by path.
func layerFiles(t *testing.T, dir string, p Platform) map[string]*tar.Header {
	t.Helper()
	files, _ := layerContents(t, dir, p)
	return files
}

func layerContents(t *testing.T, dir string, p Platform) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	var index struct{ Manifests []Descriptor }
	if err := readJSONBlob(dir, "", filepath.Join(dir, "index.json"), &index); err != nil {
		t.Fatal(err)
	}
	var images struct{ Manifests []Descriptor }
	if err := readJSONBlob(dir, index.Manifests[0].Digest, "", &images); err != nil {
		t.Fatal(err)
	}
	for _, m := range images.Manifests {
		if *m.Platform != p {
			continue
		}
		var manifest struct{ Layers []Descriptor }
		if err := readJSONBlob(dir, m.Digest, "", &manifest); err != nil {
			t.Fatal(err)
		}
		if len(manifest.Layers) != 1 || manifest.Layers[0].MediaType != MediaTypeLayer {
			t.Fatalf("layers: %+v", manifest.Layers)
		}
		data, err := readBlob(dir, manifest.Layers[0])
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		headers, contents := map[string]*tar.Header{}, map[string][]byte{}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			name := "/" + strings.TrimSuffix(h.Name, "/")
			headers[name] = h
			if contents[name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
		return headers, contents
	}
	t.Fatalf("no manifest for %s", p)
	return nil, nil
}

// TestMatchesDockerfile holds the image `make image` builds to the one
// the Dockerfile describes: the same entrypoint, command and user, the
// binary where the Dockerfile copies it, the base image's non-root user
// and CA certificates, and the same label keys and stamped variables.
func TestMatchesDockerfile(t *testing.T) {
	df := readDockerfile(t, "../../Dockerfile")
	dir := builtLayout(t)
	cfg, err := ReadConfig(dir, hostPlatform)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Entrypoint, df.entrypoint) {
		t.Errorf("entrypoint: image %q, Dockerfile %q", cfg.Entrypoint, df.entrypoint)
	}
	if !slices.Equal(cfg.Cmd, df.cmd) {
		t.Errorf("cmd: image %q, Dockerfile %q", cfg.Cmd, df.cmd)
	}
	if cfg.User != df.user {
		t.Errorf("user: image %q, Dockerfile %q", cfg.User, df.user)
	}
	if labels := slices.Sorted(maps.Keys(cfg.Labels)); !slices.Equal(labels, slices.Sorted(slices.Values(df.labels))) {
		t.Errorf("label keys: image %q, Dockerfile %q", labels, df.labels)
	}
	if cfg.Labels["org.opencontainers.image.revision"] != "0123abc" || cfg.Labels["org.opencontainers.image.version"] != "9.9.9" ||
		cfg.Labels["org.opencontainers.image.licenses"] != License {
		t.Errorf("labels: %v", cfg.Labels)
	}
	if !slices.Equal(df.buildArgsInLDFlag, []string{"main.version", "main.revision", "main.buildDate"}) {
		t.Errorf("the Dockerfile's build stamps %q; make image stamps main.version, main.revision, main.buildDate", df.buildArgsInLDFlag)
	}

	headers, contents := layerContents(t, dir, hostPlatform)
	for _, path := range df.copiedTo {
		if h := headers[path]; h == nil || h.Typeflag != tar.TypeReg || h.Mode&0o111 == 0 {
			t.Errorf("the Dockerfile copies to %s; the image has %+v there", path, h)
		}
	}
	if df.entrypoint[0] != BinaryPath {
		t.Errorf("the Dockerfile's entrypoint %q is not the binary the image holds (%s)", df.entrypoint[0], BinaryPath)
	}
	// distroless/static:nonroot gives the base: user 65532 by name,
	// CA certificates, a /tmp.
	uid, gid, _ := strings.Cut(df.user, ":")
	if !strings.Contains(string(contents["/etc/passwd"]), "nonroot:x:"+uid+":"+gid+":") ||
		!strings.Contains(string(contents["/etc/group"]), "nonroot:x:"+gid+":") {
		t.Errorf("/etc/passwd, /etc/group lack the user %s:\n%s%s", df.user, contents["/etc/passwd"], contents["/etc/group"])
	}
	hostCerts, err := os.ReadFile(CACertificates)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(contents[CACertificates], hostCerts) || len(hostCerts) < 10000 {
		t.Errorf("%s: %d bytes in the image, %d on the host", CACertificates, len(contents[CACertificates]), len(hostCerts))
	}
	if h := headers["/tmp"]; h == nil || h.Mode != 0o1777 {
		t.Errorf("/tmp: %+v", h)
	}
	if !strings.Contains(df.base, "distroless/static") || !strings.HasSuffix(df.base, ":nonroot") {
		t.Errorf("the Dockerfile's base %q is no longer distroless static nonroot: say what the image must now hold", df.base)
	}

	// The binary in the image is the stamped static build.
	bin := filepath.Join(t.TempDir(), "herald")
	if err := os.WriteFile(bin, contents[BinaryPath], 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if want := "herald 9.9.9 (commit 0123abc, built 2026-11-28T00:00:00Z)\n"; err != nil || string(out) != want {
		t.Errorf("herald version in the image: %q, %v; want %q", out, err, want)
	}
}

// TestReproducible: one source and one set of options, one digest, whether
// `make image`'s command builds it or Build in this process. The second
// build's -out is an empty directory, which Build takes (TestBuildRefusals
// has the directories it refuses).
func TestReproducible(t *testing.T) {
	first := builtLayout(t)
	second := t.TempDir()
	res, err := Build(context.Background(), testOptions(second))
	if err != nil {
		t.Fatalf("-out of an empty directory: %v", err)
	}
	a, _ := os.ReadFile(filepath.Join(first, "index.json"))
	b, _ := os.ReadFile(filepath.Join(second, "index.json"))
	if !bytes.Equal(a, b) {
		t.Errorf("two builds differ:\n%s\n%s", a, b)
	}
	if !strings.Contains(string(a), res.Index.Digest) {
		t.Errorf("index.json does not name the index %s", res.Index.Digest)
	}
}

func TestParsePlatformsAndReferences(t *testing.T) {
	if p, err := ParsePlatforms("linux/amd64, linux/arm64"); err != nil || len(p) != 2 || p[1].Architecture != "arm64" {
		t.Errorf("ParsePlatforms: %v, %v", p, err)
	}
	for _, bad := range []string{"", "amd64", "windows/amd64", "linux/"} {
		if _, err := ParsePlatforms(bad); err == nil {
			t.Errorf("ParsePlatforms(%q) accepted", bad)
		}
	}
	if r, err := ParseReference("127.0.0.1:5000/herald/herald:0.2.0"); err != nil || r != (Reference{"127.0.0.1:5000", "herald/herald", "0.2.0"}) {
		t.Errorf("ParseReference: %+v, %v", r, err)
	}
	for _, bad := range []string{"herald:0.2.0", "127.0.0.1:5000/herald", "127.0.0.1:5000/herald:", "/herald:1"} {
		if _, err := ParseReference(bad); err == nil {
			t.Errorf("ParseReference(%q) accepted", bad)
		}
	}
}

// TestBuildRefusals: Build never deletes a directory that is not an
// earlier layout, and stamps only a version and a revision that cannot
// become other linker flags.
func TestBuildRefusals(t *testing.T) {
	notALayout := t.TempDir()
	keep := filepath.Join(notALayout, "notes.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := testOptions(notALayout)
	if _, err := Build(context.Background(), o); err == nil || !strings.Contains(err.Error(), "is not an OCI image layout") {
		t.Errorf("-out of a directory of mine: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("Build removed %s: %v", keep, err)
	}
	for _, bad := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.Version = "1.0.0 -X main.revision=evil" }, "version"},
		{func(o *Options) { o.Revision = "abc -linkmode=external" }, "revision"},
		{func(o *Options) { o.Tag = "latest; rm" }, "tag"},
	} {
		o := testOptions(filepath.Join(t.TempDir(), "layout"))
		bad.change(&o)
		if _, err := Build(context.Background(), o); err == nil || !strings.HasPrefix(err.Error(), bad.want+" ") {
			t.Errorf("Build with %q / %q / %q: %v; want the %s refused", o.Version, o.Revision, o.Tag, err, bad.want)
		}
	}
	// An empty directory is taken: TestReproducible builds into one.
}

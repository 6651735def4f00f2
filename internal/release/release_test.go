package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/herald-k8s/herald/internal/ociimage"
	"github.com/herald-k8s/herald/internal/testenv"
)

const top = "../.."

// TestWorkflowsLint runs actionlint on every workflow.
func TestWorkflowsLint(t *testing.T) {
	bin, err := testenv.EnsureActionlint(context.Background(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(top, ".github/workflows/*.yml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("workflows: %v %v", files, err)
	}
	// actionlint finds the repository's workflows from its top.
	cmd := exec.Command(bin, "-no-color")
	cmd.Dir = top
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("actionlint: %v\n%s", err, out)
	}
}

// TestReleaseWorkflowPublishes: on a version tag the release workflow
// publishes what the README promises: the multi-platform image built by
// make image, the chart as an OCI artifact, keyless signatures of both,
// an SBOM and provenance of the image, the command line's archives.
func TestReleaseWorkflowPublishes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(top, ".github/workflows/release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	wf := string(data)
	for _, want := range []string{
		`tags: ["v*.*.*"]`,
		"make image IMAGE_PLATFORMS=linux/amd64,linux/arm64",
		"skopeo copy --all --preserve-digests --digestfile digest",
		"cosign sign --yes \"${IMAGE}@${DIGEST}\"",
		"anchore/sbom-action",
		"actions/attest-build-provenance",
		"helm push \"dist/herald-${VERSION}.tgz\" \"${CHARTS}\"",
		"cosign sign --yes \"${CHARTS#oci://}/herald@${chart_digest}\"",
		"darwin/arm64", "SHA256SUMS", "gh release create",
		"id-token: write",
		"persist-credentials: false", "environment: release", "shell: bash",
	} {
		if !strings.Contains(wf, want) {
			t.Errorf("release.yml lacks %q", want)
		}
	}
	// The job that builds holds no right to publish: what it compiles
	// (modules, tools) never runs beside a token that can push or sign.
	_, jobs, _ := strings.Cut(wf, "\njobs:\n")
	build, publish, ok := strings.Cut(jobs, "\n  publish:\n")
	if !ok || strings.Contains(build, "write") || strings.Contains(build, "secrets.") || !strings.Contains(publish, "packages: write") ||
		strings.Contains(publish, "go build") || strings.Contains(publish, "make image") {
		t.Error("release.yml: the build job must hold no write permission or secret, and the publish job must build nothing")
	}
	// The README names what the workflow publishes.
	readme, err := os.ReadFile(filepath.Join(top, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ghcr.io/herald-k8s/herald:X.Y.Z", "oci://ghcr.io/herald-k8s/charts/herald"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README.md does not say where releases are: %q", want)
		}
	}
}

// TestVersionsAgree: the chart's version and appVersion are one semantic
// version (the image's tag, make image's default), and the changelog has
// a section for it or says it is unreleased.
func TestVersionsAgree(t *testing.T) {
	version, verr := ociimage.ChartVersion(filepath.Join(top, "charts/herald/Chart.yaml"))
	appVersion, err := ociimage.ChartAppVersion(filepath.Join(top, "charts/herald/Chart.yaml"))
	if err != nil || verr != nil {
		t.Fatalf("Chart.yaml: version %q (%v), appVersion %q (%v)", version, verr, appVersion, err)
	}
	if version != appVersion {
		t.Errorf("the chart's version %s and appVersion %s differ: a release publishes both under one tag", version, appVersion)
	}
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(appVersion) {
		t.Errorf("appVersion %q is not MAJOR.MINOR.PATCH", appVersion)
	}
	values, err := os.ReadFile(filepath.Join(top, "charts/herald/values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(values), "  tag: \"\"\n") {
		t.Error("values.yaml sets image.tag: the chart's default image must be its appVersion")
	}
	changelog, err := os.ReadFile(filepath.Join(top, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(changelog), "## [Unreleased]") && !strings.Contains(string(changelog), "## ["+appVersion+"]") {
		t.Errorf("CHANGELOG.md has neither an Unreleased section nor one for %s", appVersion)
	}
}

package testenv

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// The test node's images. No registry is reachable from these machines,
// so each is a static Go program built here and imported into the node's
// containerd; pods name them with imagePullPolicy: Never.
const (
	// PauseImage holds a pod's namespaces (containerd's sandbox_image).
	PauseImage = "herald.test/pause:1"
	// WorkloadImage is internal/testenv/images/workload: flags make it
	// log lines, exit with a code, outgrow its memory limit, serve a
	// readiness endpoint, crash when a file says so or after a while.
	WorkloadImage = "herald.test/workload:1"
	// WorkloadImage2 is the same image under a second tag, so that a test
	// can roll a Deployment out to "the next version": a rollout is a new
	// image name in the pod template, whatever the image holds. It is
	// one more name in the same archive: no second build, no second
	// import.
	WorkloadImage2 = "herald.test/workload:2"
)

// localImage is a program of internal/testenv/images and its image name.
type localImage struct{ program, ref string }

var nodeImages = []localImage{{"pause", PauseImage}, {"workload", WorkloadImage}}

// alsoTagged are further names of an image: `ctr images import` makes an
// image of each of an archive's RepoTags, all of one manifest.
var alsoTagged = map[string][]string{WorkloadImage: {WorkloadImage2}}

// buildImageArchive builds program (a main package under images/) as a
// static binary and writes it as a one-layer image archive in the
// "docker save" layout (manifest.json, the image config, the layer tar),
// which `ctr images import` reads, named ref and ref's alsoTagged names.
func buildImageArchive(ctx context.Context, program, ref, dir string) (string, error) {
	bin := filepath.Join(dir, program)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./images/"+program)
	cmd.Dir = sourceDir()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building image program %s: %w\n%s", program, err, out)
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	if err := lw.WriteHeader(&tar.Header{Name: program, Mode: 0o755, Size: int64(len(binary)), Typeflag: tar.TypeReg}); err != nil {
		return "", err
	}
	if _, err := lw.Write(binary); err != nil {
		return "", err
	}
	if err := lw.Close(); err != nil {
		return "", err
	}
	layerSum := sha256.Sum256(layer.Bytes())
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": []string{"/" + program}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(layerSum[:])}},
	})
	if err != nil {
		return "", err
	}
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	layerName := hex.EncodeToString(layerSum[:]) + "/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": append([]string{ref}, alsoTagged[ref]...), "Layers": []string{layerName}}})
	if err != nil {
		return "", err
	}

	archive := filepath.Join(dir, program+".tar")
	f, err := os.Create(archive)
	if err != nil {
		return "", err
	}
	defer f.Close()
	aw := tar.NewWriter(f)
	for _, file := range []struct {
		name string
		data []byte
	}{{configName, config}, {layerName, layer.Bytes()}, {"manifest.json", manifest}} {
		if err := aw.WriteHeader(&tar.Header{Name: file.name, Mode: 0o644, Size: int64(len(file.data)), Typeflag: tar.TypeReg}); err != nil {
			return "", err
		}
		if _, err := aw.Write(file.data); err != nil {
			return "", err
		}
	}
	if err := aw.Close(); err != nil {
		return "", err
	}
	return archive, f.Close()
}

package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"
)

// HeraldImage is what BuildHeraldImage builds: herald's image for this
// machine's platform, as an OCI image layout in Out.
type HeraldImage struct {
	Out      string
	Version  string
	Revision string
	Created  time.Time
}

// BuildHeraldImage builds herald's image the way `make image` does, by
// running its builder command (internal/ociimage/build) as a process of
// its own, and returns what the command printed.
//
// Why not ociimage.Build in the test binary: a test binary is built with
// the race detector, which makes the image's gzip (best compression, a
// 38 MB binary) cost ~45 CPU-seconds instead of ~8; on two cores that is
// a minute of every other test's time.
func BuildHeraldImage(ctx context.Context, img HeraldImage) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "run", "./internal/ociimage/build",
		"-out", img.Out, "-version", img.Version, "-revision", img.Revision,
		"-platforms", "linux/"+runtime.GOARCH)
	cmd.Dir = filepath.Join(sourceDir(), "..", "..")
	// GOFLAGS is cleared so that a -race given to the tests does not
	// reach the builder; SOURCE_DATE_EPOCH is the image's creation time.
	cmd.Env = append(os.Environ(), "GOFLAGS=", "SOURCE_DATE_EPOCH="+strconv.FormatInt(img.Created.Unix(), 10))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("make image's builder: %w\n%s", err, out)
	}
	return string(out), nil
}

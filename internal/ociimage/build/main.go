// Command build is `make image`: it builds herald's image as an OCI image
// layout (one manifest per platform under an image index) without Docker,
// prints each platform's digest and size, and pushes it when asked.
//
//	go run ./internal/ociimage/build -out .cache/image -version 0.2.0 \
//	    -platforms linux/amd64,linux/arm64 [-push 127.0.0.1:5000/herald:0.2.0 -plain-http]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/herald-k8s/herald/internal/ociimage"
)

func main() {
	out := flag.String("out", ".cache/image", "the OCI image layout directory to write (replaced)")
	version := flag.String("version", "", "the image's version and tag (default: the chart's appVersion)")
	revision := flag.String("revision", "", "the source revision (default: git rev-parse HEAD)")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "the platforms of the image index")
	push := flag.String("push", "", "also push to this reference, REGISTRY/REPOSITORY:TAG (a registry that needs no login)")
	plainHTTP := flag.Bool("plain-http", false, "push over http:// (a registry on this machine)")
	flag.Parse()
	if err := run(*out, *version, *revision, *platforms, *push, *plainHTTP); err != nil {
		fmt.Fprintln(os.Stderr, "make image:", err)
		os.Exit(1)
	}
}

func run(out, version, revision, platformList, push string, plainHTTP bool) error {
	ctx := context.Background()
	platforms, err := ociimage.ParsePlatforms(platformList)
	if err != nil {
		return err
	}
	if version == "" {
		if version, err = ociimage.ChartAppVersion("charts/herald/Chart.yaml"); err != nil {
			return err
		}
	}
	if revision == "" {
		revision = git("rev-parse", "HEAD")
	}
	opts := ociimage.Options{Source: ".", Out: out, Tag: version, Version: version, Revision: revision,
		Created: created(), Platforms: platforms}
	start := time.Now()
	res, err := ociimage.Build(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Printf("image %s (revision %s) in %s, built in %s\n", version, revision, out, time.Since(start).Round(time.Second))
	fmt.Printf("  index    %s\n", res.Index.Digest)
	for _, m := range res.Manifests {
		fmt.Printf("  %-12s %s  layer %.1f MB (binary %.1f MB uncompressed)\n", m.Platform, m.Manifest.Digest,
			float64(m.LayerSize)/1e6, float64(m.UncompressedBinary)/1e6)
	}
	if push == "" {
		return nil
	}
	ref, err := ociimage.ParseReference(push)
	if err != nil {
		return err
	}
	if _, err := (ociimage.Pusher{PlainHTTP: plainHTTP}).Push(ctx, out, ref); err != nil {
		return err
	}
	fmt.Printf("pushed %s@%s\n", ref, res.Index.Digest)
	return nil
}

// created is the image's creation time: $SOURCE_DATE_EPOCH, else the
// commit's time, so that one commit builds one digest.
func created() time.Time {
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		epoch = git("log", "-1", "--format=%ct")
	}
	if s, err := strconv.ParseInt(epoch, 10, 64); err == nil {
		return time.Unix(s, 0).UTC()
	}
	return time.Unix(0, 0).UTC()
}

func git(args ...string) string {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

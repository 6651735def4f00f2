// Command build builds the control-plane binaries internal/testenv runs
// (with the real node's kubelet, scheduler and controller-manager) and
// the helm and promtool binaries the chart is tested with, the
// Alertmanager the alertmanager sink is tested against, if they are
// not in the cache yet, and installs the real node's Debian packages
// (containerd, runc, CNI plugins) when missing. make test and make demo run it first
// so that the slow cold build shows its progress instead of happening
// silently inside a test.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/herald-k8s/herald/internal/testenv"
)

func main() {
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	bins, err := testenv.EnsureBinaries(context.Background(), logf)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	helm, err := testenv.EnsureHelm(context.Background(), logf)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	promtool, err := testenv.EnsurePromtool(context.Background(), logf)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	alertmanager, err := testenv.EnsureAlertmanager(context.Background(), logf)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	registry, err := testenv.EnsureRegistry(context.Background(), logf)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mailpit, err := testenv.EnsureMailpit(context.Background(), logf)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if _, err := testenv.EnsureActionlint(context.Background(), logf); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := testenv.EnsureNodePackages(context.Background(), logf); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "testenv: binaries ready: %s, %s, %s, %s, %s, %s, %s\n", bins.KubeAPIServer, bins.Etcd, helm, promtool, alertmanager, registry, mailpit)
}

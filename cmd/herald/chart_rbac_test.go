package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/herald-k8s/herald/internal/testenv"
)

// TestChartRBACIsEnough installs the chart, then runs the herald binary as the
// chart's ServiceAccount (a token from the TokenRequest API) with the
// chart's rendered configuration: it syncs, leads, writes the ledger and
// notifies a crash. A rule for a kind the chart did not grant stops it at
// start with the missing permission named.
func TestChartRBACIsEnough(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	admin, _ := env.Client()
	ctx := context.Background()
	recv := newReceiver(t)
	helmBin, err := testenv.EnsureHelm(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	kc := t.TempDir() + "/admin.kubeconfig"
	env.WriteKubeconfig(kc)
	install := exec.Command(helmBin, "install", "herald", "../../charts/herald", "-n", "herald", "--create-namespace", "--kubeconfig", kc,
		"--set-json", fmt.Sprintf(`config.sinks=[{"name":"slack","webhook":{"url":"%s/herald"}}]`, recv.URL),
		"--set-json", "secrets=[]",
		// No node to run the config-check hook's Job on.
		"--set", "configCheck.enabled=false")
	install.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	cm, err := admin.CoreV1().ConfigMaps("herald").Get(ctx, "herald", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	chartConfig := cm.Data["config.yaml"]
	saConfig, err := env.TokenConfig(ctx, admin, "herald", "herald")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	saKubeconfig := dir + "/sa.kubeconfig"
	if err := testenv.WriteKubeconfigOf(saKubeconfig, saConfig); err != nil {
		t.Fatal(err)
	}
	bin := buildHerald(t)
	// run starts the herald binary as the ServiceAccount with cfg.
	run := func(name, cfg string) (*exec.Cmd, *syncBuffer, chan error) {
		return runHeraldAs(t, bin, saKubeconfig, dir+"/"+name+".yaml", cfg)
	}

	cmd, out, done := run("chart", chartConfig)
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(out.String(), `msg="starting workers"`), nil
	})
	if err != nil {
		t.Fatalf("herald as the chart's ServiceAccount did not start:\n%s", out)
	}
	logs := out.String()
	for _, want := range []string{`msg="caches synced"`, `msg="became the leader"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("running as the chart's ServiceAccount: no %s in\n%s", want, logs)
		}
	}
	// helm installed crds/ and the ClusterRole lets herald read them.
	if strings.Contains(logs, "Silence resources are off") || strings.Contains(logs, "ClusterSilences (muting across namespaces) are off") {
		t.Errorf("running as the chart's ServiceAccount, silences are off:\n%s", logs)
	}
	// What changed: the ClusterRole lets herald watch the workload kinds
	// and ConfigMaps (metadata), and Secrets only with allowSecretsAccess.
	for _, res := range []string{"deployments", "statefulsets", "daemonsets", "configmaps"} {
		if strings.Contains(logs, "herald may not list and watch "+res) {
			t.Errorf("running as the chart's ServiceAccount, what changed lacks %s:\n%s", res, logs)
		}
	}
	if !strings.Contains(logs, "herald may not list and watch secrets") {
		t.Errorf("without allowSecretsAccess, no warning that Secret changes are not watched:\n%s", logs)
	}
	// The Role lets herald look at its namespace's pods (none but the
	// chart's own would be there; here none at all).
	if strings.Contains(logs, "could not check whether herald's namespace is shared") || strings.Contains(logs, "also runs other workloads") {
		t.Errorf("running as the chart's ServiceAccount in a namespace of its own:\n%s", logs)
	}
	crashPods(t, admin, "rbac", 1)
	if got := recv.next(t, 10*time.Second); got.Transition != "firing" || got.Object.Name != "rbac-0" {
		t.Fatalf("got %s for %s", got.Transition, got.Object.Name)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		cms, err := admin.CoreV1().ConfigMaps("herald").List(ctx, metav1.ListOptions{LabelSelector: "herald.io/ledger=herald-ledger"})
		return err == nil && len(cms.Items) > 0, nil
	})
	if err != nil {
		t.Errorf("no ledger written in namespace herald:\n%s", out)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-done; err != nil {
		t.Errorf("herald exited with %v after SIGTERM:\n%s", err, out)
	}

	// The chart grants the kinds of its values' rules, no more.
	// (The top-level rules: list, not inhibit's.)
	extra := strings.Replace(chartConfig, "\nrules:\n", "\nrules:\n- name: pvc\n  kind: PersistentVolumeClaim\n  detector: pvc-pending\n  sinks: [slack]\n", 1)
	if extra == chartConfig {
		t.Fatalf("no top-level rules: in the chart's configuration:\n%s", chartConfig)
	}
	_, badOut, badDone := run("extra", extra)
	select {
	case err := <-badDone:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(badOut.String(), "list persistentvolumeclaims in all namespaces") {
			t.Errorf("exit %v; logs:\n%s", err, badOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("herald kept running without permission for PersistentVolumeClaims:\n%s", badOut)
	}
}

// runHeraldAs starts the herald binary with cfg (written to path) as
// the user of kubeconfig, in namespace herald; it is killed at the end of
// the test.
func runHeraldAs(t *testing.T, bin, kubeconfig, path, cfg string) (*exec.Cmd, *syncBuffer, chan error) {
	t.Helper()
	os.WriteFile(path, []byte(cfg), 0o600)
	logs := &syncBuffer{}
	cmd := exec.Command(bin, "run", "--config", path, "--kubeconfig", kubeconfig, "--namespace", "herald",
		"--lease-name", "herald", "--log-format", "text", "--metrics-addr", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, logs, done
}

func ptrTo[T any](v T) *T { return &v }

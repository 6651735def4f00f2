package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// TestSharedNamespaceWarning: herald warns at start when its namespace is
// default or runs another workload's pods, and not when only its own
// release's pods run there (a second release of herald counts as
// another); without permission to look, it says so at info level.
func TestSharedNamespaceWarning(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	ctx := context.Background()
	admin, _ := env.Client()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	createNamespaces(t, admin, "herald", "shared")
	pod := func(ns, name, release string) {
		t.Helper()
		p := newPod(name)
		p.Namespace = ns
		if release != "" {
			p.Labels = map[string]string{"app.kubernetes.io/name": "herald", "app.kubernetes.io/instance": release}
		}
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod("herald", "herald-7d9f-a", "herald")
	pod("herald", "herald-7d9f-b", "herald")
	pod("shared", "herald-7d9f-a", "herald")
	pod("shared", "postgres-0", "")
	pod("shared", "herald-staging-6c4b-a", "herald-staging")
	check := func(d dynamic.Interface, ns, self string) string {
		var logs bytes.Buffer
		warnSharedNamespace(ctx, d, ns, self, slog.New(slog.NewTextHandler(&logs, nil)))
		return logs.String()
	}
	if logs := check(dyn, "herald", "herald-7d9f-a"); logs != "" {
		t.Errorf("herald's own namespace: %s", logs)
	}
	if logs := check(dyn, "herald", ""); logs != "" { // out of a cluster: by the name label
		t.Errorf("herald's own namespace, no POD_NAME: %s", logs)
	}
	logs := check(dyn, "shared", "herald-7d9f-a")
	if !strings.Contains(logs, `level=WARN msg="herald's namespace shared also runs other workloads; whoever may edit it can read and rewrite herald's ledger, take its leader Lease and read its sinks' Secrets: give herald a namespace of its own" namespace=shared pods="herald-staging-6c4b-a, postgres-0"`) {
		t.Errorf("a shared namespace:\n%s", logs)
	}
	if logs := check(dyn, "default", ""); !strings.Contains(logs, `level=WARN msg="herald runs in namespace default, which is usually shared`) {
		t.Errorf("default:\n%s", logs)
	}
	nobody, err := dynamic.NewForConfig(env.ConfigFor("nobody"))
	if err != nil {
		t.Fatal(err)
	}
	if logs := check(nobody, "shared", ""); !strings.Contains(logs, `level=INFO msg="could not check whether herald's namespace is shared`) {
		t.Errorf("without permission:\n%s", logs)
	}
}

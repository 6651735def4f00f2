package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMissingPermissionsFailFast runs herald as a user with only part of
// the RBAC it needs: it exits 1 at once, naming every missing permission,
// instead of retrying a forbidden watch forever. With the rest granted it
// starts.
func TestMissingPermissionsFailFast(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	admin, _ := env.Client()
	ctx := context.Background()
	// herald-sa may watch pods and use leases, but not configmaps (the
	// ledger) nor nodes (a rule below watches them).
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "herald-partial"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
	}}
	admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "herald-partial"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "herald-partial"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "herald-sa"}},
	}, metav1.CreateOptions{})

	limited := *env
	limited.Config = env.ConfigFor("herald-sa")
	recv := newReceiver(t)
	cfg := fmt.Sprintf(`
rules:
  - {name: crash, kind: Pod, detector: crashloop, sinks: [hook]}
  - {name: nodes, kind: Node, detector: node-not-ready, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, recv.URL)
	h := runHerald(t, &limited, cfg)
	select {
	case code := <-h.done:
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
	case <-time.After(30 * time.Second):
		h.stop()
		t.Fatalf("herald kept running without its permissions:\n%s", h.logs)
	}
	logs := h.logs.String()
	for _, want := range []string{"list nodes in all namespaces", "watch nodes in all namespaces", "create configmaps in namespace default", "delete configmaps in namespace default",
		"patch leases.coordination.k8s.io in namespace default", "patch configmaps in namespace default"} { // patch: renewals, shard marks
		if !strings.Contains(logs, want) {
			t.Errorf("the error does not name %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "list pods") || strings.Contains(logs, "update leases") {
		t.Errorf("granted permissions reported missing:\n%s", logs)
	}
}

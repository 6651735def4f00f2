package preflight

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/testenv"
)

// TestCheckOnControlPlane: the API server says, for a real
// ServiceAccount, what it lacks of what herald is about to do — the
// kinds' list and watch, and an extra grant a rule needs (get on
// nodes/proxy, for volume stats) — all at once, by name; with them
// granted, nothing.
func TestCheckOnControlPlane(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	watchClaims := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims", "nodes"}, Verbs: []string{"list", "watch"}}
	proxy := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"}}
	nodeProxy := Access{Verb: "get", GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Subresource: "proxy", Why: "volume stats"}
	for _, tt := range []struct {
		name  string
		rules []rbacv1.PolicyRule
		want  string // "" allowed
	}{
		{"no-proxy", []rbacv1.PolicyRule{watchClaims}, "herald's identity lacks permissions it needs: get nodes/proxy in all namespaces (volume stats)."},
		{"nothing", nil, "get nodes/proxy in all namespaces (volume stats); list persistentvolumeclaims in all namespaces; watch persistentvolumeclaims in all namespaces; list nodes in all namespaces; watch nodes in all namespaces."},
		{"all", []rbacv1.PolicyRule{watchClaims, proxy}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			perms := testenv.Permissions{Cluster: tt.rules}
			if len(perms.Cluster) == 0 {
				perms.Cluster = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}}}
			}
			cfg, err := env.ServiceAccountConfig(ctx, "default", "herald-"+tt.name, perms)
			if err != nil {
				t.Fatal(err)
			}
			client, err := kube.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = Check(ctx, client, []string{"PersistentVolumeClaim", "Node"}, "herald", false, false, slog.New(slog.DiscardHandler), nodeProxy)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want it to say %q", err, tt.want)
			}
		})
	}
}

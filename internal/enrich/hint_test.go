package enrich

import (
	"strings"
	"testing"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
)

func TestHint(t *testing.T) {
	tests := []struct {
		reason string
		facts  map[string]string
		want   string
	}{
		{"CrashLoopBackOff", map[string]string{"exitCode": "1"}, "Exit code 1: the program failed by itself"},
		{"CrashLoopBackOff", map[string]string{"exitCode": "2"}, "command and args"},
		{"CrashLoopBackOff", map[string]string{"exitCode": "126"}, "cannot be run"},
		{"CrashLoopBackOff", map[string]string{"exitCode": "127"}, "command not found"},
		{"CrashLoopBackOff", map[string]string{"exitCode": "134"}, "SIGABRT"},
		{"CrashLoopBackOff", map[string]string{"exitCode": "137"}, "SIGKILL"},
		{"CrashLoopBackOff", map[string]string{"exitCode": "139"}, "SIGSEGV"},
		{"CrashLoopBackOff", map[string]string{"exitCode": "143"}, "SIGTERM"},
		{"CrashLoopBackOff", map[string]string{"exitCode": "130"}, "killed by signal 2"},
		{"CrashLoopBackOff", map[string]string{"exitCode": "3"}, "own failure code"},
		{"OOMKilled", map[string]string{"memoryLimit": "256Mi"}, "its limit (256Mi)"},
		{"CreateContainerConfigError", map[string]string{"message": `secret "db-password" not found`}, "Secret db-password does not exist in namespace shop"},
		{"CreateContainerConfigError", map[string]string{"message": `configmap "app-config" not found`}, "ConfigMap app-config does not exist"},
		{"CreateContainerConfigError", map[string]string{"message": "couldn't find key url in Secret shop/db"}, "Secret shop/db has no key url"},
		{"ImagePullBackOff", map[string]string{"message": "rpc error: manifest unknown"}, "does not exist"},
		{"ImagePullBackOff", map[string]string{"message": "pull access denied, authorization failed: 401 Unauthorized"}, "refused the pull"},
		{"Evicted", map[string]string{"message": "The node was low on resource: memory. Threshold quantity: 100Mi"}, "low on memory"},
		{"JobRunningLong", nil, "kubectl logs job/backup-1 -n shop says what"},
		{"CertificateExpiring", nil, "cmctl renew backup-1 -n shop"},
		{"NoReadyEndpoints", map[string]string{"notReady": "2", "selector": "app=web"}, "fail their readiness probe"},
		{"NoReadyEndpoints", map[string]string{"notReady": "0", "selector": "app=web"}, "kubectl get pods -l 'app=web' -n shop"},
		{"NodeNotReady", nil, ""},
	}
	for _, tt := range tests {
		got := Hint(incident.Incident{Reason: tt.reason, Facts: tt.facts, Object: rules.ObjectRef{Namespace: "shop", Name: "backup-1"}})
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("%s %v: %q, want it to say %q", tt.reason, tt.facts, got, tt.want)
		}
	}
}

package watcher

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestCertificateKept: a Certificate cached for the certificate detectors
// keeps what they read — its Secret's name, issuer, first three DNS
// names and their count, validity, renewal time, Ready condition — and
// not its keystore passwords nor the rest of a spec its author may grow;
// a rule that reads the whole object (CEL) keeps it whole.
func TestCertificateKept(t *testing.T) {
	cert := func() *unstructured.Unstructured {
		var names []any
		for i := range 10 {
			names = append(names, fmt.Sprintf("n%d.example.com", i))
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
			"metadata": map[string]any{"name": "shop-tls", "namespace": "shop"},
			"spec": map[string]any{"secretName": "shop-tls", "dnsNames": names, "issuerRef": map[string]any{"name": "le", "kind": "ClusterIssuer"},
				"keystores": map[string]any{"pkcs12": map[string]any{"create": true, "password": "hunter2"}}, "uris": []any{strings.Repeat("u", 10000)}},
			"status": map[string]any{"notAfter": "2027-01-01T00:00:00Z", "renewalTime": "2026-12-01T00:00:00Z",
				"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "Failed"}, map[string]any{"type": "Issuing", "status": "True"}}},
		}}
	}
	got, err := Keep{}.transform(cert())
	if err != nil {
		t.Fatal(err)
	}
	u := got.(*unstructured.Unstructured)
	spec := u.Object["spec"].(map[string]any)
	if strings.Contains(fmt.Sprint(u.Object), "hunter2") || spec["uris"] != nil || spec["keystores"] != nil {
		t.Errorf("kept what no detector reads: %v", spec)
	}
	if len(spec["dnsNames"].([]any)) != 3 || spec["dnsNamesTotal"] != int64(10) || spec["secretName"] != "shop-tls" || spec["issuerRef"] == nil {
		t.Errorf("spec kept: %v", spec)
	}
	status := u.Object["status"].(map[string]any)
	if status["notAfter"] == nil || status["renewalTime"] == nil || len(status["conditions"].([]any)) != 1 {
		t.Errorf("status kept: %v", status)
	}
	if u.GetName() != "shop-tls" || u.GetNamespace() != "shop" {
		t.Errorf("metadata lost: %v", u.Object["metadata"])
	}
	whole, _ := KeepAll.transform(cert())
	if whole.(*unstructured.Unstructured).Object["spec"].(map[string]any)["uris"] == nil {
		t.Error("a rule that reads the whole object lost the spec")
	}
}

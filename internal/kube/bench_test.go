package kube

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// BenchmarkUpdateConfigMap: what herald's side of a ledger shard's write
// costs — encoding a 512 KB ConfigMap and reading the resourceVersion out
// of the API server's echo of it (a loopback server answering as the API
// server does, in protobuf).
func BenchmarkUpdateConfigMap(b *testing.B) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "herald-ledger-0", Namespace: "herald", ResourceVersion: "41",
			Labels: map[string]string{"herald.io/ledger": "herald"}},
		Data: map[string]string{"incidents": strings.Repeat("x", 512<<10)},
	}
	stored := cm.DeepCopy()
	stored.ResourceVersion = "42"
	stored.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "herald", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1"}}
	answer := protobufOf(b, stored)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		w.Write(answer)
	}))
	defer srv.Close()
	c, err := New(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rv, err := c.UpdateConfigMap(ctx, cm)
		if err != nil || rv != "42" {
			b.Fatalf("UpdateConfigMap: %q, %v; want 42", rv, err)
		}
	}
}

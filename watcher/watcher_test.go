package watcher

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func TestKeyRoundTrip(t *testing.T) {
	for _, k := range []Key{{Kind: "Pod", Namespace: "shop", Name: "web"}, {Kind: "Node", Name: "n1"}, {Kind: "Widget.v1.example.com", Namespace: "a", Name: "b"}} {
		got, ok := ParseKey(k.String())
		if !ok || got != k {
			t.Errorf("ParseKey(%q) = %+v, %v", k.String(), got, ok)
		}
	}
	for _, bad := range []string{"", "Pod", "a/b/c/d", "/x"} {
		if _, ok := ParseKey(bad); ok {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}

func TestKeyForTombstone(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}}
	tomb := cache.DeletedFinalStateUnknown{Key: "shop/web", Obj: pod}
	for _, obj := range []any{pod, tomb} {
		if k, ok := KeyFor("Pod", obj); !ok || k != (Key{Kind: "Pod", Namespace: "shop", Name: "web"}) {
			t.Errorf("KeyFor(%T) = %+v, %v", obj, k, ok)
		}
	}
}

func TestStripUnread(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name:          "web",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		Annotations:   map[string]string{lastApplied: "{...}", "team": "shop"},
	}}
	out, err := StripUnread(pod)
	if err != nil {
		t.Fatal(err)
	}
	p := out.(*corev1.Pod)
	if p.ManagedFields != nil || p.Annotations[lastApplied] != "" || p.Annotations["team"] != "shop" {
		t.Errorf("after transform: managedFields %v, annotations %v", p.ManagedFields, p.Annotations)
	}
}

func TestWorkload(t *testing.T) {
	owned := func(kind, name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: name, Controller: ptr.To(true)}}}}
	}
	tests := []struct {
		pod              *corev1.Pod
		wantKind, wantNm string
	}{
		{owned("ReplicaSet", "api-5d8f", map[string]string{"pod-template-hash": "5d8f"}), "Deployment", "api"},
		{owned("ReplicaSet", "legacy", nil), "ReplicaSet", "legacy"},
		{owned("StatefulSet", "db", nil), "StatefulSet", "db"},
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}, "Pod", "bare"},
	}
	for _, tt := range tests {
		if k, n := Workload(tt.pod); k != tt.wantKind || n != tt.wantNm {
			t.Errorf("Workload = %s/%s, want %s/%s", k, n, tt.wantKind, tt.wantNm)
		}
	}
}

func TestSecretValuesNeverCached(t *testing.T) {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"password": []byte("hunter2")}, StringData: map[string]string{"token": "t0ken"}}
	out, _ := StripUnread(sec)
	if s := out.(*corev1.Secret); s.Data != nil || s.StringData != nil || s.Type != corev1.SecretTypeOpaque {
		t.Errorf("secret after transform: %+v", s)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db"}, "data": map[string]any{"password": "aHVudGVyMg=="}}}
	StripUnread(u)
	if _, ok := u.Object["data"]; ok {
		t.Error("unstructured secret keeps its data")
	}
}

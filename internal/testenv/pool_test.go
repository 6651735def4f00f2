package testenv

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// TestPoolHandsOutAnEmptiedControlPlane: what one test made is gone when
// the next gets the same control plane (a namespace with an object in
// it, a pod with a finalizer, a cluster role, a custom resource whose
// definition the next test installs again); a control plane whose
// starting objects a test changed, or whose API server it restarted, is
// stopped, not handed out again.
func TestPoolHandsOutAnEmptiedControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("starts control planes")
	}
	ctx := context.Background()
	var pool Pool
	defer pool.Close()
	clientOf := func(t *testing.T, env *Env) kubernetes.Interface {
		c, err := env.Client()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	crdFile := filepath.Join(t.TempDir(), "widgets.yaml")
	if err := os.WriteFile(crdFile, []byte(widgetCRD), 0o600); err != nil {
		t.Fatal(err)
	}

	var first *Env
	t.Run("makes objects", func(t *testing.T) {
		first = pool.Get(t)
		c := clientOf(t, first)
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leftover"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CoreV1().ConfigMaps("leftover").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "state"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
		if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "leftover"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := first.InstallCRDs(ctx, crdFile); err != nil {
			t.Fatal(err)
		}
		widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "leftover"}}}
		if _, err := dynamicOf(t, first).Resource(widgets).Namespace("default").Create(ctx, widget, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("finds them gone", func(t *testing.T) {
		env := pool.Get(t)
		if env != first {
			t.Fatal("the first test's control plane was not handed out again")
		}
		c := clientOf(t, env)
		for what, err := range map[string]error{
			"namespace leftover":       get(c.CoreV1().Namespaces().Get(ctx, "leftover", metav1.GetOptions{})),
			"configmap leftover/state": get(c.CoreV1().ConfigMaps("leftover").Get(ctx, "state", metav1.GetOptions{})),
			"pod default/held":         get(c.CoreV1().Pods("default").Get(ctx, "held", metav1.GetOptions{})),
			"clusterrole leftover":     get(c.RbacV1().ClusterRoles().Get(ctx, "leftover", metav1.GetOptions{})),
		} {
			if !apierrors.IsNotFound(err) {
				t.Errorf("%s: %v, want it gone", what, err)
			}
		}
		// Had the definition's own finalizer been removed, its objects
		// would have stayed in etcd and come back with it.
		if err := env.InstallCRDs(ctx, crdFile); err != nil {
			t.Fatal(err)
		}
		if list, err := dynamicOf(t, env).Resource(widgets).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
			t.Errorf("widgets after the definition came back: %v, %v; want none", list, err)
		}
		// Labelling a starting object makes this control plane unfit.
		patch := []byte(`{"metadata":{"labels":{"team":"payments"}}}`)
		if _, err := c.CoreV1().Namespaces().Patch(ctx, "default", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	var third *Env
	t.Run("gets another after a change", func(t *testing.T) {
		third = pool.Get(t)
		if third == first {
			t.Fatal("a control plane whose default namespace was labelled was handed out again")
		}
		if alive(first.PIDs()) {
			t.Errorf("the unfit control plane still runs: %v", first.PIDs())
		}
		third.StopAPIServer()
		if err := third.StartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("gets another after a restart", func(t *testing.T) {
		if env := pool.Get(t); env == third {
			t.Fatal("a control plane whose API server was restarted was handed out again")
		}
	})
}

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

func dynamicOf(t *testing.T, env *Env) dynamic.Interface {
	d, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func get[T any](_ T, err error) error { return err }

// alive reports whether any of pids still runs.
func alive(pids []int) bool {
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			return true
		}
	}
	return false
}

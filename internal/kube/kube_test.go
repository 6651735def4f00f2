package kube_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authzv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/testenv"
)

// TestOnControlPlane: herald's narrow client against a real API server,
// one control plane for the package.
func TestOnControlPlane(t *testing.T) {
	env := testenv.New(t)
	c, err := kube.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.InstallCRDs(context.Background(), "../../charts/herald/crds/silences.herald.io.yaml"); err != nil {
		t.Fatal(err)
	}
	t.Run("ListAndWatchTyped", func(t *testing.T) { listAndWatchTyped(t, env, c) })
	t.Run("ListAndWatchDecoding", func(t *testing.T) { listAndWatchDecoding(t, env, c) })
	t.Run("ConfigMaps", func(t *testing.T) { configMaps(t, c) })
	t.Run("ConditionalPatches", func(t *testing.T) { conditionalPatches(t, c) })
	t.Run("ResourceFor", func(t *testing.T) { resourceFor(t, c) })
	t.Run("Reviews", func(t *testing.T) { reviews(t, env, c) })
}

// listAndWatchTyped: a built-in kind lists and watches as its own Go type
// over protobuf, and a kind herald's scheme lacks is refused up front.
func listAndWatchTyped(t *testing.T, env *testenv.Env, c *kube.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "shop"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "shop:1"}}}},
	}}
	if _, err := client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lw, example, err := c.ListerWatcher(appsv1.SchemeGroupVersion.WithResource("deployments"), "Deployment")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := example.(*appsv1.Deployment); !ok {
		t.Fatalf("example object is %T, want *appsv1.Deployment", example)
	}
	// A reflector's first list at resourceVersion "0" is answered in
	// pages (kube.InPages): a second deployment, one a page.
	d.Name = "shop-2"
	if _, err := client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if first, err := lw.(cache.ListerWatcherWithContext).ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1}); err != nil {
		t.Fatal(err)
	} else if page := first.(*appsv1.DeploymentList); len(page.Items) != 1 || page.Continue == "" {
		t.Errorf("a first list at resourceVersion 0, 1 a page: %d items, continue %q; want a page of 1 and more to come", len(page.Items), page.Continue)
	}
	if err := client.AppsV1().Deployments("default").Delete(ctx, "shop-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	listed, err := lw.(cache.ListerWatcherWithContext).ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, ok := listed.(*appsv1.DeploymentList)
	if !ok || len(list.Items) != 1 || list.Items[0].Name != "shop" || list.Items[0].Spec.Template.Spec.Containers[0].Image != "shop:1" {
		t.Fatalf("listed %T %+v, want the one deployment shop", listed, listed)
	}
	w, err := lw.(cache.ListerWatcherWithContext).WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := client.AppsV1().Deployments("default").Delete(ctx, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if got, ok := ev.Object.(*appsv1.Deployment); ev.Type != watch.Deleted || !ok || got.Name != "shop" {
			t.Fatalf("watched %s %T, want Deleted *appsv1.Deployment shop", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event for the deleted deployment")
	}
	if _, _, err := c.ListerWatcher(schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}, "PodDisruptionBudget"); err == nil {
		t.Error("a ListerWatcher for a group herald's client does not speak, want an error")
	}
}

// decodedPod is what the test's decode makes of a pod: another type
// than the scheme's, so that a corev1.Pod in a list or an event would
// show the decode was bypassed.
type decodedPod struct {
	metav1.PartialObjectMetadata
	image string
}

// listAndWatchDecoding: pages of a list and watch events reach the
// caller's decode with the pod's own encoding; a Status (an error
// answer) still decodes as one.
func listAndWatchDecoding(t *testing.T, env *testenv.Env, c *kube.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	var decoded atomic.Int32
	decode := func(raw []byte) (runtime.Object, error) {
		var pod corev1.Pod
		if err := pod.Unmarshal(raw); err != nil {
			return nil, err
		}
		decoded.Add(1)
		out := &decodedPod{image: pod.Spec.Containers[0].Image}
		out.ObjectMeta = pod.ObjectMeta
		return out, nil
	}
	lw, err := c.ListerWatcherDecoding(corev1.SchemeGroupVersion.WithResource("pods"), "Pod", decode)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("decoded-%d", i), Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: fmt.Sprintf("shop:%d", i)}}}}
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A reflector's first list, when it cannot stream it (resourceVersion
	// "0" with a page size), is answered in pages too, not whole from
	// the API server's watch cache.
	first, err := lw.(cache.ListerWatcherWithContext).ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if list := first.(*kube.List); len(list.Items) != 2 || list.Continue == "" {
		t.Errorf("a first list at resourceVersion 0, 2 a page: %d items, continue %q; want a page of 2 and more to come", len(list.Items), list.Continue)
	}
	decoded.Store(0)
	var names []string
	var rv string
	for opts := (metav1.ListOptions{Limit: 2}); ; {
		listed, err := lw.(cache.ListerWatcherWithContext).ListWithContext(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		list, ok := listed.(*kube.List)
		if !ok || list.ResourceVersion == "" {
			t.Fatalf("listed %T %+v, want a kube.List with a resourceVersion", listed, listed)
		}
		for _, it := range list.Items {
			p, ok := it.(*decodedPod)
			if !ok || p.image != "shop:"+strings.TrimPrefix(p.Name, "decoded-") {
				t.Fatalf("list item %T %+v, want the decode's", it, it)
			}
			names = append(names, p.Name)
		}
		if rv, opts.Continue = list.ResourceVersion, list.Continue; opts.Continue == "" {
			break
		}
	}
	if strings.Join(names, ",") != "decoded-0,decoded-1,decoded-2" || decoded.Load() != 3 {
		t.Fatalf("listed %v over pages with %d decodes, want the 3 pods decoded once each", names, decoded.Load())
	}
	w, err := lw.(cache.ListerWatcherWithContext).WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := client.CoreV1().Pods("default").Delete(ctx, "decoded-1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if got, ok := ev.Object.(*decodedPod); !ok || got.Name != "decoded-1" {
			t.Fatalf("watched %s %T, want the decode's pod decoded-1", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event for the deleted pod")
	}
	// Events one after another, each read into the memory of the one
	// before: each decodes as itself.
	for round := range 3 {
		for _, name := range []string{"decoded-0", "decoded-2"} {
			patch := fmt.Sprintf(`{"metadata":{"labels":{"round":"%d-%s"}}}`, round, name)
			if _, err := client.CoreV1().Pods("default").Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// All six are read before any is checked: by then every frame has
	// been read into the memory the first was.
	var events []watch.Event
	for len(events) < 6 {
		select {
		case ev := <-w.ResultChan():
			if m, err := meta.Accessor(ev.Object); err == nil && m.GetName() == "decoded-1" {
				continue // the deleted pod's last events
			}
			events = append(events, ev)
		case <-ctx.Done():
			t.Fatalf("%d of 6 watch events for the patches", len(events))
		}
	}
	for round := range 3 {
		for i, name := range []string{"decoded-0", "decoded-2"} {
			ev := events[2*round+i]
			got, ok := ev.Object.(*decodedPod)
			if want := fmt.Sprintf("%d-%s", round, name); ev.Type != watch.Modified || !ok || got.Name != name || got.Labels["round"] != want ||
				got.image != "shop:"+strings.TrimPrefix(name, "decoded-") {
				t.Fatalf("watched %s %T %+v, want %s modified with round=%s", ev.Type, ev.Object, ev.Object, name, want)
			}
		}
	}
	// An error answer is a Status, decoded as the scheme's.
	_, err = lw.(cache.ListerWatcherWithContext).ListWithContext(ctx, metav1.ListOptions{LabelSelector: "a in (b"})
	if st, ok := err.(apierrors.APIStatus); !ok || st.Status().Code != http.StatusBadRequest {
		t.Fatalf("listing with a broken selector: %T %v, want a 400 Status", err, err)
	}
	if _, err := c.ListerWatcherDecoding(schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}, "PodDisruptionBudget", decode); err == nil {
		t.Error("a decoding ListerWatcher for a group herald's client does not speak, want an error")
	}
}

// conditionalPatches: a Lease renewal lands only while its holder holds
// it (the API server answers Invalid otherwise), and does not depend on
// the resourceVersion; a ledger shard's mark lands only on the version
// it names (Conflict otherwise).
func conditionalPatches(t *testing.T, c *kube.Client) {
	ctx := context.Background()
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "renewed", Namespace: "default"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), LeaseDurationSeconds: ptr.To[int32](15)}}
	if _, err := c.CreateLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	at := metav1.NewMicroTime(time.Date(2026, 11, 28, 12, 0, 0, 123456000, time.UTC))
	for range 2 { // twice: the second carries no newer resourceVersion than the first
		renewed, err := c.RenewLease(ctx, "default", "renewed", "a", at)
		if err != nil || renewed.Spec.RenewTime == nil || !renewed.Spec.RenewTime.Equal(&at) {
			t.Fatalf("renewing as the holder: %v (renewTime %v), want renewTime %v", err, renewed.Spec.RenewTime, at)
		}
	}
	if _, err := c.RenewLease(ctx, "default", "renewed", "b", at); !apierrors.IsInvalid(err) {
		t.Errorf("renewing as another: %v, want Invalid", err)
	}
	if _, err := c.RenewLease(ctx, "default", "none", "a", at); !apierrors.IsNotFound(err) {
		t.Errorf("renewing a Lease that does not exist: %v, want NotFound", err)
	}

	cm, err := c.CreateConfigMap(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "marked", Namespace: "default"}, Data: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	marked, err := c.AnnotateConfigMap(ctx, "default", "marked", cm.ResourceVersion, map[string]string{"writer": "me"})
	if err != nil || marked.Annotations["writer"] != "me" || marked.Data["k"] != "v" || marked.ResourceVersion == cm.ResourceVersion {
		t.Fatalf("marking at the current version: %v, %+v", err, marked.ObjectMeta)
	}
	if _, err := c.AnnotateConfigMap(ctx, "default", "marked", cm.ResourceVersion, map[string]string{"writer": "other"}); !apierrors.IsConflict(err) {
		t.Errorf("marking at an old version: %v, want Conflict", err)
	}
}

// configMaps: what the ledger does, create, list by label, update with
// and without a current resourceVersion (an update says the new one),
// delete with and without a current one.
func configMaps(t *testing.T, c *kube.Client) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ledger-0", Namespace: "default", Labels: map[string]string{"ledger": "yes"}},
		Data: map[string]string{"k": "v1"}}
	created, err := c.CreateConfigMap(ctx, cm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateConfigMap(ctx, cm); !apierrors.IsAlreadyExists(err) {
		t.Errorf("creating it twice: %v, want AlreadyExists", err)
	}
	cm.Data["k"] = "v2"
	rv, err := c.UpdateConfigMap(ctx, cm)
	if err != nil {
		t.Fatal(err)
	}
	stale := created.DeepCopy()
	stale.Data["k"] = "v3"
	if _, err := c.UpdateConfigMap(ctx, stale); !apierrors.IsConflict(err) {
		t.Errorf("updating an old resourceVersion: %v, want Conflict", err)
	}
	cm.ResourceVersion, cm.Data["k"] = rv, "v2"
	if rv, err = c.UpdateConfigMap(ctx, cm); err != nil {
		t.Errorf("updating with the resourceVersion the last update returned (%q): %v", cm.ResourceVersion, err)
	}
	// A shard-sized write (the answer is read as a stream, only its
	// resourceVersion kept): the version returned is the one stored.
	big := cm.DeepCopy()
	big.ResourceVersion, big.Data["big"] = rv, strings.Repeat("b", 900<<10)
	bigRV, err := c.UpdateConfigMap(ctx, big)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := c.GetConfigMap(ctx, "default", "ledger-0")
	if err != nil {
		t.Fatal(err)
	}
	if bigRV == "" || bigRV == rv || stored.ResourceVersion != bigRV || len(stored.Data["big"]) != 900<<10 {
		t.Errorf("a 900 KB update returned resourceVersion %q (before: %q); stored: %q with %d bytes", bigRV, rv, stored.ResourceVersion, len(stored.Data["big"]))
	}
	delete(cm.Data, "big")
	cm.ResourceVersion = bigRV
	if rv, err = c.UpdateConfigMap(ctx, cm); err != nil {
		t.Errorf("updating with the resourceVersion the 900 KB update returned (%q): %v", cm.ResourceVersion, err)
	}
	list, err := c.ListConfigMaps(ctx, "default", metav1.ListOptions{LabelSelector: "ledger=yes"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Data["k"] != "v2" {
		t.Fatalf("listed %+v, want ledger-0 with k=v2", list.Items)
	}
	if err := c.DeleteConfigMap(ctx, "default", "ledger-0", created.ResourceVersion); !apierrors.IsConflict(err) {
		t.Errorf("deleting an old resourceVersion: %v, want Conflict", err)
	}
	if err := c.DeleteConfigMap(ctx, "default", "ledger-0", rv); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteConfigMap(ctx, "default", "ledger-0", ""); !apierrors.IsNotFound(err) {
		t.Errorf("deleting it twice: %v, want NotFound", err)
	}
}

// resourceFor: a custom kind's resource is discovered; a kind or a group
// version the API server does not serve is an error that says which.
func resourceFor(t *testing.T, c *kube.Client) {
	ctx := context.Background()
	gvr, err := c.ResourceFor(ctx, schema.GroupVersionKind{Group: "herald.io", Version: "v1alpha1", Kind: "Silence"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (schema.GroupVersionResource{Group: "herald.io", Version: "v1alpha1", Resource: "silences"}); gvr != want {
		t.Errorf("ResourceFor(Silence) = %v, want %v", gvr, want)
	}
	gvr, err = c.ResourceFor(ctx, schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
	if err != nil || gvr.Resource != "pods" {
		t.Errorf("ResourceFor(Pod) = %v, %v, want pods", gvr, err)
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "herald.io", Version: "v1alpha1", Kind: "Muzzle"},
		{Group: "example.com", Version: "v1", Kind: "Widget"},
	} {
		_, err := c.ResourceFor(ctx, gvk)
		if err == nil || !strings.Contains(err.Error(), gvk.GroupVersion().String()) {
			t.Errorf("ResourceFor(%v) = %v, want an error naming %s", gvk, err, gvk.GroupVersion())
		}
	}
}

// reviews: the pre-flight checks' and `herald silence`'s questions.
func reviews(t *testing.T, env *testenv.Env, c *kube.Client) {
	ctx := context.Background()
	nobody, err := kube.New(env.ConfigFor("nobody"))
	if err != nil {
		t.Fatal(err)
	}
	review := &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: "list", Resource: "pods"}}}
	for _, tc := range []struct {
		client *kube.Client
		want   bool
	}{{c, true}, {nobody, false}} {
		got, err := tc.client.ReviewAccess(ctx, review)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != tc.want {
			t.Errorf("may list pods: %v, want %v", got.Status.Allowed, tc.want)
		}
	}
	who, err := nobody.WhoAmI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if who.Status.UserInfo.Username != "nobody" {
		t.Errorf("WhoAmI = %q, want nobody", who.Status.UserInfo.Username)
	}
	if err := c.Ready(ctx); err != nil {
		t.Errorf("Ready: %v", err)
	}
}

// TestReadyIsTheAPIServersReadyz: Ready is the API server's own /readyz
// answer, not merely that something listened.
func TestReadyIsTheAPIServersReadyz(t *testing.T) {
	var ready atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || !ready.Load() {
			http.Error(w, "[-]etcd failed: reason withheld", http.StatusInternalServerError)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	c, err := kube.New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(context.Background()); err == nil {
		t.Error("Ready while /readyz fails: nil, want an error")
	}
	ready.Store(true)
	if err := c.Ready(context.Background()); err != nil {
		t.Errorf("Ready while /readyz is ok: %v", err)
	}
}

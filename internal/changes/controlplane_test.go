package changes

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/watcher"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
)

// TestOnControlPlane: against a real API server and the deployment
// controller (which sets revisions; no node is needed), the record
// reports a rollout of a Deployment (revision, both images, env by name,
// the field manager that wrote it) and the change of a ConfigMap and a
// Secret it reads, without a value of either; a window that ends before
// them says there was no change.
func TestOnControlPlane(t *testing.T) {
	env := testenv.New(t)
	stop, err := env.StartControllers("deployment")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	client, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const secretValue, configValue = "s3cr3t-db-pw-71f2", "pool=10-conf-9c1d"
	const ns = "default"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: ns}, Data: map[string]string{"app.conf": configValue}}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-creds", Namespace: ns}, StringData: map[string]string{"password": secretValue}}
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "checkout"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "shop/checkout:1.8.2",
					Env:     []corev1.EnvVar{{Name: "DB_POOL", Value: "10"}, {Name: "API_TOKEN", Value: secretValue}},
					EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db-creds"}}}}}},
				Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}},
			}}}}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{FieldManager: "herald-test-setup"}); err != nil {
		t.Fatal(err)
	}

	typed, err := kube.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := metadata.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// Where the API server cannot stream a first list, the ConfigMaps'
	// and Secrets' metadata are listed in pages: asked at
	// resourceVersion "0" with a page size, as client-go's reflector
	// asks, the answer is a page, not every object at once.
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "second-config", Namespace: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "second-secret", Namespace: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"ConfigMap", "Secret"} {
		lw := objectListWatch(meta.Resource(objectResources[kind]))
		first, err := lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if page := first.(*metav1.PartialObjectMetadataList); len(page.Items) != 1 || page.Continue == "" {
			t.Errorf("a first list of %ss at resourceVersion 0, 1 a page: %d items, continue %q; want a page of 1 and more to come", kind, len(page.Items), page.Continue)
		}
	}

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := watcher.New(watcher.Clients{Builtin: typed}, 0, logger)
	// As herald runs when no rule reads workloads whole: the cache drops
	// pod templates, the record still sees them.
	if err := w.KeepWhen(func(string) watcher.Keep { return watcher.Keep{} }); err != nil {
		t.Fatal(err)
	}
	c, err := New(w, meta, nil, Options{}, logger)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Watch(w); err != nil {
		t.Fatal(err)
	}
	w.Start(ctx)
	t.Cleanup(w.Shutdown)
	c.Start(ctx)
	if err := w.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	key := watcher.Key{Kind: "Deployment", Namespace: ns, Name: "checkout"}
	until := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
			return c.Synced() && cond(), nil
		}); err != nil {
			t.Fatalf("waiting for %s: %v\nreport: %s", what, err, c.Before(key, time.Now(), time.Hour))
		}
	}
	until("revision 1", func() bool {
		r := c.Before(key, time.Now(), time.Hour)
		return len(r.Rollouts) == 1 && r.Rollouts[0].Revision == "1"
	})
	// API server times are whole seconds: let one pass so that a window
	// ending now excludes what follows.
	before := time.Now()
	until("a second to pass", func() bool { return time.Since(before) > 1100*time.Millisecond })
	before = time.Now()

	cur, err := client.AppsV1().Deployments(ns).Get(ctx, "checkout", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Template.Spec.Containers[0].Image = "shop/checkout:1.9.0"
	cur.Spec.Template.Spec.Containers[0].Env[0].Value = "20"
	cur.Spec.Template.Spec.Containers[0].Env[1].Value = "n3w-" + secretValue
	if _, err := client.AppsV1().Deployments(ns).Update(ctx, cur, metav1.UpdateOptions{FieldManager: "herald-e2e-deployer"}); err != nil {
		t.Fatal(err)
	}
	cm.Data["app.conf"] = "pool=20-" + configValue
	if _, err := client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret.StringData["password"] = "rotated-" + secretValue
	if _, err := client.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	var r Report
	// Both objects are in a 30 min window from their creation on: wait
	// until their updates were seen, in the window from the update on.
	until("the rollout (revision 2) and both objects' changes", func() bool {
		r = c.Before(key, time.Now(), 30*time.Minute)
		since := c.Before(key, time.Now(), time.Since(before))
		return len(r.Rollouts) == 2 && r.Rollouts[0].Revision == "2" && len(r.Objects) == 2 && len(since.Objects) == 2
	})
	if text := r.String(); !strings.Contains(text, "Created") {
		t.Errorf("a 30 min window does not say the Deployment was created in it:\n%s", text)
	}
	// A window from just before the update: the rollout alone, and how to
	// undo it.
	now := time.Now()
	r = c.Before(key, now, now.Sub(before))
	ro := r.Rollouts[0]
	if ro.By != "herald-e2e-deployer" {
		t.Errorf("who: %q, want the updating client's field manager", ro.By)
	}
	if got, want := ro.Summary.String(), "image shop/checkout:1.8.2 → 1.9.0; env API_TOKEN changed, DB_POOL changed"; got != want {
		t.Errorf("summary\n got %s\nwant %s", got, want)
	}
	text := r.String()
	for _, want := range []string{"(revision 2, by herald-e2e-deployer)", "Undo: kubectl rollout undo deployment/checkout -n default --to-revision=1",
		"ConfigMap app-config changed", "Secret db-creds changed"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text+fmMany(r), secretValue) || strings.Contains(text+fmMany(r), configValue) {
		t.Errorf("report holds a value:\n%s", text)
	}
	if got := c.Referencing(ns, Ref{"Secret", "db-creds"}); len(got) != 1 || got[0] != key {
		t.Errorf("Referencing db-creds: %v", got)
	}

	earlier := c.Before(key, before, time.Second)
	if got := earlier.String(); !strings.HasPrefix(got, "No change") {
		t.Errorf("a window ending before the changes: %s", got)
	}
}

// fmMany prints a report's every field, for the absence of values.
func fmMany(r Report) string {
	var b strings.Builder
	for _, ro := range r.Rollouts {
		b.WriteString(ro.Summary.String() + ro.ChangeCause + strings.Join(ro.Tools, ","))
	}
	return b.String()
}

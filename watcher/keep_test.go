package watcher

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/testenv"
)

// hostileDeployment carries size bytes of annotations, half on the
// Deployment and half on its pod template, beside herald's own.
func hostileDeployment(name string, size int) *appsv1.Deployment {
	pad := func(prefix string) map[string]string {
		m := map[string]string{}
		for i := 0; i < size/2; i += 50 << 10 {
			m[fmt.Sprintf("%s/pad-%d", prefix, i)] = strings.Repeat("a", min(50<<10, size/2-i))
		}
		return m
	}
	meta := pad("evil.io")
	meta[SilenceUntilAnnotation] = "2030-01-01T00:00:00Z"
	meta["team.io/owner"] = "shop"
	meta[lastApplied] = `{"secret":"hunter2"}`
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}, Annotations: meta},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}, Annotations: pad("tmpl.io")},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "shop:1", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}}},
			},
		},
		Status: appsv1.DeploymentStatus{Replicas: 2, AvailableReplicas: 1},
	}
}

// TestKeepTransform: without a rule that reads them, a Deployment's
// annotations are cut to herald's own and its pod template goes; a rule
// that names one keeps that one (and the template, for CEL); a rule that
// reads them all keeps them all. Never kubectl's last-applied copy.
func TestKeepTransform(t *testing.T) {
	for _, tc := range []struct {
		name     string
		keep     Keep
		ann      []string
		template bool
	}{
		{"detectors only", Keep{}, []string{SilenceUntilAnnotation}, false},
		{"a rule names one", Keep{Whole: true, Annotations: []string{"team.io/owner"}}, []string{SilenceUntilAnnotation, "team.io/owner"}, true},
		{"a rule reads all", KeepAll, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.keep.transform(hostileDeployment("api", 400<<10))
			if err != nil {
				t.Fatal(err)
			}
			d := out.(*appsv1.Deployment)
			if d.Annotations[lastApplied] != "" {
				t.Error("last-applied kept")
			}
			if tc.ann != nil {
				if len(d.Annotations) != len(tc.ann) {
					t.Errorf("kept %d annotations, want %v", len(d.Annotations), tc.ann)
				}
				for _, a := range tc.ann {
					if d.Annotations[a] == "" {
						t.Errorf("annotation %s dropped", a)
					}
				}
				if len(d.Spec.Template.Annotations) != 0 {
					t.Errorf("pod template keeps %d annotations", len(d.Spec.Template.Annotations))
				}
			} else if len(d.Annotations) < 5 || len(d.Spec.Template.Annotations) < 4 {
				t.Errorf("AllAnnotations dropped some: %d and %d in the template", len(d.Annotations), len(d.Spec.Template.Annotations))
			}
			if got := len(d.Spec.Template.Spec.Containers) > 0; got != tc.template {
				t.Errorf("pod template kept: %v, want %v", got, tc.template)
			}
			if *d.Spec.Replicas != 2 || d.Status.AvailableReplicas != 1 || d.Labels["app"] != "api" {
				t.Errorf("dropped what detectors read: %+v", d)
			}
		})
	}
	// Herald's own are bounded too.
	ann := map[string]string{}
	for i := range 100 {
		ann[fmt.Sprintf("herald.io/x-%03d", i)] = "v"
	}
	ann["herald.io/huge"] = strings.Repeat("v", 10<<10)
	if got := (Keep{}).annotations(ann); len(got) != maxOwnAnnotations || got["herald.io/huge"] != "" {
		t.Errorf("kept %d of herald's own annotations (the huge one: %v)", len(got), got["herald.io/huge"] != "")
	}
}

func TestKeepCovers(t *testing.T) {
	named := func(a ...string) Keep { return Keep{Whole: true, Annotations: a} }
	for _, tc := range []struct {
		k, n Keep
		want bool
	}{
		{Keep{}, Keep{}, true},
		{Keep{}, Keep{Whole: true}, false},
		{named("a", "b"), named("a"), true},
		{named("a"), named("a", "b"), false},
		{named("a"), KeepAll, false},
		{KeepAll, named("z"), true},
	} {
		if got := tc.k.Covers(tc.n); got != tc.want {
			t.Errorf("%+v covers %+v: %v, want %v", tc.k, tc.n, got, tc.want)
		}
	}
}

// TestKeepOnControlPlane runs real informers through the watcher.
func TestKeepOnControlPlane(t *testing.T) {
	env := testenv.New(t)
	client, _ := env.Client()
	typed, err := kube.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	watch := func(t *testing.T, kind string, keep Keep) *Watcher {
		w := New(Clients{Builtin: typed}, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err := w.KeepWhen(func(string) Keep { return keep }); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Informer(kind); err != nil {
			t.Fatal(err)
		}
		w.Start(ctx)
		t.Cleanup(w.Shutdown)
		if err := w.WaitForCacheSync(ctx); err != nil {
			t.Fatal(err)
		}
		return w
	}

	// SecretValues: a Secret informer, keeping all it may (a rule that
	// reads Secrets whole, annotations and all), never caches a value:
	// not in data, not in stringData, not in kubectl's last-applied copy,
	// neither as listed nor as changed later through the watch.
	t.Run("SecretValues", func(t *testing.T) {
		const value = "s3cr3t-value-9f1c"
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", Labels: map[string]string{"app": "db"},
				Annotations: map[string]string{lastApplied: `{"data":{"password":"` + value + `"}}`}},
			StringData: map[string]string{"password": value},
			Type:       corev1.SecretTypeOpaque,
		}
		if _, err := client.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		w := watch(t, "Secret", KeepAll)
		key := Key{Kind: "Secret", Namespace: "default", Name: "db"}
		check := func(when, value string) {
			t.Helper()
			obj, ok, err := w.Get(key)
			if err != nil || !ok {
				t.Fatalf("%s: Get: %v %v", when, ok, err)
			}
			s := obj.(*corev1.Secret)
			if s.Labels["app"] != "db" || s.Type != corev1.SecretTypeOpaque {
				t.Errorf("%s: the cached Secret lost what rules read: %+v", when, s.ObjectMeta)
			}
			dump, _ := json.Marshal(s)
			if len(s.Data) != 0 || len(s.StringData) != 0 || strings.Contains(string(dump)+fmt.Sprintf("%#v", s), value) {
				t.Errorf("%s: the Secret's value is in herald's cache: %s", when, dump)
			}
		}
		check("listed", value)
		const changed = "n3w-s3cr3t-2b7e"
		s, err := client.CoreV1().Secrets("default").Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Data["password"] = []byte(changed)
		s.Labels["rev"] = "2"
		if _, err := client.CoreV1().Secrets("default").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			obj, _, _ := w.Get(key)
			if obj.(*corev1.Secret).Labels["rev"] == "2" || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		check("watched", changed)
	})

	// DeploymentAnnotations: 20 Deployments with 400 KB of annotations
	// each are cached with herald's annotation only and no pod template.
	t.Run("DeploymentAnnotations", func(t *testing.T) {
		for i := range 20 {
			if _, err := client.AppsV1().Deployments("default").Create(ctx, hostileDeployment(fmt.Sprintf("big-%d", i), 400<<10), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		w := watch(t, "Deployment", Keep{})
		objs, err := w.List("Deployment")
		if err != nil || len(objs) != 20 {
			t.Fatalf("listed %d (%v)", len(objs), err)
		}
		total := 0
		for _, o := range objs {
			b, _ := json.Marshal(o)
			total += len(b)
			d := o.(*appsv1.Deployment)
			if d.Annotations[SilenceUntilAnnotation] == "" || len(d.Annotations) != 1 {
				t.Errorf("%s: cached annotations %d, want herald's one", d.Name, len(d.Annotations))
			}
		}
		if total > 20*4<<10 {
			t.Errorf("20 cached Deployments are %d bytes of JSON, want a few KB each", total)
		}
		t.Logf("20 Deployments with 400 KB of annotations each: %d bytes cached (JSON)", total)
	})
}

// stubBuiltin makes informers that are never started.
type stubBuiltin struct{}

func (stubBuiltin) ListerWatcher(schema.GroupVersionResource, string) (cache.ListerWatcher, runtime.Object, error) {
	return &cache.ListWatch{}, &appsv1.Deployment{}, nil
}

func (stubBuiltin) ListerWatcherDecoding(schema.GroupVersionResource, string, func([]byte) (runtime.Object, error)) (cache.ListerWatcher, error) {
	return &cache.ListWatch{}, nil
}

// TestKeepWhenComesFirst: an informer made before KeepWhen would cache
// whole objects; KeepWhen says so instead of leaving it.
func TestKeepWhenComesFirst(t *testing.T) {
	w := New(Clients{Builtin: stubBuiltin{}}, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := w.Informer("Deployment"); err != nil {
		t.Fatal(err)
	}
	if err := w.KeepWhen(func(string) Keep { return Keep{} }); err == nil || !strings.Contains(err.Error(), "Deployment") {
		t.Errorf("KeepWhen after an informer was made: %v", err)
	}
}

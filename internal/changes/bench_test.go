package changes

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Budgets (docs/changes.md): what one update costs the informer's queue,
// and what the record holds per workload. Run:
//
//	go test -run '^$' -bench . -benchmem ./internal/changes

// realistic is template() with what production templates carry besides:
// a sidecar, two dozen env vars, labels and annotations.
func realistic() *corev1.PodTemplateSpec {
	t := template()
	t.Labels = map[string]string{"app": "checkout", "team": "payments", "version": "1.8.2"}
	t.Annotations = map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090"}
	for i := range 24 {
		app(t).Env = append(app(t).Env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%02d", i), Value: fmt.Sprintf("value-%d", i)})
	}
	t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: "proxy", Image: "envoyproxy/envoy:v1.30.1",
		Args: []string{"-c", "/etc/envoy/envoy.yaml"}, Env: []corev1.EnvVar{{Name: "ENVOY_UID", Value: "0"}}})
	return t
}

// BenchmarkDiff: two realistic templates, image and an env var apart,
// digested and diffed (what a rollout costs, once per new generation).
func BenchmarkDiff(b *testing.B) {
	old, new := realistic(), realistic()
	app(new).Image = "shop/checkout:1.9.0"
	app(new).Env[0].Value = "20"
	for b.Loop() {
		_ = Diff(old, new)
	}
}

// BenchmarkObserveRollout: one Deployment update that changes the
// template, through observe (managed fields read, digest, diff, record).
func BenchmarkObserveRollout(b *testing.B) {
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	c := newTestChanges(clk, Options{})
	ds := [2]*appsv1.Deployment{withTemplate(deployment(1, "1", "argocd", clk.t), realistic()), withTemplate(deployment(2, "1", "argocd", clk.t), realistic())}
	app(&ds[1].Spec.Template).Image = "shop/checkout:1.9.0"
	c.observe(ds[0])
	i := int64(2)
	for b.Loop() {
		d := ds[i%2]
		d.Generation = i
		c.observe(d)
		i++
	}
}

// BenchmarkObserveStatus: an update that leaves the generation alone
// (status, the controller's revision annotation: most updates).
func BenchmarkObserveStatus(b *testing.B) {
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	c := newTestChanges(clk, Options{})
	d := withTemplate(deployment(1, "1", "argocd", clk.t), realistic())
	c.observe(d)
	for b.Loop() {
		c.observe(d)
	}
}

func withTemplate(d *appsv1.Deployment, t *corev1.PodTemplateSpec) *appsv1.Deployment {
	d.Spec.Template = *t
	return d
}

// BenchmarkRecordMemory: the heap the record holds for 1,000 workloads
// with realistic templates and 5 rollouts each (bytes/workload).
func BenchmarkRecordMemory(b *testing.B) {
	const workloads, revisions = 1000, 5
	// The objects are made and encoded first, and each is observed as
	// decoded afresh (as from the API server), so that the heap counts
	// the strings the record keeps of them, and not the objects.
	objs := make([][][]byte, workloads)
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	for i := range objs {
		for r := range revisions {
			d := withTemplate(deployment(int64(r+1), fmt.Sprint(r+1), "argocd", clk.t), realistic())
			d.Name, d.UID = fmt.Sprintf("w%04d", i), types.UID(fmt.Sprintf("u%04d", i))
			app(&d.Spec.Template).Image = fmt.Sprintf("shop/checkout:1.%d.0", r)
			app(&d.Spec.Template).Env[r].Value = "changed"
			raw, err := d.Marshal()
			if err != nil {
				b.Fatal(err)
			}
			objs[i] = append(objs[i], raw)
		}
	}
	var perWorkload float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := newTestChanges(clk, Options{})
		for _, revs := range objs {
			for _, raw := range revs {
				var d appsv1.Deployment
				if err := d.Unmarshal(raw); err != nil {
					b.Fatal(err)
				}
				c.observe(&d)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perWorkload = float64(after.HeapAlloc-before.HeapAlloc) / workloads
		runtime.KeepAlive(c)
	}
	b.ReportMetric(perWorkload, "heap-B/workload")
}

// BenchmarkObjectMemory: the heap for 10,000 ConfigMaps and Secrets: the
// record's entry and what the metadata informer's cache keeps after the
// transform (bytes/object).
func BenchmarkObjectMemory(b *testing.B) {
	const objects = 10000
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	raws := make([][]byte, objects)
	for i := range raws {
		m := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("config-%05d", i), Namespace: "shop",
			UID: types.UID(fmt.Sprintf("8c5f7a0e-0000-4000-8000-%012d", i)), ResourceVersion: fmt.Sprint(100000 + i),
			Labels: map[string]string{"app": "checkout"}, CreationTimestamp: metav1.NewTime(clk.t)}}
		raw, err := m.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		raws[i] = raw
	}
	var perObject float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := newTestChanges(clk, Options{})
		cached := make([]any, 0, objects)
		for _, raw := range raws {
			var m metav1.PartialObjectMetadata
			if err := m.Unmarshal(raw); err != nil {
				b.Fatal(err)
			}
			c.observeObject("ConfigMap", &m)
			cached = append(cached, strip(&m))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perObject = float64(after.HeapAlloc-before.HeapAlloc) / objects
		runtime.KeepAlive(c)
		runtime.KeepAlive(cached)
	}
	b.ReportMetric(perObject, "heap-B/object")
}

package silence

import (
	"context"
	"io"
	"iter"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/watcher"
)

// noIncidents is an empty set of open incidents.
var noIncidents incident.Open = emptyOpen{}

type emptyOpen struct{}

func (emptyOpen) All() iter.Seq[*incident.Incident] { return func(func(*incident.Incident) bool) {} }
func (emptyOpen) WithReason(string) iter.Seq[*incident.Incident] {
	return func(func(*incident.Incident) bool) {}
}

// chartCRDs are the files the chart installs.
var chartCRDs = []string{"../../charts/herald/crds/silences.herald.io.yaml", "../../charts/herald/crds/clustersilences.herald.io.yaml"}

// TestOnControlPlane runs the Silence and ClusterSilence CRDs from the
// chart's crds/ on a real API server, one control plane for the package.
func TestOnControlPlane(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	for _, file := range chartCRDs {
		if err := env.InstallCRDs(ctx, file); err != nil {
			t.Fatal(err)
		}
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	client, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"shop", "other", "herald", "tenant-a", "tenant-b"} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("APIServerRejectsBadSilences", func(t *testing.T) { apiServerRejectsBadSilences(t, dyn) })
	t.Run("Muter", func(t *testing.T) { muterOnControlPlane(t, env, dyn, client) })
	t.Run("AnnotationCapped", func(t *testing.T) { annotationCappedOnControlPlane(t, env, dyn, client) })
	t.Run("AnnotatedNodeDoesNotInhibit", func(t *testing.T) { annotatedNodeOnControlPlane(t, env, dyn, client) })
	t.Run("NoTenantMutesAnother", func(t *testing.T) { noTenantMutesAnother(t, env, dyn, client) })
}

// startMuter is a Muter reading silences, cluster silences, pods, nodes,
// namespaces and Deployments (and observing their annotations) through
// real informers, synced.
func startMuter(t *testing.T, ctx context.Context, env *testenv.Env, dyn dynamic.Interface) *Muter {
	t.Helper()
	typed, err := kube.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := watcher.New(watcher.Clients{Builtin: typed, Dynamic: dyn, Resolve: typed.ResourceFor}, 0, logger)
	w.CompactWhen(func(string) bool { return true })
	m := NewMuter("herald", logger)
	for _, kind := range []string{"Pod", "Namespace", "Deployment", "Node"} {
		inf, err := w.Informer(kind)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.ObserveAnnotations(inf); err != nil {
			t.Fatal(err)
		}
	}
	inf, err := w.Informer(Kind)
	if err != nil {
		t.Fatal(err)
	}
	clusterInf, err := w.Informer(ClusterKind)
	if err != nil {
		t.Fatal(err)
	}
	synced, err := m.Watch(w, inf, clusterInf)
	if err != nil {
		t.Fatal(err)
	}
	w.WaitAlsoFor(synced)
	w.Start(ctx)
	t.Cleanup(w.Shutdown)
	if err := w.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	return m
}

// mutedBy waits until m says inc is muted by want ("" not muted) and
// returns the mute.
func mutedBy(t *testing.T, m *Muter, inc *incident.Incident, open incident.Open, want string) incident.Mute {
	t.Helper()
	var got incident.Mute
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		got, _ = m.Mute(inc, open, time.Now())
		return got.By == want, nil
	})
	if err != nil {
		t.Fatalf("%s/%s: muted by %q, want %q", inc.Object.Namespace, inc.Object.Name, got.By, want)
	}
	return got
}

func apiServerRejectsBadSilences(t *testing.T, dyn dynamic.Interface) {
	ends := "2026-11-23T12:00:00Z"
	cases := []struct {
		name string
		spec map[string]any
		want string // in the API server's error; "" accepted
	}{
		{"valid", map[string]any{"matchers": map[string]any{"workload": "api"}, "endsAt": ends}, ""},
		{"valid with a start", map[string]any{"matchers": map[string]any{"rule": "pod-crashloop"}, "startsAt": "2026-11-23T10:00:00Z", "endsAt": ends}, ""},
		{"missing endsAt", map[string]any{"matchers": map[string]any{"workload": "api"}}, `spec.endsAt: Required value`},
		{"endsAt before startsAt", map[string]any{"matchers": map[string]any{"workload": "api"}, "startsAt": "2026-11-23T13:00:00Z", "endsAt": ends}, "endsAt must be after startsAt"},
		{"endsAt equal to startsAt", map[string]any{"matchers": map[string]any{"workload": "api"}, "startsAt": ends, "endsAt": ends}, "endsAt must be after startsAt"},
		{"longer than 30 days", map[string]any{"matchers": map[string]any{"workload": "api"}, "startsAt": "2026-11-01T00:00:00Z", "endsAt": "2026-12-02T00:00:00Z"}, "at most 30 days"},
		{"empty matchers", map[string]any{"matchers": map[string]any{}, "endsAt": ends}, "matchers must name at least one of"},
		{"missing matchers", map[string]any{"endsAt": ends}, "spec.matchers: Required value"},
		{"an empty matcher", map[string]any{"matchers": map[string]any{"workload": ""}, "endsAt": ends}, "spec.matchers.workload"},
		{"not a time", map[string]any{"matchers": map[string]any{"workload": "api"}, "endsAt": "tomorrow"}, "spec.endsAt"},
		{"an unknown matcher", map[string]any{"matchers": map[string]any{"team": "payments"}, "endsAt": ends}, `unknown field "spec.matchers.team"`},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj := silenceObject("shop", "case-"+string(rune('a'+i)), c.spec)
			unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
			_, err := dyn.Resource(Resource).Namespace("shop").Create(context.Background(), obj, metav1.CreateOptions{FieldValidation: "Strict"})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("rejected a valid silence: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("accepted; want an error saying %q", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error %q does not say %q", err, c.want)
			}
			if err != nil {
				t.Logf("rejected: %v", err)
			}
		})
	}
}

// muterOnControlPlane: silences and annotations read through real
// informers decide what is muted, and a Silence in one namespace never
// mutes another, herald's own included: a ClusterSilence does.
func muterOnControlPlane(t *testing.T, env *testenv.Env, dyn dynamic.Interface, client kubernetes.Interface) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := startMuter(t, ctx, env, dyn)

	now := time.Now()
	inShop := func(pod string) *incident.Incident {
		return &incident.Incident{Rule: "pod-crashloop", Reason: "CrashLoopBackOff", Severity: "critical",
			Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: pod}, Members: []string{"Pod/shop/" + pod}}
	}
	create := func(ns, name string, matchers map[string]any, ends time.Time) {
		t.Helper()
		obj := silenceObject(ns, name, map[string]any{"matchers": matchers, "endsAt": ends.UTC().Format(time.RFC3339)})
		unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
		if _, err := dyn.Resource(Resource).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name string, annotations map[string]string) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Annotations: annotations, Labels: map[string]string{"app": "api"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "shop:1"}}}}
		if _, err := client.CoreV1().Pods("shop").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	muted := func(inc *incident.Incident, want string) {
		t.Helper()
		mutedBy(t, m, inc, noIncidents, want)
	}
	pod("api-0", nil)
	pod("api-1", map[string]string{Annotation: now.Add(time.Hour).UTC().Format(time.RFC3339)})
	pod("api-2", map[string]string{Annotation: "next tuesday"})
	muted(inShop("api-0"), "")
	muted(inShop("api-1"), "annotation herald.io/silence-until on Pod/shop/api-1")
	muted(inShop("api-2"), "") // unreadable: logged once, ignored

	// On the workload: a Deployment's annotation mutes its pods.
	labels := map[string]string{"app": "web"}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop",
		Annotations: map[string]string{Annotation: now.Add(time.Hour).UTC().Format(time.RFC3339)}},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:1"}}}}}}
	if _, err := client.AppsV1().Deployments("shop").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	webPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f-0", Namespace: "shop", Labels: map[string]string{"app": "web", "pod-template-hash": "5d8f"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f", UID: "rs-web", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:1"}}}}
	if _, err := client.CoreV1().Pods("shop").Create(ctx, webPod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	muted(inShop("web-5d8f-0"), "annotation herald.io/silence-until on Deployment/shop/web")

	create("other", "not-yours", map[string]any{"name": "api-*"}, now.Add(time.Hour))
	create("shop", "expired", map[string]any{"name": "api-*"}, now.Add(-time.Minute))
	knows(t, m, "silence other/not-yours", "silence shop/expired")
	if got, ok := m.Mute(inShop("api-0"), noIncidents, time.Now()); ok {
		t.Fatalf("muted by %q: a silence in namespace other (or an expired one) must not mute shop", got.By)
	}
	// herald's own namespace is no exception: a Silence there naming
	// shop mutes nothing (it used to mute every namespace).
	create("herald", "was-cluster-wide", map[string]any{"namespace": "shop", "name": "api-0"}, now.Add(2*time.Hour))
	create("herald", "everywhere", map[string]any{"name": "api-*"}, now.Add(2*time.Hour))
	knows(t, m, "silence herald/was-cluster-wide", "silence herald/everywhere")
	if got, ok := m.Mute(inShop("api-0"), noIncidents, time.Now()); ok {
		t.Fatalf("muted by %q: a Silence in herald's namespace must mute herald's namespace only", got.By)
	}
	createCluster(t, dyn, "cluster-wide", map[string]any{"namespace": "shop", "name": "api-0"}, now.Add(2*time.Hour))
	muted(inShop("api-0"), "clustersilence cluster-wide")
	create("shop", "longer", map[string]any{"labelSelector": map[string]any{"matchLabels": map[string]any{"app": "api"}}}, now.Add(3*time.Hour))
	muted(inShop("api-0"), "silence shop/longer") // the one that ends last
	got, _ := m.Mute(inShop("api-0"), noIncidents, time.Now())
	if got.Until.Unix() != now.Add(3*time.Hour).Unix() {
		t.Errorf("muted until %s, want the longer silence's end", got.Until)
	}
	if err := dyn.Resource(Resource).Namespace("shop").Delete(ctx, "longer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	muted(inShop("api-0"), "clustersilence cluster-wide")

	if _, err := client.CoreV1().Namespaces().Patch(ctx, "other", "application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"`+Annotation+`":"`+now.Add(time.Hour).UTC().Format(time.RFC3339)+`"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	inOther := &incident.Incident{Rule: "pod-crashloop", Object: rules.ObjectRef{Kind: "Pod", Namespace: "other", Name: "x"}}
	muted(inOther, "annotation herald.io/silence-until on Namespace/other")
}

// createCluster creates a ClusterSilence as the client dyn.
func createCluster(t *testing.T, dyn dynamic.Interface, name string, matchers map[string]any, ends time.Time) {
	t.Helper()
	obj := clusterSilenceObject(name, map[string]any{"matchers": matchers, "endsAt": ends.UTC().Format(time.RFC3339)})
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	if _, err := dyn.Resource(ClusterResource).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// knows waits until m holds the silences refs (as Silence.Ref says them).
func knows(t *testing.T, m *Muter, refs ...string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		held := map[string]bool{}
		for _, s := range m.Silences() {
			held[s.Ref()] = true
		}
		for _, r := range refs {
			if !held[r] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the muter never listed %v: %v", refs, m.Silences())
	}
}

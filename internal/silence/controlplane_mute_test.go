package silence

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/internal/testenv"
)

// crashing is a crash-loop finding about a pod.
func crashing(ns, pod string) rules.Finding {
	return rules.Finding{Rule: "pod-crashloop", Reason: "CrashLoopBackOff", Severity: "critical", Title: pod + " is crash-looping",
		Object: rules.ObjectRef{Kind: "Pod", Namespace: ns, Name: pod, UID: "uid-" + ns + "-" + pod}}
}

// annotate sets the silence-until annotation on an object (merge patch).
func annotate(t *testing.T, client kubernetes.Interface, kind, ns, name string, until time.Time) {
	t.Helper()
	patch := []byte(`{"metadata":{"annotations":{"` + Annotation + `":"` + until.UTC().Format(time.RFC3339) + `"}}}`)
	var err error
	switch kind {
	case "Pod":
		_, err = client.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
	case "Node":
		_, err = client.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// released calls ReleaseMuted until it makes notifications (as the
// leader's pacer does every 0.5 s) and returns them.
func released(t *testing.T, tr *incident.Tracker) []incident.Notification {
	t.Helper()
	var notes []incident.Notification
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		notes = append(notes, tr.ReleaseMuted(time.Now())...)
		return len(notes) > 0, nil
	})
	if err != nil {
		t.Fatal("no notification after the annotation changed")
	}
	return notes
}

func snapshotOf(tr *incident.Tracker, object string) incident.Incident {
	incs, _ := tr.Snapshot()
	i := slices.IndexFunc(incs, func(inc incident.Incident) bool {
		return inc.Object.Kind+"/"+inc.Object.Namespace+"/"+inc.Object.Name == object
	})
	if i < 0 {
		return incident.Incident{}
	}
	return incs[i]
}

// annotationCappedOnControlPlane: a herald.io/silence-until annotation 10
// years out mutes for 30 days (silences.maxDuration) from when herald
// saw it, and the incident's mute and its silenced notification say so:
// which annotation, on which object, the time it asks for, the cap.
func annotationCappedOnControlPlane(t *testing.T, env *testenv.Env, dyn dynamic.Interface, client kubernetes.Interface) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, name := range []string{"cap-0", "cap-1"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant-a"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
		if _, err := client.CoreV1().Pods("tenant-a").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	m := startMuter(t, ctx, env, dyn)
	tr := incident.NewTracker(incident.Options{Now: time.Now, Muter: m, MuteVersion: m.Version})
	tr.ReleaseMuted(time.Now()) // the version as it is
	if notes, _ := tr.Reconcile("Pod/tenant-a/cap-0", []rules.Finding{crashing("tenant-a", "cap-0")}); len(notes) != 1 || notes[0].Transition != incident.Firing {
		t.Fatalf("cap-0 before any annotation: %v, want its firing", notes)
	}

	decade := time.Now().AddDate(10, 0, 0).UTC().Truncate(time.Second)
	before := time.Now()
	annotate(t, client, "Pod", "tenant-a", "cap-0", decade)
	notes := released(t, tr)
	after := time.Now()
	wantBy := "annotation herald.io/silence-until on Pod/tenant-a/cap-0; it asks until " + decade.Format(time.RFC3339) + ", capped at 30 days"
	if len(notes) != 1 || notes[0].Transition != incident.Silenced || !strings.HasSuffix(notes[0].Change, "("+wantBy+")") {
		t.Fatalf("after annotating cap-0 10 years out: %v; want one silenced notification saying %q", notes, wantBy)
	}
	t.Logf("the silenced notification says: %s", notes[0].Change)
	inc := snapshotOf(tr, "Pod/tenant-a/cap-0")
	if inc.MutedBy != wantBy || inc.MutedUntil.Before(before.Add(MaxDuration).Truncate(time.Second)) || inc.MutedUntil.After(after.Add(MaxDuration)) {
		t.Errorf("cap-0 muted by %q until %s; want %q until 30 days from now (%s)", inc.MutedBy, inc.MutedUntil, wantBy, before.Add(MaxDuration))
	}

	// Annotated before its first notification: never announced, muted
	// until the cap, as the ledger (and herald incidents) show it.
	annotate(t, client, "Pod", "tenant-a", "cap-1", decade)
	mutedBy(t, m, &incident.Incident{Object: rules.ObjectRef{Kind: "Pod", Namespace: "tenant-a", Name: "cap-1"}}, noIncidents,
		"annotation herald.io/silence-until on Pod/tenant-a/cap-1; it asks until "+decade.Format(time.RFC3339)+", capped at 30 days")
	if notes, _ := tr.Reconcile("Pod/tenant-a/cap-1", []rules.Finding{crashing("tenant-a", "cap-1")}); len(notes) != 0 {
		t.Errorf("cap-1 annotated: %v, want nothing sent", notes)
	}
	if inc := snapshotOf(tr, "Pod/tenant-a/cap-1"); inc.MutedUntil.After(time.Now().Add(MaxDuration)) || inc.MutedUntil.Before(before.Add(MaxDuration).Truncate(time.Second)) {
		t.Errorf("cap-1 muted until %s; want 30 days from now, not %s", inc.MutedUntil, decade)
	}
}

// annotatedNodeOnControlPlane: a NotReady node's incident mutes the
// incidents of the pods on it, until the node's own incident is muted
// by an annotation on the Node (which its kubelet may write): then the
// node's incident says it is silenced and the pods' firings go out.
func annotatedNodeOnControlPlane(t *testing.T, env *testenv.Env, dyn dynamic.Interface, client kubernetes.Interface) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-down"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-n-down", Namespace: "tenant-b"},
		Spec: corev1.PodSpec{NodeName: "n-down", Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
	if _, err := client.CoreV1().Pods("tenant-b").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m := startMuter(t, ctx, env, dyn)
	m.Configure(&config.Config{}) // the built-in inhibitions
	tr := incident.NewTracker(incident.Options{Now: time.Now, Muter: m, MuteVersion: m.Version})
	tr.ReleaseMuted(time.Now())
	down := rules.Finding{Rule: "node-not-ready", Reason: "NodeNotReady", Severity: "critical", Title: "n-down is NotReady",
		Object: rules.ObjectRef{Kind: "Node", Name: "n-down", UID: "uid-n-down"}}
	if notes, _ := tr.Reconcile("Node/n-down", []rules.Finding{down}); len(notes) != 1 || notes[0].Transition != incident.Firing {
		t.Fatalf("the node: %v, want its firing", notes)
	}
	if notes, _ := tr.Reconcile("Pod/tenant-b/on-n-down", []rules.Finding{crashing("tenant-b", "on-n-down")}); len(notes) != 0 {
		t.Fatalf("a pod on the NotReady node: %v, want it inhibited", notes)
	}
	if inc := snapshotOf(tr, "Pod/tenant-b/on-n-down"); inc.MutedBy != "inhibited by NodeNotReady on Node n-down" {
		t.Fatalf("the pod's incident is muted by %q", inc.MutedBy)
	}

	annotate(t, client, "Node", "", "n-down", time.Now().AddDate(1, 0, 0))
	notes := released(t, tr)
	if len(notes) == 1 { // the two may come a tick apart
		notes = append(notes, released(t, tr)...)
	}
	var got []string
	for _, n := range notes {
		got = append(got, string(n.Transition)+" "+n.Incident.Object.Kind+"/"+n.Incident.Object.Name)
	}
	slices.Sort(got)
	if want := []string{"firing Pod/on-n-down", "silenced Node/n-down"}; !slices.Equal(got, want) {
		t.Fatalf("after the node annotated itself: %v, want %v", got, want)
	}
	if inc := snapshotOf(tr, "Pod/tenant-b/on-n-down"); inc.MutedBy != "" {
		t.Errorf("the pod's incident is still muted by %q", inc.MutedBy)
	}
}

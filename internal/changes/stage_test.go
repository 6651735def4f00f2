package changes

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
)

// sent keeps what the stage hands on.
type sent struct {
	mu    sync.Mutex
	notes []incident.Notification
}

func (s *sent) Dispatch(_ context.Context, n incident.Notification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, n)
	return nil
}

func (s *sent) last() incident.Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notes[len(s.notes)-1]
}

func note(id string, tr incident.Transition, obj rules.ObjectRef, first time.Time) incident.Notification {
	return incident.Notification{Transition: tr, Seq: 1, Time: first,
		Incident: incident.Incident{ID: id, Rule: "pod-crashloop", Object: obj, FirstSeen: first}}
}

// TestStage: a pod's incident says what changed in its workload before it
// began, found through the pod's owner; a later notification whose pod is
// gone from the cache says the same; a kind herald does not record, and a
// digest, get no section; the section is made without the clock moving
// past the incident's start (an update says what the firing said).
func TestStage(t *testing.T) {
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	c := newTestChanges(clk, Options{})
	c.observe(deployment(1, "6", "helm", clk.t.Add(-time.Hour)))
	d := deployment(2, "6", "argocd", clk.add(time.Minute))
	d.Spec.Template.Spec.Containers[0].Image = "shop/checkout:1.9.0"
	c.observe(d)
	d = d.DeepCopy()
	d.Annotations[revisionAnnotation] = "7"
	c.observe(d)

	pods := map[string]bool{"checkout-7d9f-abcde": true}
	var podsMu sync.Mutex
	next := &sent{}
	s := NewStage(StageOptions{Record: c, Next: next, Window: 30 * time.Minute,
		PodWorkload: func(ns, pod string) (string, string, bool) {
			podsMu.Lock()
			defer podsMu.Unlock()
			if ns == "shop" && pods[pod] {
				return "Deployment", "checkout", true
			}
			return "", "", false
		}})
	pod := rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "checkout-7d9f-abcde"}
	crashed := clk.add(4 * time.Minute)
	if err := s.Dispatch(context.Background(), note("i1", incident.Firing, pod, crashed)); err != nil {
		t.Fatal(err)
	}
	got := next.last().Changes
	if got == nil || len(got.Rollouts) != 1 {
		t.Fatalf("firing: changes %+v, want one rollout", got)
	}
	ro := got.Rollouts[0]
	if ro.Revision != "7" || ro.By != "argocd" || !ro.Known || len(ro.Items) != 1 || ro.Items[0] != "image shop/checkout:1.8.2 → 1.9.0" {
		t.Errorf("rollout %+v", ro)
	}
	if got.Undo != "kubectl rollout undo deployment/checkout -n shop --to-revision=6" {
		t.Errorf("undo %q", got.Undo)
	}
	if got.Workload != "Deployment/checkout" || len(got.Lines) != 2 || !strings.HasPrefix(got.Lines[0], "Rolled out 4 min before the failure (revision 7, by argocd): image shop/checkout:1.8.2 → 1.9.0") ||
		!strings.HasPrefix(got.Lines[1], "Managed by Argo CD") {
		t.Errorf("section %+v", got)
	}

	// The pod is deleted; its incident's update and resolution still
	// say what the firing said, however much later they come.
	podsMu.Lock()
	delete(pods, "checkout-7d9f-abcde")
	podsMu.Unlock()
	clk.add(2 * time.Hour)
	for _, tr := range []incident.Transition{incident.Updated, incident.Resolved} {
		s.Dispatch(context.Background(), note("i1", tr, pod, crashed))
		if c := next.last().Changes; c == nil || len(c.Rollouts) != 1 || c.Lines[0] != got.Lines[0] {
			t.Errorf("%s: changes %+v, want the firing's", tr, c)
		}
	}
	// Resolved forgets it.
	s.Dispatch(context.Background(), note("i1", incident.Updated, pod, crashed))
	if c := next.last().Changes; c != nil {
		t.Errorf("after the resolution: %+v", c)
	}

	for _, n := range []incident.Notification{
		note("i2", incident.Firing, rules.ObjectRef{Kind: "Node", Name: "node-1"}, crashed),
		note("i3", incident.Firing, rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "bare"}, crashed),
		{Transition: incident.Digest, Digest: []incident.Notification{note("i1", incident.Firing, pod, crashed)}},
	} {
		s.Dispatch(context.Background(), n)
		if c := next.last().Changes; c != nil {
			t.Errorf("%s %s: a section %+v, want none", n.Transition, n.Incident.Object.Kind, c)
		}
	}

	// A workload incident (grouped) names its workload itself; past the
	// window, it says nothing changed.
	later := clk.add(time.Hour)
	s.Dispatch(context.Background(), note("i4", incident.Firing, rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "checkout"}, later))
	if c := next.last().Changes; c == nil || !c.Empty() || len(c.Lines) != 1 || c.Lines[0] != "No change to this workload in the last 30 min before the failure (last rollout 3 h 4 min before the failure, revision 7, by argocd)" {
		t.Errorf("no change: %+v", c)
	}
}

// TestStageCorrelates: one ConfigMap read by two workloads changes, both
// begin failing; the second's alert names the change and the first.
func TestStageCorrelates(t *testing.T) {
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	c := newTestChanges(clk, Options{})
	for _, name := range []string{"checkout", "cart", "search"} {
		d := deployment(1, "1", "helm", clk.t.Add(-time.Hour))
		d.Name, d.UID = name, types.UID("u-"+name)
		if name == "search" { // reads another ConfigMap
			d.Spec.Template.Spec.Volumes[0].ConfigMap.Name = "search-config"
		}
		c.observe(d)
	}
	obj := func(name, rv string) {
		c.observeObject("ConfigMap", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop",
			UID: types.UID("x-" + name), ResourceVersion: rv, CreationTimestamp: metav1.NewTime(clk.t.Add(-time.Hour))}})
	}
	obj("app-config", "1")
	obj("search-config", "1")
	clk.add(time.Minute)
	obj("app-config", "2")

	next := &sent{}
	s := NewStage(StageOptions{Record: c, Next: next, Window: 30 * time.Minute})
	ref := func(name string) rules.ObjectRef {
		return rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: name}
	}
	s.Dispatch(context.Background(), note("a", incident.Firing, ref("search"), clk.add(10*time.Second)))
	s.Dispatch(context.Background(), note("b", incident.Firing, ref("checkout"), clk.add(10*time.Second)))
	first := next.last().Changes
	if len(first.Objects) != 1 || first.Objects[0].Name != "app-config" || len(first.Objects[0].AlsoFailing) != 0 {
		t.Fatalf("first alert: %+v", first)
	}
	s.Dispatch(context.Background(), note("c", incident.Firing, ref("cart"), clk.add(10*time.Second)))
	second := next.last().Changes
	if len(second.Objects) != 1 || strings.Join(second.Objects[0].AlsoFailing, ",") != "Deployment/checkout" {
		t.Fatalf("second alert: %+v", second)
	}
	if want := "ConfigMap app-config changed 30 s before the failure; Deployment/checkout also reads it and has been failing since"; second.Lines[0] != want {
		t.Errorf("line\n got %s\nwant %s", second.Lines[0], want)
	}
}

// TestStageKeepsTheFiringsSection: rollouts made during the incident (a
// fix forward, rollout restarts) do not rewrite what its later
// notifications say came before it.
func TestStageKeepsTheFiringsSection(t *testing.T) {
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	c := newTestChanges(clk, Options{PerWorkload: 3})
	c.observe(deployment(1, "6", "helm", clk.t.Add(-time.Hour)))
	d := deployment(2, "6", "ci", clk.add(time.Minute))
	d.Spec.Template.Spec.Containers[0].Image = "shop/checkout:1.9.0"
	c.observe(d)
	next := &sent{}
	s := NewStage(StageOptions{Record: c, Next: next, Window: 30 * time.Minute})
	obj := rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "checkout"}
	crashed := clk.add(time.Minute)
	s.Dispatch(context.Background(), note("i", incident.Firing, obj, crashed))
	first := next.last().Changes
	for i := range 4 { // four restarts at 3 a.m.: the record keeps 3
		d = d.DeepCopy()
		d.Generation++
		d.Spec.Template.Annotations = map[string]string{restartedAtAnnotation: fmt.Sprint(i)}
		c.observe(d)
		clk.add(time.Minute)
	}
	s.Dispatch(context.Background(), note("i", incident.Updated, obj, crashed))
	if got := next.last().Changes; got != first || got.Undo == "" {
		t.Errorf("the update's section %+v, want the firing's %+v", got, first)
	}
}

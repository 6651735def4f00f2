package watcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/testenv"
)

func crashingPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels:      map[string]string{"app": "shop", "pod-template-hash": "5d8f"},
			Annotations: map[string]string{"note": "not cached compact"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "shop-5d8f",
				UID: "4a2c5e0e-0000-4000-8000-000000000001", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: "shop:1",
			Env:       []corev1.EnvVar{{Name: "A", Value: "not cached compact"}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}}}},
	}
}

// TestCompactPodCacheOnControlPlane: with compaction on, the pod cache
// holds CompactPods that share repeated strings, and Get hands workers a
// corev1.Pod with the status the detectors read; with it off, whole pods.
func TestCompactPodCacheOnControlPlane(t *testing.T) {
	env := testenv.New(t)
	client, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	typed, err := kube.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 2 {
		pod, err := client.CoreV1().Pods("default").Create(ctx, crashingPod(fmt.Sprintf("shop-%d", i)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", Image: "shop:1", RestartCount: 7, ContainerID: "containerd://abc",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: "OOMKilled", ContainerID: "containerd://abc"}},
		}}}
		if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	for _, compact := range []bool{true, false} {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) {
			w := New(Clients{Builtin: typed}, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
			w.CompactWhen(func(string) bool { return compact })
			inf, err := w.Informer("Pod")
			if err != nil {
				t.Fatal(err)
			}
			key := Key{Kind: "Pod", Namespace: "default", Name: "shop-0"}
			if _, _, err := w.Get(key); !errors.Is(err, ErrNotSynced) {
				t.Errorf("Get before sync: %v, want ErrNotSynced", err)
			}
			if err := w.IndexPodsByWorkload(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			w.Start(ctx)
			defer w.Shutdown()
			if err := w.WaitForCacheSync(ctx); err != nil {
				t.Fatal(err)
			}
			if w.Compacted("Pod") != compact {
				t.Errorf("Compacted = %v", w.Compacted("Pod"))
			}
			items := inf.GetStore().List()
			for _, it := range items {
				if _, isCompact := it.(*CompactPod); isCompact != compact {
					t.Errorf("cached %T with compaction %v", it, compact)
				}
			}
			if compact {
				a, b := items[0].(*CompactPod), items[1].(*CompactPod)
				if unsafe.StringData(a.Labels["app"]) != unsafe.StringData(b.Labels["app"]) ||
					unsafe.StringData(a.OwnerReferences[0].Name) != unsafe.StringData(b.OwnerReferences[0].Name) {
					t.Error("label values and owner names are not shared between cached pods")
				}
				if a.Annotations != nil {
					t.Errorf("compact pod keeps annotations %v", a.Annotations)
				}
			}
			obj, ok, err := w.Get(key)
			if err != nil || !ok {
				t.Fatalf("Get: %v, %v", ok, err)
			}
			pod := obj.(*corev1.Pod)
			cs := pod.Status.ContainerStatuses[0]
			if pod.Name != "shop-0" || pod.UID == "" || cs.RestartCount != 7 || cs.State.Waiting.Reason != "CrashLoopBackOff" ||
				cs.LastTerminationState.Terminated.Reason != "OOMKilled" || pod.Labels["app"] != "shop" {
				t.Errorf("pod from the cache lacks what detectors read: %+v", pod)
			}
			if lim := pod.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]; lim.String() != "256Mi" {
				t.Errorf("memory limit %s, want 256Mi", lim.String())
			}
			if compact && (len(pod.Spec.Containers[0].Env) != 0 || cs.ContainerID != "") {
				t.Errorf("compact cache kept unread fields: env %v, containerID %q", pod.Spec.Containers[0].Env, cs.ContainerID)
			}
			// What needs only names, owners or the node reads them
			// without decoding the whole pod.
			m, ok, err := w.Meta(key)
			if err != nil || !ok || m.GetName() != "shop-0" || m.GetLabels()["app"] != "shop" || len(m.GetOwnerReferences()) != 1 {
				t.Errorf("Meta = %v, %v, %v", m, ok, err)
			}
			if kind, name := Workload(m); kind != "Deployment" || name != "shop" {
				t.Errorf("Workload(Meta) = %s/%s, want Deployment/shop", kind, name)
			}
			if node := w.PodNodeName("default", "shop-0"); node != "node-a" {
				t.Errorf("PodNodeName = %q, want node-a", node)
			}
			if node := w.PodNodeName("default", "no-such-pod"); node != "" {
				t.Errorf("PodNodeName of a pod not cached = %q", node)
			}
			if n := w.CountByWorkload("default", "Deployment", "shop"); n != 2 {
				t.Errorf("workload index counts %d pods, want 2", n)
			}
			keys, err := w.Keys("Pod")
			if err != nil || len(keys) != 2 {
				t.Errorf("Keys = %v, %v", keys, err)
			}
		})
	}
}

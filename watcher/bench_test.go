package watcher

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkCompactPod is the informer transform's cost per pod event
// (compact) and a worker's cost to decode the cached pod (expand).
func BenchmarkCompactPod(b *testing.B) {
	pod := crashingPod("shop-0")
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "shop:1", RestartCount: 7,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}}
	in := newInterner(1024)
	b.Run("compact", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := compactPod(pod, in); err != nil {
				b.Fatal(err)
			}
		}
	})
	c, err := compactPod(pod, in)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("expand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if p, err := c.Pod(); err != nil || p.Status.ContainerStatuses[0].RestartCount != 7 {
				b.Fatal(err)
			}
		}
	})
}

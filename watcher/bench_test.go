package watcher

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// realisticPod is about the size of a Deployment's pod in a real cluster
// (and of internal/bench's): two containers with 15 environment
// variables, probes and volume mounts, volumes, server-side apply's
// managedFields, a kubelet's status.
func realisticPod() *corev1.Pod {
	pod := crashingPod("shop-0")
	var env []corev1.EnvVar
	for i := range 15 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("APP_SETTING_%02d", i), Value: fmt.Sprintf("value-%d-of-a-typical-configuration-entry", i)})
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz"}}, PeriodSeconds: 10}
	mounts := []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}, {Name: "tmp", MountPath: "/tmp"},
		{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	app := &pod.Spec.Containers[0]
	app.Env, app.LivenessProbe, app.ReadinessProbe, app.VolumeMounts = env, probe, probe, mounts
	app.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	proxy := *app.DeepCopy()
	proxy.Name, proxy.Image = "proxy", "mesh/proxy:2.7.1"
	pod.Spec.Containers = append(pod.Spec.Containers, proxy)
	pod.Spec.NodeName, pod.Spec.ServiceAccountName = "node-7", "shop"
	pod.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-config"}}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{` + strings.Repeat(`"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:env":{}}},`, 40) + `}}`)}},
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{` + strings.Repeat(`"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{}}},`, 20) + `}}`)}},
	}
	now := metav1.Now()
	var conds []corev1.PodCondition
	for _, c := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		conds = append(conds, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	status := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: "shop:1", ImageID: "sha256:0123456789abcdef", RestartCount: 7, ContainerID: "containerd://0123456789abcdef",
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s restarting failed container"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: now, FinishedAt: now, ContainerID: "containerd://0123456789abcdef"}}}
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: conds, HostIP: "198.18.0.7", PodIP: "198.19.1.2",
		PodIPs: []corev1.PodIP{{IP: "198.19.1.2"}}, StartTime: &now, QOSClass: corev1.PodQOSBurstable,
		ContainerStatuses: []corev1.ContainerStatus{status("app"), status("proxy")}}
	return pod
}

// BenchmarkCompactPod is the cost per pod event of a cache entry:
// "unmarshal+compact" is what it was (decode the whole corev1.Pod, then
// compact it), "decode" what it is (straight from protobuf), and
// "expand" a worker's cost to decode the cached pod.
func BenchmarkCompactPod(b *testing.B) {
	pod := realisticPod()
	raw, err := pod.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	in := newInterner(1024)
	b.Run("unmarshal+compact", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var p corev1.Pod
			if err := p.Unmarshal(raw); err != nil {
				b.Fatal(err)
			}
			if _, err := compactPod(&p, in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := decodeCompactPod(raw, in); err != nil {
				b.Fatal(err)
			}
		}
	})
	c, err := decodeCompactPod(raw, in)
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

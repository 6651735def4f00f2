package watcher

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
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

// realisticHPA is an autoscaler as a real cluster holds it: a CPU and a
// per-pod metric, the controller's status with both metrics' values and
// its three conditions, server-side apply's managedFields.
func realisticHPA(i int) *autoscalingv2.HorizontalPodAutoscaler {
	now := metav1.Now()
	name := fmt.Sprintf("service-%05d", i)
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fmt.Sprintf("team-%03d", i%300), UID: types.UID(fmt.Sprintf("8c5f7a0e-0000-4000-8000-%012d", i)),
			ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: now, Labels: map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "Helm"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "autoscaling/v2", FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:maxReplicas":{},"f:metrics":{},"f:minReplicas":{},"f:scaleTargetRef":{}}}`)}},
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "autoscaling/v2", FieldsType: "FieldsV1", Subresource: "status",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{},"f:currentMetrics":{},"f:currentReplicas":{},"f:desiredReplicas":{}}}`)}},
			}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](70)}}},
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "http_requests_per_second"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("100"))}}},
			},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 4, DesiredReplicas: 4, LastScaleTime: &now,
			CurrentMetrics: []autoscalingv2.MetricStatus{
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
					Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](55), AverageValue: ptr.To(resource.MustParse("275m"))}}},
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: "http_requests_per_second"},
					Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(resource.MustParse("81"))}}},
			},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
				{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale", Message: "recommended size matches current size", LastTransitionTime: now},
				{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound", Message: "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)", LastTransitionTime: now},
				{Type: autoscalingv2.ScalingLimited, Status: corev1.ConditionFalse, Reason: "DesiredWithinRange", Message: "the desired count is within the acceptable range", LastTransitionTime: now},
			}},
	}
}

// realisticCronJob is a CronJob as a real cluster holds it: a pod
// template of one container with a few variables and a volume, the
// controller's status, managedFields.
// realisticService is a Deployment's ClusterIP Service as Helm charts
// make them: labels, a selector, two ports, managedFields.
func realisticService(i int) *corev1.Service {
	name := fmt.Sprintf("shop-%05d", i)
	labels := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/instance": "shop-prod", "app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "shop-1.9.0"}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID(fmt.Sprintf("0b6c6a8e-1f0e-4c1e-9a4e-%012d", i)), ResourceVersion: fmt.Sprint(100000 + i),
			Labels: labels, Annotations: map[string]string{"meta.helm.sh/release-name": "shop-prod", "meta.helm.sh/release-namespace": "shop"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}},"f:spec":{"f:ports":{},"f:selector":{}}}`)}}}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), ClusterIPs: []string{fmt.Sprintf("10.96.%d.%d", i/250, i%250+1)},
			Selector: map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/instance": "shop-prod"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP},
				{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP}},
			SessionAffinity: corev1.ServiceAffinityNone, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster)},
	}
}

// realisticClaim is a StatefulSet's claim as the PV controller leaves it
// bound: its labels, the provisioner's annotations, the finalizer,
// managedFields, a bound volume.
func realisticClaim(i int) *corev1.PersistentVolumeClaim {
	name := fmt.Sprintf("pgdata-postgres-%d", i)
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID(fmt.Sprintf("2b6c6a8e-1f0e-4c1e-9a4e-%012d", i)), ResourceVersion: fmt.Sprint(300000 + i),
			Labels: map[string]string{"app.kubernetes.io/name": "postgres", "app.kubernetes.io/instance": "shop-db"},
			Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
				"volume.beta.kubernetes.io/storage-provisioner": "ebs.csi.aws.com", "volume.kubernetes.io/storage-provisioner": "ebs.csi.aws.com",
				"volume.kubernetes.io/selected-node": fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", i/250, i%250)},
			Finalizers: []string{"kubernetes.io/pvc-protection"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{}},"f:spec":{"f:volumeName":{}},"f:status":{"f:accessModes":{},"f:capacity":{},"f:phase":{}}}`)}}}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To("gp3"),
			VolumeMode: ptr.To(corev1.PersistentVolumeFilesystem), VolumeName: fmt.Sprintf("pvc-%08d-1f0e-4c1e-9a4e-7d1e2c3b4a59", i),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("20Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("20Gi")}},
	}
}

// realisticEndpointSlice is such a Service's slice, as the controller
// writes it: three pods' endpoints with their node, zone and target,
// two ports, managedFields.
func realisticEndpointSlice(i int) *discoveryv1.EndpointSlice {
	name := fmt.Sprintf("shop-%05d", i)
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-x7k2p", Namespace: "shop", UID: types.UID(fmt.Sprintf("1b6c6a8e-1f0e-4c1e-9a4e-%012d", i)), ResourceVersion: fmt.Sprint(200000 + i),
			Labels:          map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io", "app.kubernetes.io/name": name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: name, UID: "0b6c6a8e", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "discovery.k8s.io/v1", FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:addressType":{},"f:endpoints":{},"f:metadata":{"f:labels":{}},"f:ports":{}}`)}}}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)},
			{Name: ptr.To("metrics"), Port: ptr.To[int32](9090), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for j := range 3 {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.244.%d.%d", j, i%250+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(fmt.Sprintf("node-%d", j)), Zone: ptr.To(fmt.Sprintf("eu-west-1%c", 'a'+j)),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: fmt.Sprintf("%s-7d9f8b6c5-%05d%d", name, i, j), UID: types.UID(fmt.Sprintf("2b6c6a8e-%d-%d", i, j))}})
	}
	return s
}

// jsonObject marshals a custom resource's content.
type jsonObject map[string]any

func (o jsonObject) Marshal() ([]byte, error) { return json.Marshal(map[string]any(o)) }

// realisticCertificate is a cert-manager Certificate as ingress-shim
// makes one for an Ingress: two DNS names, its owner, cert-manager's
// status with three conditions' worth of history kept as one Ready and
// one Issuing, and server-side apply's managedFields.
func realisticCertificate(i int) jsonObject {
	name := fmt.Sprintf("shop-%05d-tls", i)
	return jsonObject{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{
			"name": name, "namespace": "shop", "uid": fmt.Sprintf("0b6c6a8e-1f0e-4c1e-9a4e-%012d", i),
			"resourceVersion": fmt.Sprint(100000 + i), "generation": 1, "creationTimestamp": "2026-08-29T00:10:00Z",
			"labels":          map[string]any{"app.kubernetes.io/name": "shop", "app.kubernetes.io/instance": "shop-prod"},
			"ownerReferences": []any{map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": fmt.Sprintf("shop-%05d", i), "uid": "1b6c6a8e-1f0e-4c1e-9a4e-3d2f1e0c9b8a", "controller": true, "blockOwnerDeletion": true}},
			"managedFields": []any{map[string]any{"manager": "cert-manager-ingress-shim", "operation": "Apply", "apiVersion": "cert-manager.io/v1", "fieldsType": "FieldsV1",
				"fieldsV1": map[string]any{"f:spec": map[string]any{"f:dnsNames": map[string]any{}, "f:issuerRef": map[string]any{"f:kind": map[string]any{}, "f:name": map[string]any{}}, "f:secretName": map[string]any{}}}}},
		},
		"spec": map[string]any{
			"secretName": name, "dnsNames": []any{fmt.Sprintf("shop-%05d.example.com", i), fmt.Sprintf("www.shop-%05d.example.com", i)},
			"issuerRef": map[string]any{"name": "letsencrypt-prod", "kind": "ClusterIssuer", "group": "cert-manager.io"},
			"usages":    []any{"digital signature", "key encipherment"},
		},
		"status": map[string]any{
			"notBefore": "2026-10-28T00:10:00Z", "notAfter": "2027-01-26T00:10:00Z", "renewalTime": "2026-12-27T00:10:00Z", "revision": 2,
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date and has not expired",
				"lastTransitionTime": "2026-10-28T00:11:00Z", "observedGeneration": 1}},
		},
	}
}

func realisticCronJob(i int) *batchv1.CronJob {
	now := metav1.Now()
	name := fmt.Sprintf("report-%05d", i)
	var env []corev1.EnvVar
	for j := range 6 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("REPORT_SETTING_%02d", j), Value: fmt.Sprintf("value-%d-of-a-typical-configuration-entry", j)})
	}
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fmt.Sprintf("team-%03d", i%300), UID: types.UID(fmt.Sprintf("8c5f7a0e-0000-4000-8000-%012d", i)),
			ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: now, Labels: map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "Helm"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "batch/v1", FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:concurrencyPolicy":{},"f:jobTemplate":{"f:spec":{"f:template":{"f:spec":{"f:containers":{}}}}},"f:schedule":{}}}`)}}}},
		Spec: batchv1.CronJobSpec{Schedule: "*/15 * * * *", ConcurrencyPolicy: batchv1.ForbidConcurrent,
			SuccessfulJobsHistoryLimit: ptr.To[int32](3), FailedJobsHistoryLimit: ptr.To[int32](1),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure,
				Containers: []corev1.Container{{Name: "report", Image: "registry.example/team/report:2.4.1", Args: []string{"--since", "15m", "--to", "s3://reports"}, Env: env,
					VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/report"}},
					Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}},
				Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "report-config"}}}}},
			}}}}},
		Status: batchv1.CronJobStatus{LastScheduleTime: &now, LastSuccessfulTime: &now},
	}
}

// BenchmarkCacheMemory: the heap that 10,000 objects of a kind hold in an
// informer's cache, decoded from protobuf as herald's client does and
// kept as a detector's rule keeps them (no CEL, no template: pod
// templates go), in bytes/object.
func BenchmarkCacheMemory(b *testing.B) {
	for _, kind := range []struct {
		name   string
		object func(i int) interface{ Marshal() ([]byte, error) }
		decode func(raw []byte) (any, error)
	}{
		{"HorizontalPodAutoscaler", func(i int) interface{ Marshal() ([]byte, error) } { return realisticHPA(i) },
			func(raw []byte) (any, error) {
				h := &autoscalingv2.HorizontalPodAutoscaler{}
				return h, h.Unmarshal(raw)
			}},
		{"CronJob", func(i int) interface{ Marshal() ([]byte, error) } { return realisticCronJob(i) },
			func(raw []byte) (any, error) { c := &batchv1.CronJob{}; return c, c.Unmarshal(raw) }},
		{"Service", func(i int) interface{ Marshal() ([]byte, error) } { return realisticService(i) },
			func(raw []byte) (any, error) { s := &corev1.Service{}; return s, s.Unmarshal(raw) }},
		{"PersistentVolumeClaim", func(i int) interface{ Marshal() ([]byte, error) } { return realisticClaim(i) },
			func(raw []byte) (any, error) { c := &corev1.PersistentVolumeClaim{}; return c, c.Unmarshal(raw) }},
		{"EndpointSlice", func(i int) interface{ Marshal() ([]byte, error) } { return realisticEndpointSlice(i) },
			func(raw []byte) (any, error) { s := &discoveryv1.EndpointSlice{}; return s, s.Unmarshal(raw) }},
		// A custom resource: JSON into unstructured, as the dynamic
		// informer has it.
		{"Certificate", func(i int) interface{ Marshal() ([]byte, error) } { return realisticCertificate(i) },
			func(raw []byte) (any, error) {
				u := &unstructured.Unstructured{}
				return u, u.UnmarshalJSON(raw)
			}},
	} {
		b.Run(kind.name, func(b *testing.B) { benchCacheMemory(b, kind.object, kind.decode) })
	}
}

func benchCacheMemory(b *testing.B, object func(i int) interface{ Marshal() ([]byte, error) }, decode func(raw []byte) (any, error)) {
	const objects = 10000
	raws := make([][]byte, objects)
	for i := range raws {
		raw, err := object(i).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		raws[i] = raw
	}
	keep := Keep{}
	var perObject float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		for _, raw := range raws {
			obj, err := decode(raw)
			if err != nil {
				b.Fatal(err)
			}
			kept, err := keep.transform(obj)
			if err != nil {
				b.Fatal(err)
			}
			if err := store.Add(kept); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perObject = float64(after.HeapAlloc-before.HeapAlloc) / objects
		runtime.KeepAlive(store)
	}
	b.ReportMetric(perObject, "heap-B/object")
}

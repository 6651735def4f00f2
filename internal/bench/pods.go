package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Namespace holds the benchmark's pods.
const Namespace = "bench"

// podName is the name of the i-th benchmark pod; names sort in creation
// order so a run can add pods to an existing set.
func podName(i int) string { return fmt.Sprintf("app-%06d", i) }

// realisticPod is a pod as a Deployment's ReplicaSet would make it and a
// scheduler would bind it: two containers with ~15 environment variables
// each, probes, resources, volumes, labels, annotations, an owner
// reference, tolerations. Applied server-side, so managedFields are
// populated the way they are in a real cluster.
func realisticPod(i int) *corev1ac.PodApplyConfiguration {
	rs := fmt.Sprintf("shop-%03d-7c9f8d6b5", i/100)
	env := func(n int, prefix string) []*corev1ac.EnvVarApplyConfiguration {
		var out []*corev1ac.EnvVarApplyConfiguration
		for j := range n {
			out = append(out, corev1ac.EnvVar().WithName(fmt.Sprintf("%s_SETTING_%02d", prefix, j)).
				WithValue(fmt.Sprintf("value-%d-of-a-typical-configuration-entry", j)))
		}
		return append(out, corev1ac.EnvVar().WithName("POD_IP").WithValueFrom(
			corev1ac.EnvVarSource().WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("status.podIP"))))
	}
	probe := func(path string, port int32) *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromInt32(port))).
			WithInitialDelaySeconds(5).WithPeriodSeconds(10).WithTimeoutSeconds(1).WithFailureThreshold(3)
	}
	resources := func(cpu, mem string) *corev1ac.ResourceRequirementsApplyConfiguration {
		return corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}).
			WithLimits(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)})
	}
	mounts := []*corev1ac.VolumeMountApplyConfiguration{
		corev1ac.VolumeMount().WithName("config").WithMountPath("/etc/app"),
		corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp"),
		corev1ac.VolumeMount().WithName("kube-api-access").WithMountPath("/var/run/secrets/kubernetes.io/serviceaccount").WithReadOnly(true),
	}
	return corev1ac.Pod(podName(i), Namespace).
		WithLabels(map[string]string{
			"app.kubernetes.io/name": "shop", "app.kubernetes.io/instance": fmt.Sprintf("shop-%03d", i/100),
			"app.kubernetes.io/version": "1.42.0", "app.kubernetes.io/component": "api",
			"pod-template-hash": "7c9f8d6b5", "team": "payments",
		}).
		WithAnnotations(map[string]string{
			"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
			"kubectl.kubernetes.io/restartedAt": "2026-11-01T10:00:00Z",
		}).
		WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion("apps/v1").WithKind("ReplicaSet").
			WithName(rs).WithUID(types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i/100))).
			WithController(true).WithBlockOwnerDeletion(true)).
		WithSpec(corev1ac.PodSpec().
			WithNodeName(nodeName(i%nodes)).
			WithServiceAccountName("shop").
			WithRestartPolicy(corev1.RestartPolicyAlways).
			WithDNSPolicy(corev1.DNSClusterFirst).
			WithTerminationGracePeriodSeconds(30).
			WithSecurityContext(corev1ac.PodSecurityContext().WithRunAsNonRoot(true).WithFSGroup(2000)).
			WithTolerations(
				corev1ac.Toleration().WithKey("node.kubernetes.io/not-ready").WithOperator(corev1.TolerationOpExists).
					WithEffect(corev1.TaintEffectNoExecute).WithTolerationSeconds(300),
				corev1ac.Toleration().WithKey("node.kubernetes.io/unreachable").WithOperator(corev1.TolerationOpExists).
					WithEffect(corev1.TaintEffectNoExecute).WithTolerationSeconds(300)).
			WithVolumes(
				corev1ac.Volume().WithName("config").WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName("shop-config")),
				corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
				corev1ac.Volume().WithName("kube-api-access").WithProjected(corev1ac.ProjectedVolumeSource().WithSources(
					corev1ac.VolumeProjection().WithServiceAccountToken(corev1ac.ServiceAccountTokenProjection().WithPath("token").WithExpirationSeconds(3607)),
					corev1ac.VolumeProjection().WithConfigMap(corev1ac.ConfigMapProjection().WithName("kube-root-ca.crt").
						WithItems(corev1ac.KeyToPath().WithKey("ca.crt").WithPath("ca.crt")))))).
			WithContainers(
				corev1ac.Container().WithName("app").WithImage("registry.example.com/shop/api:1.42.0").
					WithArgs("--listen=:8080", "--metrics=:9090").
					WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(8080),
						corev1ac.ContainerPort().WithName("metrics").WithContainerPort(9090)).
					WithEnv(env(14, "APP")...).
					WithResources(resources("250m", "256Mi")).
					WithLivenessProbe(probe("/livez", 8080)).WithReadinessProbe(probe("/readyz", 8080)).
					WithVolumeMounts(mounts...).
					WithImagePullPolicy(corev1.PullIfNotPresent).
					WithTerminationMessagePolicy(corev1.TerminationMessageReadFile),
				corev1ac.Container().WithName("proxy").WithImage("registry.example.com/mesh/proxy:2.7.1").
					WithPorts(corev1ac.ContainerPort().WithName("proxy").WithContainerPort(15001)).
					WithEnv(env(14, "PROXY")...).
					WithResources(resources("100m", "128Mi")).
					WithReadinessProbe(probe("/healthz/ready", 15021)).
					WithVolumeMounts(mounts[2]).
					WithImagePullPolicy(corev1.PullIfNotPresent)))
}

// runningStatus is the status a kubelet reports for a healthy pod.
func runningStatus(i int, started time.Time) *corev1ac.PodApplyConfiguration {
	at := metav1.NewTime(started)
	cond := func(t corev1.PodConditionType) *corev1ac.PodConditionApplyConfiguration {
		return corev1ac.PodCondition().WithType(t).WithStatus(corev1.ConditionTrue).WithLastTransitionTime(at)
	}
	ip := fmt.Sprintf("10.%d.%d.%d", 100+i/65536, (i/256)%256, i%256)
	return corev1ac.Pod(podName(i), Namespace).WithStatus(corev1ac.PodStatus().
		WithPhase(corev1.PodRunning).
		WithConditions(cond("PodReadyToStartContainers"), cond(corev1.PodInitialized), cond(corev1.PodReady),
			cond(corev1.ContainersReady), cond(corev1.PodScheduled)).
		WithHostIP(fmt.Sprintf("192.168.%d.%d", i%300/256, i%300%256)).
		WithPodIP(ip).WithPodIPs(corev1ac.PodIP().WithIP(ip)).
		WithStartTime(at).
		WithQOSClass(corev1.PodQOSBurstable).
		WithContainerStatuses(
			containerStatus("app", "registry.example.com/shop/api:1.42.0", i, at),
			containerStatus("proxy", "registry.example.com/mesh/proxy:2.7.1", i, at)))
}

func containerStatus(name, image string, i int, at metav1.Time) *corev1ac.ContainerStatusApplyConfiguration {
	return corev1ac.ContainerStatus().WithName(name).WithImage(image).
		WithImageID(image + "@sha256:4bd8e4ad07f1b0c4d0b8e9f1a2c3d4e5f60718293a4b5c6d7e8f9012a3b4c5d6").
		WithContainerID(fmt.Sprintf("containerd://%064x", i*7+len(name))).
		WithReady(true).WithStarted(true).WithRestartCount(0).
		WithState(corev1ac.ContainerState().WithRunning(corev1ac.ContainerStateRunning().WithStartedAt(at)))
}

// createPods applies pods [from, to) with their status, from workers
// goroutines; it reports progress through logf every 10 s.
func createPods(ctx context.Context, client kubernetes.Interface, from, to, workers int, logf func(string, ...any)) error {
	started := time.Now()
	opts := metav1.ApplyOptions{FieldManager: "kube-controller-manager", Force: true}
	statusOpts := metav1.ApplyOptions{FieldManager: "kubelet", Force: true}
	return createEach(ctx, "pods", from, to, workers, func(ctx context.Context, i int) error {
		if _, err := client.CoreV1().Pods(Namespace).Apply(ctx, realisticPod(i), opts); err != nil {
			return err
		}
		_, err := client.CoreV1().Pods(Namespace).ApplyStatus(ctx, runningStatus(i, started), statusOpts)
		return err
	}, logf)
}

// createEach calls create for each of [from, to) from workers
// goroutines, stopping at the first error; it reports progress through
// logf every 10 s, saying what it creates.
func createEach(ctx context.Context, what string, from, to, workers int, create func(ctx context.Context, i int) error, logf func(string, ...any)) error {
	if from >= to {
		return nil
	}
	jobs := make(chan int)
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	started := time.Now()
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				if err := create(ctx, i); err != nil {
					errs <- fmt.Errorf("creating %s #%d: %w", what, i, err)
					return
				}
				done.Add(1)
			}
		})
	}
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	var err error
feed:
	for i := from; i < to; i++ {
		select {
		case jobs <- i:
		case err = <-errs:
			break feed
		case <-tick.C:
			logf("bench: %d of %d %s created", from+int(done.Load()), to, what)
			i-- // i was not handed out
		}
	}
	close(jobs)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err := <-errs:
		return err
	default:
	}
	logf("bench: %d %s created in %s (%.0f/s)", to-from, what, time.Since(started).Round(time.Millisecond), float64(to-from)/time.Since(started).Seconds())
	return nil
}

// statusPatch is what the kubelet would send when the app container
// crashes into CrashLoopBackOff (after an OOM kill or an error exit) or
// is running and ready again. restarts identifies the patch: it only
// grows per pod, and herald reports it as the restartCount fact.
func statusPatch(crash bool, restarts int, now time.Time) []byte {
	at := now.UTC().Format(time.RFC3339)
	app := map[string]any{
		"name": "app", "image": "registry.example.com/shop/api:1.42.0", "restartCount": restarts,
		"imageID": "registry.example.com/shop/api:1.42.0@sha256:4bd8e4ad07f1b0c4d0b8e9f1a2c3d4e5f60718293a4b5c6d7e8f9012a3b4c5d6",
	}
	last := map[string]any{"exitCode": 1, "reason": "Error", "startedAt": at, "finishedAt": at}
	if restarts%2 == 0 {
		last["exitCode"], last["reason"] = 137, "OOMKilled"
	}
	app["lastState"] = map[string]any{"terminated": last}
	if crash {
		app["ready"], app["started"] = false, false
		app["state"] = map[string]any{"running": nil, "waiting": map[string]any{"reason": "CrashLoopBackOff",
			"message": "back-off 10s restarting failed container=app pod=" + strconv.Itoa(restarts)}}
	} else {
		app["ready"], app["started"] = true, true
		app["state"] = map[string]any{"waiting": nil, "running": map[string]any{"startedAt": at}}
	}
	proxy := map[string]any{"name": "proxy", "image": "registry.example.com/mesh/proxy:2.7.1", "ready": true, "started": true,
		"restartCount": 0, "state": map[string]any{"running": map[string]any{"startedAt": at}}}
	b, _ := json.Marshal(map[string]any{"status": map[string]any{"containerStatuses": []any{app, proxy}}})
	return b
}

// patchStatus sends one status patch, as the kubelet does.
func patchStatus(ctx context.Context, client kubernetes.Interface, pod int, body []byte) error {
	_, err := client.CoreV1().Pods(Namespace).Patch(ctx, podName(pod), types.StrategicMergePatchType, body,
		metav1.PatchOptions{FieldManager: "kubelet"}, "status")
	return err
}

// appState reads what the benchmark's patches wrote into a pod: the app
// container's restart count and whether it is crash-looping.
func appState(pod *corev1.Pod) (restarts int, crash bool, ok bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == "app" {
			return int(cs.RestartCount), cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff", true
		}
	}
	return 0, false, false
}

// nodes is how many nodes the bench's pods are spread over.
const nodes = 300

func nodeName(i int) string { return fmt.Sprintf("node-%03d", i) }

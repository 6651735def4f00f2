package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Objects is how many objects of each kind besides pods a run holds
// (Options.Cluster): what goes with that many pods in a real cluster.
// herald caches the Deployments and Nodes (its default rules watch them)
// and the ConfigMaps' and Secrets' metadata (the What-changed record);
// the ReplicaSets are there because a real API server holds them.
type Objects struct {
	Deployments int `json:"deployments"`
	ReplicaSets int `json:"replicasets"`
	ConfigMaps  int `json:"configmaps"`
	Secrets     int `json:"secrets"`
	Nodes       int `json:"nodes"`
}

// objectsFor is the cluster of the Kubernetes scalability envelope's
// shape around pods pods: a Deployment (and its ReplicaSet) per ten pods,
// a ConfigMap and a Secret per ten, a node per 150 (1,000 at 150,000
// pods), and never fewer nodes than the pods are spread over.
func objectsFor(pods int) Objects {
	return Objects{Deployments: pods / 10, ReplicaSets: pods / 10, ConfigMaps: pods / 10, Secrets: pods / 10, Nodes: max(nodes, pods/150)}
}

// deploymentName is the j-th Deployment's name. The first hundredth own
// the benchmark's pods (realisticPod names its ReplicaSet after it).
func deploymentName(j int) string { return fmt.Sprintf("shop-%03d", j) }

// createObjects grows the cluster's other objects from have to want.
// Nodes past the first are registered with the stand-in kubelet, so they
// are Ready and serve logs like the others.
func createObjects(ctx context.Context, client kubernetes.Interface, register func(context.Context, string) error, have, want Objects, logf func(string, ...any)) error {
	apply := metav1.ApplyOptions{FieldManager: "kube-controller-manager", Force: true}
	started := time.Now()
	steps := []struct {
		what     string
		from, to int
		create   func(ctx context.Context, j int) error
	}{
		{"nodes", have.Nodes, want.Nodes, func(ctx context.Context, j int) error { return register(ctx, nodeName(j)) }},
		{"deployments", have.Deployments, want.Deployments, func(ctx context.Context, j int) error {
			if _, err := client.AppsV1().Deployments(Namespace).Apply(ctx, deployment(j), apply); err != nil {
				return err
			}
			_, err := client.AppsV1().Deployments(Namespace).ApplyStatus(ctx, deploymentStatus(j), apply)
			return err
		}},
		{"replicasets", have.ReplicaSets, want.ReplicaSets, func(ctx context.Context, j int) error {
			d, err := client.AppsV1().Deployments(Namespace).Get(ctx, deploymentName(j), metav1.GetOptions{})
			if err != nil {
				return err
			}
			_, err = client.AppsV1().ReplicaSets(Namespace).Apply(ctx, replicaSet(j, d), apply)
			return err
		}},
		{"configmaps", have.ConfigMaps, want.ConfigMaps, func(ctx context.Context, j int) error {
			_, err := client.CoreV1().ConfigMaps(Namespace).Apply(ctx, corev1ac.ConfigMap(fmt.Sprintf("shop-%03d-config", j), Namespace).
				WithLabels(map[string]string{"app.kubernetes.io/instance": deploymentName(j)}).WithData(settings(j)), apply)
			return err
		}},
		{"secrets", have.Secrets, want.Secrets, func(ctx context.Context, j int) error {
			_, err := client.CoreV1().Secrets(Namespace).Apply(ctx, corev1ac.Secret(fmt.Sprintf("shop-%03d-credentials", j), Namespace).
				WithLabels(map[string]string{"app.kubernetes.io/instance": deploymentName(j)}).WithStringData(settings(j)), apply)
			return err
		}},
	}
	for _, s := range steps {
		if err := createEach(ctx, s.what, s.from, s.to, Patchers, s.create, logf); err != nil {
			return err
		}
	}
	logf("bench: the other objects grown to %+v in %s", want, time.Since(started).Round(time.Millisecond))
	return nil
}

// settings is a ConfigMap's or Secret's data: 20 entries, about 1 KB.
func settings(j int) map[string]string {
	data := map[string]string{}
	for k := range 20 {
		data[fmt.Sprintf("SETTING_%02d", k)] = fmt.Sprintf("value-%d-of-%s", k, strings.Repeat("x", 30+j%7))
	}
	return data
}

// deployment is the j-th Deployment: ten replicas of the benchmark's
// realistic pod.
func deployment(j int) *appsv1ac.DeploymentApplyConfiguration {
	pod := realisticPod(j * 100)
	labels := map[string]string{"app.kubernetes.io/name": "shop", "app.kubernetes.io/instance": deploymentName(j)}
	return appsv1ac.Deployment(deploymentName(j), Namespace).
		WithLabels(labels).
		WithAnnotations(map[string]string{"deployment.kubernetes.io/revision": "3", "kubernetes.io/change-cause": "ci-deployer: release 1.42.0"}).
		WithSpec(appsv1ac.DeploymentSpec().WithReplicas(10).WithRevisionHistoryLimit(10).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithAnnotations(pod.Annotations).WithSpec(pod.Spec)))
}

// deploymentStatus is a Deployment rolled out and available.
func deploymentStatus(j int) *appsv1ac.DeploymentApplyConfiguration {
	now := metav1.Now()
	cond := func(t appsv1.DeploymentConditionType, reason string) *appsv1ac.DeploymentConditionApplyConfiguration {
		return appsv1ac.DeploymentCondition().WithType(t).WithStatus(corev1.ConditionTrue).WithReason(reason).
			WithLastUpdateTime(now).WithLastTransitionTime(now)
	}
	return appsv1ac.Deployment(deploymentName(j), Namespace).WithStatus(appsv1ac.DeploymentStatus().
		WithObservedGeneration(1).WithReplicas(10).WithUpdatedReplicas(10).WithReadyReplicas(10).WithAvailableReplicas(10).
		WithConditions(cond(appsv1.DeploymentAvailable, "MinimumReplicasAvailable"), cond(appsv1.DeploymentProgressing, "NewReplicaSetAvailable")))
}

// replicaSet is the j-th Deployment's current ReplicaSet.
func replicaSet(j int, d *appsv1.Deployment) *appsv1ac.ReplicaSetApplyConfiguration {
	pod := realisticPod(j * 100)
	labels := map[string]string{"app.kubernetes.io/name": "shop", "app.kubernetes.io/instance": deploymentName(j), "pod-template-hash": "7c9f8d6b5"}
	return appsv1ac.ReplicaSet(deploymentName(j)+"-7c9f8d6b5", Namespace).
		WithLabels(labels).
		WithAnnotations(map[string]string{"deployment.kubernetes.io/revision": "3", "deployment.kubernetes.io/desired-replicas": "10"}).
		WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion("apps/v1").WithKind("Deployment").
			WithName(d.Name).WithUID(d.UID).WithController(true).WithBlockOwnerDeletion(true)).
		WithSpec(appsv1ac.ReplicaSetSpec().WithReplicas(10).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(pod.Spec)))
}

// listObjects pages through every object of the kinds herald lists
// besides pods (ReplicaSets it does not), as a bare client would: whole
// objects, 500 a page. It says how many pages it took.
func listObjects(ctx context.Context, client kubernetes.Interface) (int, error) {
	pages := 0
	for _, list := range []func(metav1.ListOptions) (string, error){
		func(o metav1.ListOptions) (string, error) {
			l, err := client.AppsV1().Deployments(Namespace).List(ctx, o)
			return continueOf(l, err)
		},
		func(o metav1.ListOptions) (string, error) {
			l, err := client.CoreV1().Nodes().List(ctx, o)
			return continueOf(l, err)
		},
		func(o metav1.ListOptions) (string, error) {
			l, err := client.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, o)
			return continueOf(l, err)
		},
		func(o metav1.ListOptions) (string, error) {
			l, err := client.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, o)
			return continueOf(l, err)
		},
	} {
		opts := metav1.ListOptions{Limit: 500}
		for {
			next, err := list(opts)
			if err != nil {
				return pages, err
			}
			pages++
			if opts.Continue = next; next == "" {
				break
			}
		}
	}
	return pages, nil
}

func continueOf(l interface{ GetContinue() string }, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return l.GetContinue(), nil
}

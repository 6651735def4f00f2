package testenv

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// WorkloadContainer is a container "app" of WorkloadImage with args,
// for the real node (imagePullPolicy: Never: no registry is reachable).
func WorkloadContainer(args ...string) corev1.Container {
	return corev1.Container{Name: "app", Image: WorkloadImage, ImagePullPolicy: corev1.PullNever, Args: args}
}

// WorkloadDeployment is a Deployment namespace/name of replicas pods of
// c (label app=name), quick to stop (1 s grace), for the real node.
func WorkloadDeployment(namespace, name string, replicas int32, c corev1.Container, volumes ...corev1.Volume) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{c}, Volumes: volumes, TerminationGracePeriodSeconds: ptr.To[int64](1)},
			},
		},
	}
}

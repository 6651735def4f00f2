package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/testenv"
)

// rolloutScene shows "What changed": shop runs well, is rolled out to the
// next image with a flag that makes it crash, and the crash alert names
// the rollout (the image, the args, the revision) and the command that
// undoes it, so the first reply to the alert can be the rollback.
func rolloutScene(ctx context.Context, client kubernetes.Interface, lines <-chan string, seen func([]string)) error {
	say("a bad rollout: shop runs %s until it is rolled out to %s with a flag that makes it exit 1. Expect one FIRING whose 'what changed' line names the rollout (image, args, revision) and an undo line with the kubectl rollout undo command", testenv.WorkloadImage, testenv.WorkloadImage2)
	if err := createDeployment(ctx, client, "shop", 1, workload("-log", "INFO shop serving"), nil); err != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, "shop", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 1, nil
	})
	if err != nil {
		return fmt.Errorf("shop did not become available: %w", err)
	}
	d, err := client.AppsV1().Deployments(ns).Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		return err
	}
	c := &d.Spec.Template.Spec.Containers[0]
	c.Image, c.Args = testenv.WorkloadImage2, []string{"-log", "INFO shop v2 starting,FATAL unknown flag: --pool-size", "-exit", "1"}
	if _, err := client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-set"}); err != nil {
		return err
	}
	if err := expect(lines, seen, 120*time.Second, "FIRING", "demo/shop"); err != nil {
		return err
	}
	if err := expect(lines, seen, 5*time.Second, "what changed:", "Rolled out", "workload:1 → 2"); err != nil {
		return err
	}
	return expect(lines, seen, 5*time.Second, "undo: kubectl rollout undo deployment/shop -n demo --to-revision=1")
}

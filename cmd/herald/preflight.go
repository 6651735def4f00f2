package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/watcher"
)

// access is one permission herald needs.
type access struct {
	verb        string
	gvr         schema.GroupVersionResource
	namespace   string // "" for cluster-wide
	subresource string
}

// preflight asks the API server (SelfSubjectAccessReview) whether herald
// may do what it is about to do, and reports every missing permission at
// once. Without it a missing RBAC rule shows only as an informer retrying
// forever in the log.
func preflight(ctx context.Context, client *kube.Client, kinds []string, namespace string, leaderElect, persist bool, logger *slog.Logger) error {
	var needs []access
	for _, kind := range kinds {
		gvr, ok := watcher.Resource(kind)
		if !ok {
			continue // custom resources are checked when their informer starts
		}
		for _, verb := range []string{"list", "watch"} {
			needs = append(needs, access{verb: verb, gvr: gvr})
		}
	}
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if leaderElect {
		for _, verb := range []string{"get", "create", "update", "patch"} { // patch: renewals
			needs = append(needs, access{verb: verb, gvr: leases, namespace: namespace})
		}
	}
	if persist {
		for _, verb := range []string{"get", "list", "create", "update", "patch", "delete"} { // get: the ledger's claim; patch: a new leader marks the shards
			needs = append(needs, access{verb: verb, gvr: configMaps, namespace: namespace})
		}
	}
	var missing []string
	for _, n := range needs {
		allowed, err := n.allowed(ctx, client, logger)
		if err != nil {
			return err
		}
		if !allowed {
			where := "in all namespaces"
			if n.namespace != "" {
				where = "in namespace " + n.namespace
			}
			res := n.gvr.Resource
			if n.gvr.Group != "" {
				res += "." + n.gvr.Group
			}
			missing = append(missing, fmt.Sprintf("%s %s %s", n.verb, res, where))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("herald's identity lacks permissions it needs: %s. Grant them (the Helm chart's ClusterRole lists the kinds your rules watch; the Role covers leases and configmaps in herald's namespace)", strings.Join(missing, "; "))
	}
	return nil
}

// allowed asks the API server whether herald may do a.
func (a access) allowed(ctx context.Context, client *kube.Client, logger *slog.Logger) (bool, error) {
	review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authv1.ResourceAttributes{Verb: a.verb, Group: a.gvr.Group, Resource: a.gvr.Resource, Subresource: a.subresource, Namespace: a.namespace},
	}}
	res, err := askUntilReachable(ctx, func() (*authv1.SelfSubjectAccessReview, error) {
		return client.ReviewAccess(ctx, review)
	}, logger)
	if err != nil {
		return false, fmt.Errorf("checking permissions: %w", err)
	}
	return res.Status.Allowed, nil
}

// askUntilReachable retries ask while the API server cannot be reached
// (down for an upgrade, etcd away): herald waits for the control plane
// rather than exit into a crash loop. An answer from the API server,
// even an error status, is returned at once.
func askUntilReachable[T any](ctx context.Context, ask func() (T, error), logger *slog.Logger) (T, error) {
	delay := time.Second
	for {
		res, err := ask()
		var status apierrors.APIStatus
		if err == nil || errors.As(err, &status) && status.Status().Code < 500 || ctx.Err() != nil {
			return res, err
		}
		logger.Warn("the API server cannot be reached yet; retrying", "in", delay, "error", err)
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 30*time.Second)
	}
}

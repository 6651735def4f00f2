// Package preflight asks the API server, before herald starts, whether
// herald may do what it is about to do (SelfSubjectAccessReview), and
// reports every missing permission at once: without it a missing RBAC
// rule shows only as an informer retrying forever in the log.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/watcher"
)

// Access is one permission herald needs.
type Access struct {
	Verb        string
	GVR         schema.GroupVersionResource
	Namespace   string // "" for cluster-wide
	Subresource string
	// Why, when set, says which feature needs it and how to grant it.
	Why string
}

// Check asks the API server (SelfSubjectAccessReview) whether herald may
// do what `herald run` is about to do: watch kinds, lead with a Lease and
// keep the ledger in namespace, and what else the rules need (extra:
// nodes/proxy for volume stats). It reports every missing permission at
// once.
func Check(ctx context.Context, client *kube.Client, kinds []string, namespace string, leaderElect, persist bool, logger *slog.Logger, extra ...Access) error {
	needs := slices.Clone(extra)
	for _, kind := range kinds {
		gvr, ok := watcher.Resource(kind)
		if !ok {
			continue // custom resources are checked when their informer starts
		}
		for _, verb := range []string{"list", "watch"} {
			needs = append(needs, Access{Verb: verb, GVR: gvr})
		}
	}
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if leaderElect {
		for _, verb := range []string{"get", "create", "update", "patch"} { // patch: renewals
			needs = append(needs, Access{Verb: verb, GVR: leases, Namespace: namespace})
		}
	}
	if persist {
		for _, verb := range []string{"get", "list", "create", "update", "patch", "delete"} { // get: the ledger's claim; patch: a new leader marks the shards
			needs = append(needs, Access{Verb: verb, GVR: configMaps, Namespace: namespace})
		}
	}
	var missing []string
	for _, n := range needs {
		allowed, err := n.Allowed(ctx, client, logger)
		if err != nil {
			return err
		}
		if !allowed {
			where := "in all namespaces"
			if n.Namespace != "" {
				where = "in namespace " + n.Namespace
			}
			res := n.GVR.Resource
			if n.Subresource != "" {
				res += "/" + n.Subresource
			}
			if n.GVR.Group != "" {
				res += "." + n.GVR.Group
			}
			m := fmt.Sprintf("%s %s %s", n.Verb, res, where)
			if n.Why != "" {
				m += " (" + n.Why + ")"
			}
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("herald's identity lacks permissions it needs: %s. Grant them (the Helm chart's ClusterRole lists the kinds your rules watch; the Role covers leases and configmaps in herald's namespace)", strings.Join(missing, "; "))
	}
	return nil
}

// Allowed asks the API server whether herald may do a, waiting while
// the API server cannot be reached.
func (a Access) Allowed(ctx context.Context, client *kube.Client, logger *slog.Logger) (bool, error) {
	review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authv1.ResourceAttributes{Verb: a.Verb, Group: a.GVR.Group, Resource: a.GVR.Resource, Subresource: a.Subresource, Namespace: a.Namespace},
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

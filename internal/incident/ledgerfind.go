package incident

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-k8s/herald/internal/kube"
)

// Exists says whether herald keeps this ledger in the store's namespace:
// a shard or the claim is there. A leader claims the ledger when its term
// starts and every save writes at least one shard, so a herald that runs
// with persistence has one even with no incident; a reader that finds
// neither looks in the wrong place (or herald runs with --no-persist),
// and must not report that as "no incidents".
func (s *ConfigMapStore) Exists(ctx context.Context) (bool, error) {
	list, err := s.client.ListConfigMaps(ctx, s.namespace, metav1.ListOptions{LabelSelector: s.selector(), Limit: 1})
	if err != nil {
		return false, fmt.Errorf("reading the ledger ConfigMaps in %s: %w", s.namespace, err)
	}
	if len(list.Items) > 0 {
		return true, nil
	}
	_, err = s.client.GetConfigMap(ctx, s.namespace, s.claimName())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading the ledger's claim %s/%s: %w", s.namespace, s.claimName(), err)
	}
	return true, nil
}

// LedgerNamespaces lists the namespaces holding the claim of a ledger
// called name, sorted: where herald runs, for a CLI not told where.
//
// It looks for the claim, not the shards: the claim is a few bytes while
// shards hold up to 900 KB each, and a list across namespaces should not
// pull every ledger's incidents to learn where they are. Every leader
// claims its ledger when its term starts.
func LedgerNamespaces(ctx context.Context, client *kube.Client, name string) ([]string, error) {
	list, err := client.ListConfigMaps(ctx, metav1.NamespaceAll, metav1.ListOptions{LabelSelector: "herald.io/ledger-claim=" + name})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, cm := range list.Items {
		if cm.Name == name+"-claim" && !slices.Contains(out, cm.Namespace) {
			out = append(out, cm.Namespace)
		}
	}
	slices.Sort(out)
	return out, nil
}

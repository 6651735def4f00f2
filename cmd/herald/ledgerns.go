package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
)

// ledgerNamespace is where herald's ledger is, when --namespace was not
// given: $POD_NAMESPACE inside herald's own pod (or any pod that sets it),
// else the one namespace holding the ledger's claim. It asks only for
// what herald incidents needs anyway, ConfigMaps, by herald's own label
// rather than the chart's labels on the Deployment: the label is herald's
// whatever installed it, and it is there only where a herald with
// persistence runs. Listing across namespaces needs list on ConfigMaps
// cluster-wide; without it, the error says to give --namespace.
func ledgerNamespace(ctx context.Context, client *kube.Client, ledger, where string) (string, error) {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns, nil
	}
	found, err := incident.LedgerNamespaces(ctx, client, ledger)
	if apierrors.IsForbidden(err) {
		return "", fmt.Errorf("cannot look for herald's ledger %q across namespaces (%s): you may not list ConfigMaps cluster-wide; give --namespace (herald's namespace)", ledger, where)
	}
	if err != nil {
		return "", fmt.Errorf("looking for herald's ledger %q (%s): %w", ledger, where, err)
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no herald ledger %q in any namespace (%s): is herald installed in this cluster? give --namespace, or --ledger-name if it names its ledger otherwise", ledger, where)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("herald's ledger %q is in several namespaces (%s) (%s): give --namespace to pick one", ledger, strings.Join(found, ", "), where)
}

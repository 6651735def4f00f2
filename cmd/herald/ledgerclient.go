package main

import (
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/internal/kube"
)

// newLedgerClient is the incident ledger's own Kubernetes client, without
// client-go's client-side rate limit. Shared, that limit (5 requests a
// second, burst 10) held a save of a few shards and its claim to about
// one a second, and the ledger lag gate held every sink behind it: herald
// delivered about 50 notifications a second, whatever the sinks could
// take. The ledger's own rhythm bounds what it asks of the API server:
// at most one save per incident.MinFlushGap, each writing the claim and
// the shards that changed, and the API server's priority and fairness
// still applies.
func newLedgerClient(restCfg *rest.Config) (*kube.Client, error) {
	own := rest.CopyConfig(restCfg)
	own.QPS, own.Burst = -1, 0
	return kube.New(own)
}

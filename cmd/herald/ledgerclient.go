package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
)

// The ledger's own client-side rate limit. client-go's default (5
// requests a second, burst 10), shared with the lease and the rest, held
// a save of a few shards and its claim to about one a second, and the
// ledger lag gate held every sink behind it: herald delivered about 50
// notifications a second, whatever the sinks could take. Its own limit
// still bounds what the ledger asks of the API server and etcd: 50
// writes a second after a burst of 100, each of at most MaxShardBytes
// (900 KiB): about 46 MB a second at worst.
const (
	ledgerQPS   = 50
	ledgerBurst = 100
)

// newLedgerClient is the incident ledger's own Kubernetes client, with
// its own rate limit (kube.New makes the limiter from QPS and Burst).
func newLedgerClient(restCfg *rest.Config) (*kube.Client, error) {
	own := rest.CopyConfig(restCfg)
	own.RateLimiter = nil // the configuration's own, if any, is not the ledger's
	own.QPS, own.Burst = ledgerQPS, ledgerBurst
	return kube.New(own)
}

// newLedgerStore is the incident ledger in ConfigMaps named name in
// namespace, through its own client, counting what it writes
// (herald_ledger_written_bytes_total) and its journal's folds.
func newLedgerStore(restCfg *rest.Config, namespace, name string, reg prometheus.Registerer) (*incident.ConfigMapStore, error) {
	client, err := newLedgerClient(restCfg)
	if err != nil {
		return nil, err
	}
	ledger := incident.NewConfigMapStore(client, namespace, name)
	written := prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_ledger_written_bytes_total",
		Help: "Bytes of ledger shards this replica's saves wrote (not the claim, nor the mark a new leader puts on each shard it loads)."})
	reg.MustRegister(written)
	ledger.CountBytes(func(n int) { written.Add(float64(n)) })
	folds := prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_ledger_journal_folds_total",
		Help: "Times this replica folded the ledger's journal into its shards (at its first write as leader, then whenever the journal reaches half the hashed shards' bytes)."})
	reg.MustRegister(folds)
	ledger.CountFolds(folds.Inc)
	shards := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_ledger_shards",
		Help: "The ledger's ConfigMaps after this replica's last save, by kind: hashed (open incidents), journal (their changes since the last fold), archive (resolved incidents)."}, []string{"kind"})
	shardBytes := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_ledger_shard_bytes",
		Help: "Bytes of data in the ledger's ConfigMaps after this replica's last save, by kind (as herald_ledger_shards). The journal is folded once it reaches half the hashed shards' bytes."}, []string{"kind"})
	reg.MustRegister(shards, shardBytes)
	ledger.ReportSizes(func(sz incident.ShardSizes) {
		for kind, size := range map[string]incident.ShardSize{"hashed": sz.Hashed, "journal": sz.Journal, "archive": sz.Archive} {
			shards.WithLabelValues(kind).Set(float64(size.Shards))
			shardBytes.WithLabelValues(kind).Set(float64(size.Bytes))
		}
	})
	return ledger, nil
}

package incident

// The ledger's size, for its metrics (herald_ledger_shards,
// herald_ledger_shard_bytes): how many ConfigMaps of each kind it keeps
// and the bytes of their data.

// ShardSizes is what the ledger's shards of each kind hold after a save:
// how many there are and the bytes of their data, as last written.
type ShardSizes struct {
	Hashed, Journal, Archive ShardSize
}

// ShardSize counts the shards of one kind and their data's bytes.
type ShardSize struct{ Shards, Bytes int }

// ReportSizes makes the store tell f, after every save that completes,
// how many shards of each kind the ledger has and their bytes
// (herald_ledger_shards, herald_ledger_shard_bytes): what it keeps in
// etcd, and how far the journal has grown towards its next fold. Call
// before Save.
func (s *ConfigMapStore) ReportSizes(f func(ShardSizes)) { s.sized = f }

// sizes is what the ledger's shards hold now.
func (s *ConfigMapStore) sizes() ShardSizes {
	var out ShardSizes
	for _, data := range s.written {
		out.Hashed.Shards++
		out.Hashed.Bytes += len(data)
	}
	out.Journal = ShardSize{len(s.journal.shards), s.journal.dataBytes()}
	out.Archive = ShardSize{len(s.archive.shards), s.archive.dataBytes()}
	return out
}

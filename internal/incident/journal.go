package incident

import "slices"

// The ledger's journal. A hashed shard holds several hundred open
// incidents, and a storm changes a few of them in every shard between
// two saves. Rewriting each changed shard whole, a save of a ledger of
// 20,000 open incidents sent 8.4 MB to the API server for 50 changes
// (BenchmarkLedgerStorm): at two saves a second, gigabytes of etcd
// history between two of the API server's compactions of it (every
// five minutes by default), where etcd's default quota is 2 GB.
//
// Instead a save writes the changed incidents' current copies to the
// journal, shards <ledger>-j-<n> that fill and seal as the archive's do,
// and leaves their hashed shards as they were. On load the copy of the
// newest generation wins, so the journal's copy is the current one. Once
// the journal holds as many bytes as half the open incidents, a save
// compacts it: it writes every hashed shard that changed, and the
// journal's shards, holding nothing current any more, are deleted. A
// save whose changes alone reach that size compacts at once: the journal
// would cost more than the shards.
//
// A save compacts too when an incident with a copy in the journal
// leaves the ledger: that copy, in a sealed shard, would otherwise come
// back on load. An incident that leaves the ledger from a hashed shard
// has that shard written at once, as before. And the first save after a
// load compacts (it knows nothing of what the hashed shards hold).

// journalShardBytes is where a filling journal shard is sealed: the
// most a save writes for the journal, besides compactions.
const journalShardBytes = 128 << 10

func newJournal() *archive { return newFillAndSeal("j", journalShardBytes) }

// journalOrWrite decides, for each hashed shard whose incidents changed
// since it was written, whether the changes go to the journal or the
// shard is written now, and returns the shards to write now.
func (s *ConfigMapStore) journalOrWrite(encoded []*encodedIncident, shards map[string]*hashedShard) []string {
	type change struct {
		name    string
		changed []int // indexes into the shard's holds
		lost    bool  // an incident it held left the ledger
	}
	var dirty []change
	compact := false
	liveBytes, changedBytes := 0, 0
	for name, sh := range shards {
		liveBytes += sh.size
		old, known := s.holds[name]
		if !known {
			compact = true // a load, or a new shard count
		} else if slices.Equal(old, sh.holds) {
			continue
		}
		c := change{name: name}
		before := make(map[string]uint64, len(old))
		for _, e := range old {
			before[e.id] = e.rev
			c.lost = c.lost || s.encoded[e.id] == nil // gone now, or in an earlier save that failed
		}
		for j, e := range sh.holds {
			if rev, ok := before[e.id]; !ok || rev != e.rev {
				c.changed = append(c.changed, j)
				changedBytes += len(encoded[sh.part[j]].json) + 1
			}
		}
		dirty = append(dirty, c)
	}
	for id := range s.journaled {
		compact = compact || s.encoded[id] == nil
	}
	var writeNow []string
	if compact || s.journal.bytes()+changedBytes >= liveBytes/2 {
		s.compact()
		for _, c := range dirty {
			writeNow = append(writeNow, c.name)
		}
		return writeNow
	}
	for _, c := range dirty {
		sh := shards[c.name]
		if c.lost {
			// An incident left the ledger: its copy in this shard goes
			// with a write of the shard (it has none in the journal).
			writeNow = append(writeNow, c.name)
			for _, e := range sh.holds {
				s.journal.forget(e.id) // current in the shard now
			}
			continue
		}
		for _, j := range c.changed {
			e := sh.holds[j]
			s.journal.keep(s.name, e.id, e.rev, len(encoded[sh.part[j]].json))
			s.journaled[e.id] = true
		}
	}
	return writeNow
}

// compact makes every copy in the journal stale: the save writes every
// hashed shard that changed, then deletes the journal's shards.
func (s *ConfigMapStore) compact() {
	for id := range s.journal.home {
		s.journal.forget(id)
	}
}

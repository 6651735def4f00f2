package incident

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

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
// newest generation wins, so the journal's copy is the current one. An
// incident that leaves the ledger gets a tombstone in the journal (a
// copy marked gone), newer than every copy of it anywhere, so that none
// of those comes back on load; a hashed shard is not written for it.
//
// Once the journal holds as many bytes as half the open incidents, a
// save folds it: it writes every hashed shard that changed since it was
// last written, and only once all of them are written does anything in
// the journal stop being current; then the journal's shards are deleted,
// oldest first, so that a tombstone outlives the copies it hides however
// far the deletes get. A save whose changes alone reach that size folds
// at once (the journal would cost more than the shards), and so does
// the first save after a load (it knows nothing of what the hashed
// shards hold). That first fold also deletes any journal shard it did
// not load: one a deposed leader's write created late, whose copies
// would otherwise outlive this leader's tombstones.
//
// A reader of the ledger older than the journal reads its shards as
// hashed ones (the newest copy wins there too), a tombstone as an
// incident resolved long ago, and deletes the journal at its first
// write.

func newJournal() *archive { return newFillAndSeal("j", maxSealBytes) }

// journalOrWrite decides, for each hashed shard whose incidents changed
// since it was written, whether the changes go to the journal or the
// shard is written now (fold: every such shard is written, and the
// journal folded once they are), and returns the shards to write now.
func (s *ConfigMapStore) journalOrWrite(encoded []*encodedIncident, shards map[string]*hashedShard) (writeNow []string, fold bool) {
	type change struct {
		name    string
		changed []int // indexes into the shard's holds
	}
	var dirty []change
	liveBytes, changedBytes := 0, 0
	for name, sh := range shards {
		liveBytes += sh.size
		old, known := s.holds[name]
		if !known {
			fold = true // a load, or a new shard count
		} else if slices.Equal(old, sh.holds) {
			continue
		}
		c := change{name: name}
		before := make(map[string]uint64, len(old))
		for _, e := range old {
			before[e.id] = e.rev
		}
		for j, e := range sh.holds {
			if rev, ok := before[e.id]; !ok || rev != e.rev {
				c.changed = append(c.changed, j)
				changedBytes += len(encoded[sh.part[j]].json) + 1
			}
		}
		dirty = append(dirty, c)
	}
	defer clear(s.returned)
	// The journal's shards are sealed at a 32nd of what it holds when it
	// is folded: a fold deletes about 32 of them (sealSize). Set on a
	// fold too: the next save's tombstones start from it.
	s.journal.sealAt = sealSize(liveBytes / 2)
	// Fold when the journal, with this save's changes, would hold half
	// the open incidents' bytes — and there is something to fold.
	journalBytes := s.journal.bytes()
	somethingToFold := len(dirty) > 0 || journalBytes > 0
	if fold || somethingToFold && journalBytes+changedBytes >= liveBytes/2 {
		for _, c := range dirty {
			writeNow = append(writeNow, c.name)
		}
		return writeNow, true
	}
	for _, c := range dirty {
		sh := shards[c.name]
		for _, j := range c.changed {
			e := sh.holds[j]
			s.journal.keep(s.name, e.id, e.rev, len(encoded[sh.part[j]].json))
		}
	}
	for id := range s.returned {
		// Its tombstone is written: a copy newer than it, whether or not
		// its hashed shard changed. (Archived: the archive's is.)
		if e := s.encoded[id]; e != nil && s.archive.home[id].shard == "" {
			s.journal.keep(s.name, id, e.rev, len(e.json))
		}
	}
	return nil, false
}

// tombstoneRev is the revision a tombstone is kept at in the journal: no
// incident's, so an incident of that ID back in the ledger replaces it.
const tombstoneRev = math.MaxUint64

// tombstoneOf is the journal's record that the incident id left the
// ledger (encode keeps it in the journal): its copies in hashed, journal
// and archive shards stay until the next fold, and must not come back
// on load.
func tombstoneOf(id, fingerprint string) []byte {
	// Resolved long ago, for a reader older than the journal: it drops
	// the incident as past its retention.
	b, err := json.Marshal(Incident{ID: id, Fingerprint: fingerprint, Gone: true, ResolvedAt: time.Unix(1, 0).UTC()})
	if err != nil {
		panic(err) // an Incident of strings and a time always encodes
	}
	return b
}

// compact makes every copy in the journal stale, tombstones included:
// every hashed shard now holds its incidents' current copies. The
// journal's shards are deleted next.
func (s *ConfigMapStore) compact() {
	for id := range s.journal.home {
		s.journal.forget(id)
	}
	clear(s.tombstones)
}

// staleJournal says whether cm is a journal shard of an era the ledger
// has folded since: its copies are in the hashed shards, or older than
// the ones there (a write of unknown outcome that landed late, a deposed
// leader's); it is read as nothing and deleted.
func (s *ConfigMapStore) staleJournal(cm *corev1.ConfigMap) bool {
	if _, ok := fillAndSealNumber(s.name, s.journal.kind, cm.Name); !ok {
		return false
	}
	folds, _ := strconv.ParseUint(cm.Annotations[foldsAnnotation], 10, 64)
	return folds < s.folds
}

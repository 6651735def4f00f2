package incident

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/herald-k8s/herald/internal/kube"
)

// MaxShardBytes bounds one ledger ConfigMap's data, well under the API's
// 1 MiB object limit.
const MaxShardBytes = 900 << 10

// targetShardBytes is what a shard is sized for, leaving room to grow
// before the next resharding.
const targetShardBytes = 512 << 10

const (
	ledgerLabel = "app.kubernetes.io/component"
	ledgerValue = "herald-ledger"
	dataKey     = "incidents.json"
	// generationAnnotation numbers the save that wrote a shard: on load,
	// of two copies of an incident the newer shard's wins (archive.go).
	generationAnnotation = "herald.io/ledger-generation"
	// epochAnnotation is the claim's epoch when the shard was written:
	// every leader's claim opens a new one, so of two copies of an
	// incident written by a deposed leader and its successor, the
	// successor's wins whatever their generations (Claim).
	epochAnnotation = "herald.io/ledger-epoch"
	// writerAnnotation names the store that last wrote (or marked) the
	// shard: a write refused because the shard changed is another
	// writer's conflict only if the shard names another writer (mine).
	writerAnnotation = "herald.io/ledger-writer"
	// foldsAnnotation is how many times the ledger's journal had been
	// folded when the shard was written: a journal shard of an earlier
	// count than the claim records is stale (journal.go).
	foldsAnnotation = "herald.io/ledger-folds"
)

// ConfigMapStore keeps the ledger in ConfigMaps in one namespace. Open
// incidents (and resolved ones with deliveries pending) are spread over
// shards <name>-<count>-<i> by a hash of their ID, the shard count a power
// of two chosen so each stays under MaxShardBytes; only shards whose
// content changed are written. Resolved incidents whose deliveries are
// done go to the archive's shards <name>-a-<n>, written while they fill
// and then left alone (archive.go).
type ConfigMapStore struct {
	client    *kube.Client
	namespace string
	name      string

	// versions: shard name → the resourceVersion last read or written.
	// Every write is conditional on it, so that a replica that lost the
	// lease (and does not know it yet) cannot overwrite what the new
	// leader wrote: its write fails with ErrConflict.
	versions map[string]string
	// unsureDeletes: shards whose delete had an unknown outcome (mine);
	// recent: digests of each shard's latest writes (attempted).
	unsureDeletes map[string]bool
	recent        map[string][][sha256.Size]byte
	// token names this store as the writer of the claim and of every
	// shard it writes (shardwrite.go). The claim: claimed once Claim was
	// called; claimVersion is its resourceVersion as last read or
	// written; epoch the claim's epoch this store opened; claims counts
	// its writes; fenced once this save has touched it.
	claimed, fenced     bool
	token, claimVersion string
	epoch, claims       uint64

	written map[string]string           // hashed shard name → data last written
	holds   map[string][]shardEntry     // hashed shard name → what that data holds (none after a load)
	encoded map[string]*encodedIncident // incident ID → its JSON at the last write
	calls   uint64                      // encode calls so far
	archive *archive
	// journal holds the open incidents' changes between rewrites of
	// their hashed shards, and tombstones (their JSON) for the incidents
	// that left the ledger since; returned: incidents back in the ledger
	// with a tombstone; folds: the journal's folds so far, as the claim
	// records them (journal.go).
	journal    *archive
	tombstones map[string][]byte
	returned   map[string]bool
	folds      uint64
	gen        uint64 // generation of the last save, or the newest loaded

	putBytes func(n int)      // told the bytes of every shard written (CountBytes)
	folded   func()           // told of every fold of the journal (CountFolds)
	sized    func(ShardSizes) // told what the ledger holds after every save (ReportSizes)
}

// CountBytes makes the store tell f the size of the data of every shard
// it writes (herald_ledger_written_bytes_total). Call before Save.
func (s *ConfigMapStore) CountBytes(f func(n int)) { s.putBytes = f }

// CountFolds makes the store call f at every fold of its journal
// (herald_ledger_journal_folds_total; journal.go). Call before Save.
func (s *ConfigMapStore) CountFolds(f func()) { s.folded = f }

// NewConfigMapStore makes a store; nothing is read until Load.
func NewConfigMapStore(client *kube.Client, namespace, name string) *ConfigMapStore {
	return &ConfigMapStore{client: client, namespace: namespace, name: name, token: rand.Text(), versions: map[string]string{}, unsureDeletes: map[string]bool{}, recent: map[string][][sha256.Size]byte{},
		written: map[string]string{}, holds: map[string][]shardEntry{}, encoded: map[string]*encodedIncident{},
		archive: newArchive(), journal: newJournal(), tombstones: map[string][]byte{}, returned: map[string]bool{}}
}

func (s *ConfigMapStore) selector() string {
	return ledgerLabel + "=" + ledgerValue + ",herald.io/ledger=" + s.name
}

// Save implements Store. It writes the archive shards with new entries
// first (the filling one, and any that filled up in this save), so that an
// incident moving into the archive is there before it leaves its hashed
// shard, then the journal's (journal.go), then the hashed shards it writes
// now, then deletes what is no longer needed.
func (s *ConfigMapStore) Save(ctx context.Context, incs []Incident) error {
	shared := make([]*Incident, len(incs))
	for i := range incs {
		shared[i] = &incs[i]
	}
	return s.SaveShared(ctx, shared)
}

// SaveShared implements SharedStore: Save without a copy of each
// incident. It reads incs only while it runs.
func (s *ConfigMapStore) SaveShared(ctx context.Context, incs []*Incident) error {
	return s.save(ctx, incs, shardIO{put: s.put, del: s.delete})
}

// shardIO is how a save writes and deletes shards: through the API
// server (put, delete), or in a benchmark, nowhere.
type shardIO struct {
	put func(ctx context.Context, name, data string) error
	del func(ctx context.Context, name, what string) error
}

func (s *ConfigMapStore) save(ctx context.Context, incs []*Incident, io shardIO) error {
	s.gen++
	s.fenced = false
	encoded, shards, err := s.layout(incs)
	if err != nil {
		return err
	}
	writeNow, fold := s.journalOrWrite(encoded, shards)
	for _, kind := range []*archive{s.archive, s.journal} {
		for _, name := range kind.unwritten() {
			if err := io.put(ctx, name, s.buildArchive(kind.shards[name])); err != nil {
				return err
			}
			kind.written(name)
		}
	}
	for _, name := range writeNow {
		sh := shards[name]
		data := s.build(sh, incs, encoded)
		if s.written[name] != data {
			if err := io.put(ctx, name, data); err != nil {
				// What it holds is unknown now (the write may land
				// late): the next save folds and writes it again —
				// or, if the shard count changes, deletes it ("" is
				// no shard's data).
				s.written[name] = ""
				delete(s.holds, name)
				return err
			}
		}
		s.written[name], s.holds[name] = data, sh.holds
	}
	for name := range s.written {
		if _, ok := shards[name]; ok {
			continue
		}
		if err := io.del(ctx, name, "old ledger shard"); err != nil {
			return err
		}
		delete(s.written, name)
		delete(s.holds, name)
	}
	if fold {
		// Every hashed shard holds its incidents' current copies (and
		// no other is left): nothing in the journal is current any more,
		// tombstones included. Counted in the claim at once: from now on
		// a journal shard of an earlier count — one of unknown outcome
		// that landed late, a deposed leader's, one whose delete below
		// does not happen — is stale.
		s.compact()
		s.folds++
		if s.folded != nil {
			s.folded()
		}
		if s.claimed {
			if err := s.touchClaim(ctx); err != nil {
				return err
			}
		}
	}
	// The journal's shards go last, oldest first: a tombstone outlives
	// every other copy of its incident, whenever the deletes stop.
	for _, kind := range []*archive{s.archive, s.journal} {
		for _, name := range kind.empty() {
			if err := io.del(ctx, name, "spent ledger "+kind.what()+" shard"); err != nil {
				return err
			}
			kind.deleted(name)
		}
	}
	if s.sized != nil {
		s.sized(s.sizes())
	}
	return nil
}

// layout encodes incs and places them: resolved ones whose deliveries
// are done in the archive, the others in hashed shards, which it returns
// (not yet built: most are not written).
func (s *ConfigMapStore) layout(incs []*Incident) ([]*encodedIncident, map[string]*hashedShard, error) {
	encoded, err := s.encode(incs)
	if err != nil {
		return nil, nil, err
	}
	// The archive's shards are sealed at a 32nd of what it holds after
	// this save (sealSize): a save that archives a storm's incidents
	// does not cut them into the small shards of an archive that was
	// small.
	holding := 0
	for i := range incs {
		if archivable(incs[i]) {
			holding += len(encoded[i].json) + 1
		}
	}
	s.archive.sealAt = sealSize(holding)
	live := make([]int, 0, len(incs))
	for i := range incs {
		if archivable(incs[i]) {
			s.archive.keep(s.name, incs[i].ID, encoded[i].rev, len(encoded[i].json))
			s.journal.forget(incs[i].ID) // current in the archive now
		} else {
			s.archive.forget(incs[i].ID)
			live = append(live, i)
		}
	}
	shards, err := s.shard(incs, encoded, live)
	return encoded, shards, err
}

// buildArchive returns the data of an archive (or journal) shard.
func (s *ConfigMapStore) buildArchive(sh *archiveShard) string {
	var b strings.Builder
	b.Grow(sh.size + 2)
	b.WriteByte('[')
	for i, e := range sh.entries {
		if i > 0 {
			b.WriteByte(',')
		}
		if enc := s.encoded[e.id]; enc != nil {
			b.Write(enc.json)
		} else {
			b.Write(s.tombstones[e.id]) // it left the ledger (journal.go)
		}
	}
	b.WriteByte(']')
	return b.String()
}

// encodedIncident is an incident's JSON as of its revision, and the hash
// of its ID that places it in a shard.
type encodedIncident struct {
	rev  uint64
	json []byte
	hash uint64
	seen uint64 // the shard call that last met it
	fp   string // the incident's fingerprint, for its tombstone
}

// shardEntry is one incident in a shard, as of its revision.
type shardEntry struct {
	id  string
	rev uint64
}

// hashedShard is one hashed shard as a save lays it out: which of the
// save's incidents it holds, at which revisions, and their bytes.
type hashedShard struct {
	part  []int
	holds []shardEntry
	size  int
}

// encode returns every incident's JSON at its revision, reusing what
// was encoded before: most incidents did not change since the last write.
// Incidents gone from the ledger leave the archive.
func (s *ConfigMapStore) encode(incs []*Incident) ([]*encodedIncident, error) {
	s.calls++
	encoded := make([]*encodedIncident, len(incs))
	for i, inc := range incs {
		e := s.encoded[inc.ID]
		if e == nil && s.tombstones[inc.ID] != nil {
			// Back in the ledger after it left: its tombstone must not
			// hide it (journalOrWrite journals it again).
			s.journal.forget(inc.ID)
			delete(s.tombstones, inc.ID)
			s.returned[inc.ID] = true
		}
		if e == nil {
			h := sha256.Sum256([]byte(inc.ID))
			e = &encodedIncident{hash: binary.BigEndian.Uint64(h[:8]), fp: inc.Fingerprint}
			s.encoded[inc.ID] = e
		}
		if e.json == nil || e.rev != inc.rev {
			b, err := encodeForLedger(inc)
			if err != nil {
				return nil, err
			}
			e.rev, e.json = inc.rev, b
		}
		e.seen = s.calls
		encoded[i] = e
	}
	var gone []string
	goneBytes := 0
	for id, e := range s.encoded {
		if e.seen != s.calls {
			delete(s.encoded, id) // gone from the ledger
			s.archive.forget(id)
			s.tombstones[id] = tombstoneOf(id, e.fp)
			goneBytes += len(s.tombstones[id]) + 1
			gone = append(gone, id)
		}
	}
	// A storm's incidents expiring together leave thousands of
	// tombstones in one save: the journal's shards are sealed to fit
	// them, not at the 16 KiB of a journal of few open incidents.
	s.journal.sealAt = max(s.journal.sealAt, sealSize(goneBytes))
	for _, id := range gone {
		s.journal.forget(id)
		s.journal.keep(s.name, id, tombstoneRev, len(s.tombstones[id]))
	}
	return encoded, nil
}

// shard spreads incs[live] over hashed shards, doubling the count until
// each fits.
func (s *ConfigMapStore) shard(incs []*Incident, encoded []*encodedIncident, live []int) (map[string]*hashedShard, error) {
	total := 0
	for _, i := range live {
		total += len(encoded[i].json) + 1
	}
	n := 1
	for n*targetShardBytes < total {
		n *= 2
	}
	for ; ; n *= 2 {
		parts := make([][]int, n)
		sizes := make([]int, n)
		fits := true
		for _, i := range live {
			e := encoded[i]
			k := e.hash % uint64(n)
			parts[k] = append(parts[k], i)
			if sizes[k] += len(e.json) + 1; sizes[k]+1 > MaxShardBytes {
				fits = false
				break
			}
		}
		if fits {
			out := make(map[string]*hashedShard, n)
			for k, part := range parts {
				holds := make([]shardEntry, len(part))
				for j, i := range part {
					holds[j] = shardEntry{id: incs[i].ID, rev: encoded[i].rev}
				}
				out[s.name+"-"+strconv.Itoa(n)+"-"+strconv.Itoa(k)] = &hashedShard{part: part, holds: holds, size: sizes[k]}
			}
			return out, nil
		}
		if n > 4096 {
			return nil, fmt.Errorf("ledger of %d open incidents does not fit %d shards", len(live), n)
		}
	}
}

// build returns the data of a hashed shard.
func (s *ConfigMapStore) build(sh *hashedShard, incs []*Incident, encoded []*encodedIncident) string {
	var b strings.Builder
	b.Grow(sh.size + 2)
	b.WriteByte('[')
	for j, i := range sh.part {
		if j > 0 {
			b.WriteByte(',')
		}
		b.Write(encoded[i].json)
	}
	b.WriteByte(']')
	return b.String()
}

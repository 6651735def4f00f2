package incident

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
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
	holds   map[string][]shardEntry     // hashed shard name → what that data holds
	encoded map[string]*encodedIncident // incident ID → its JSON at the last write
	calls   uint64                      // encode calls so far
	archive *archive
	gen     uint64 // generation of the last save, or the newest loaded

	putBytes func(n int) // told the bytes of every shard written (CountBytes)
}

// CountBytes makes the store tell f the size of the data of every shard
// it writes (herald_ledger_written_bytes_total). Call before Save.
func (s *ConfigMapStore) CountBytes(f func(n int)) { s.putBytes = f }

// NewConfigMapStore makes a store; nothing is read until Load.
func NewConfigMapStore(client *kube.Client, namespace, name string) *ConfigMapStore {
	return &ConfigMapStore{client: client, namespace: namespace, name: name, token: rand.Text(), versions: map[string]string{}, unsureDeletes: map[string]bool{}, recent: map[string][][sha256.Size]byte{},
		written: map[string]string{}, holds: map[string][]shardEntry{}, encoded: map[string]*encodedIncident{},
		archive: newArchive()}
}

func (s *ConfigMapStore) selector() string {
	return ledgerLabel + "=" + ledgerValue + ",herald.io/ledger=" + s.name
}

// Save implements Store. It writes the archive shards with new entries
// first (the filling one, and any that filled up in this save), so that an
// incident moving into the archive is there before it leaves its hashed
// shard, then the hashed shards that changed, then deletes what is no
// longer needed.
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
	s.gen++
	s.fenced = false
	shards, err := s.layout(incs)
	if err != nil {
		return err
	}
	for _, name := range s.archive.unwritten() {
		if err := s.put(ctx, name, s.buildArchive(s.archive.shards[name])); err != nil {
			return err
		}
		s.archive.written(name)
	}
	for name, sh := range shards {
		if s.written[name] != sh.data {
			if err := s.put(ctx, name, sh.data); err != nil {
				return err
			}
		}
		s.wrote(name, sh)
	}
	for name := range s.written {
		if _, ok := shards[name]; ok {
			continue
		}
		if err := s.delete(ctx, name, "old ledger shard"); err != nil {
			return err
		}
		delete(s.written, name)
		delete(s.holds, name)
	}
	for _, name := range s.archive.empty() {
		if err := s.delete(ctx, name, "spent ledger archive shard"); err != nil {
			return err
		}
		s.archive.deleted(name)
	}
	return nil
}

// layout places incs: resolved ones whose deliveries are done in the
// archive, the others in hashed shards, which it returns.
func (s *ConfigMapStore) layout(incs []*Incident) (map[string]shardData, error) {
	encoded, err := s.encode(incs)
	if err != nil {
		return nil, err
	}
	live := make([]int, 0, len(incs))
	for i := range incs {
		if archivable(incs[i]) {
			s.archive.keep(s.name, incs[i].ID, encoded[i].rev, len(encoded[i].json))
		} else {
			s.archive.forget(incs[i].ID)
			live = append(live, i)
		}
	}
	return s.shard(incs, encoded, live)
}

// buildArchive returns the data of an archive shard.
func (s *ConfigMapStore) buildArchive(sh *archiveShard) string {
	var b strings.Builder
	b.Grow(sh.size + 2)
	b.WriteByte('[')
	for i, e := range sh.entries {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(s.encoded[e.id].json)
	}
	b.WriteByte(']')
	return b.String()
}

// wrote records that shard name now holds sh.
func (s *ConfigMapStore) wrote(name string, sh shardData) {
	s.written[name] = sh.data
	s.holds[name] = sh.holds
}

// encodedIncident is an incident's JSON as of its revision, and the hash
// of its ID that places it in a shard.
type encodedIncident struct {
	rev  uint64
	json []byte
	hash uint64
	seen uint64 // the shard call that last met it
}

// shardEntry is one incident in a shard, as of its revision.
type shardEntry struct {
	id  string
	rev uint64
}

// shardData is one shard's content: its data, and which incidents (at
// which revisions) it holds.
type shardData struct {
	data  string
	holds []shardEntry
}

// encode returns every incident's JSON at its revision, reusing what
// was encoded before: most incidents did not change since the last write.
// Incidents gone from the ledger leave the archive.
func (s *ConfigMapStore) encode(incs []*Incident) ([]*encodedIncident, error) {
	s.calls++
	encoded := make([]*encodedIncident, len(incs))
	for i, inc := range incs {
		e := s.encoded[inc.ID]
		if e == nil {
			h := sha256.Sum256([]byte(inc.ID))
			e = &encodedIncident{hash: binary.BigEndian.Uint64(h[:8])}
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
	for id, e := range s.encoded {
		if e.seen != s.calls {
			delete(s.encoded, id) // gone from the ledger
			s.archive.forget(id)
		}
	}
	return encoded, nil
}

// shard spreads incs[live] over hashed shards, doubling the count until
// each fits. A shard holding the same incidents at the same revisions as
// when it was last written is not built again: under churn most are not
// touched.
func (s *ConfigMapStore) shard(incs []*Incident, encoded []*encodedIncident, live []int) (map[string]shardData, error) {
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
			out := make(map[string]shardData, n)
			for k, part := range parts {
				name := s.name + "-" + strconv.Itoa(n) + "-" + strconv.Itoa(k)
				out[name] = s.build(name, part, incs, encoded, sizes[k])
			}
			return out, nil
		}
		if n > 4096 {
			return nil, fmt.Errorf("ledger of %d open incidents does not fit %d shards", len(live), n)
		}
	}
}

// build returns the data of the shard holding incs[part]: what was last
// written if it holds the same incidents at the same revisions.
func (s *ConfigMapStore) build(name string, part []int, incs []*Incident, encoded []*encodedIncident, size int) shardData {
	holds := make([]shardEntry, len(part))
	for j, i := range part {
		holds[j] = shardEntry{id: incs[i].ID, rev: encoded[i].rev}
	}
	if data, ok := s.written[name]; ok && slices.Equal(holds, s.holds[name]) {
		return shardData{data: data, holds: holds}
	}
	var b strings.Builder
	b.Grow(size + 2)
	b.WriteByte('[')
	for j, i := range part {
		if j > 0 {
			b.WriteByte(',')
		}
		b.Write(encoded[i].json)
	}
	b.WriteByte(']')
	return shardData{data: b.String(), holds: holds}
}

package incident

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
)

// ConfigMapStore keeps the ledger in ConfigMaps named <name>-<i> in one
// namespace. Incidents are spread over shards by a hash of their ID, the
// shard count a power of two chosen so each stays under MaxShardBytes;
// only shards whose content changed are written.
type ConfigMapStore struct {
	client    *kube.Client
	namespace string
	name      string

	written map[string]string           // shard name → data last written
	holds   map[string][]shardEntry     // shard name → what that data holds
	encoded map[string]*encodedIncident // incident ID → its JSON at the last write
	calls   uint64                      // shard calls so far
}

// NewConfigMapStore makes a store; nothing is read until Load.
func NewConfigMapStore(client *kube.Client, namespace, name string) *ConfigMapStore {
	return &ConfigMapStore{client: client, namespace: namespace, name: name,
		written: map[string]string{}, holds: map[string][]shardEntry{}, encoded: map[string]*encodedIncident{}}
}

func (s *ConfigMapStore) selector() string {
	return ledgerLabel + "=" + ledgerValue + ",herald.io/ledger=" + s.name
}

// Load implements Store.
func (s *ConfigMapStore) Load(ctx context.Context, warn func(string, ...any)) ([]Incident, error) {
	list, err := s.client.ListConfigMaps(ctx, s.namespace, metav1.ListOptions{LabelSelector: s.selector()})
	if err != nil {
		return nil, fmt.Errorf("reading the ledger ConfigMaps in %s: %w", s.namespace, err)
	}
	var out []Incident
	for _, cm := range list.Items {
		incs, skipped, err := decodeShard(cm.Data[dataKey])
		if err != nil {
			warn("ledger ConfigMap is unreadable; its incidents will be treated as new", "configmap", s.namespace+"/"+cm.Name, "error", err)
			continue
		}
		if skipped > 0 {
			warn("ledger entries without an ID skipped", "configmap", s.namespace+"/"+cm.Name, "entries", skipped)
		}
		out = append(out, incs...)
		s.written[cm.Name] = cm.Data[dataKey]
	}
	return out, nil
}

// decodeShard reads one ledger ConfigMap's incidents, leaving out (and
// counting) entries without the identity everything else keys on.
func decodeShard(data string) (incs []Incident, skipped int, err error) {
	var all []Incident
	if err := json.Unmarshal([]byte(data), &all); err != nil {
		return nil, 0, err
	}
	for _, inc := range all {
		if inc.ID == "" || inc.Fingerprint == "" {
			skipped++
			continue
		}
		incs = append(incs, inc)
	}
	return incs, skipped, nil
}

// Save implements Store.
func (s *ConfigMapStore) Save(ctx context.Context, incs []Incident) error {
	shards, err := s.shard(incs)
	if err != nil {
		return err
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
		err := s.client.DeleteConfigMap(ctx, s.namespace, name)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting old ledger shard %s: %w", name, err)
		}
		delete(s.written, name)
		delete(s.holds, name)
	}
	return nil
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

// shard encodes incs into shards, doubling the count until each fits. A
// shard holding the same incidents at the same revisions as when it was
// last written is not built again: under churn most are not touched.
func (s *ConfigMapStore) shard(incs []Incident) (map[string]shardData, error) {
	s.calls++
	encoded := make([]*encodedIncident, len(incs))
	total := 0
	for i, inc := range incs {
		// Most incidents did not change since the last write: reuse
		// their encoding rather than marshal the whole ledger each time.
		e := s.encoded[inc.ID]
		if e == nil {
			h := sha256.Sum256([]byte(inc.ID))
			e = &encodedIncident{hash: binary.BigEndian.Uint64(h[:8])}
			s.encoded[inc.ID] = e
		}
		if e.json == nil || e.rev != inc.rev {
			b, err := json.Marshal(inc)
			if err != nil {
				return nil, err
			}
			e.rev, e.json = inc.rev, b
		}
		e.seen = s.calls
		encoded[i] = e
		total += len(e.json) + 1
	}
	for id, e := range s.encoded {
		if e.seen != s.calls {
			delete(s.encoded, id) // gone from the ledger
		}
	}
	n := 1
	for n*targetShardBytes < total {
		n *= 2
	}
	for ; ; n *= 2 {
		parts := make([][]int, n)
		sizes := make([]int, n)
		fits := true
		for i, e := range encoded {
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
			return nil, fmt.Errorf("ledger of %d incidents does not fit %d shards", len(incs), n)
		}
	}
}

// build returns the data of the shard holding incs[part]: what was last
// written if it holds the same incidents at the same revisions.
func (s *ConfigMapStore) build(name string, part []int, incs []Incident, encoded []*encodedIncident, size int) shardData {
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

func (s *ConfigMapStore) put(ctx context.Context, name, data string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.namespace, Labels: map[string]string{
			ledgerLabel: ledgerValue, "herald.io/ledger": s.name, "app.kubernetes.io/managed-by": "herald",
		}},
		Data: map[string]string{dataKey: data},
	}
	err := s.client.UpdateConfigMap(ctx, cm)
	if apierrors.IsNotFound(err) {
		_, err = s.client.CreateConfigMap(ctx, cm)
	}
	if err != nil {
		return fmt.Errorf("writing ledger shard %s/%s: %w", s.namespace, name, err)
	}
	return nil
}

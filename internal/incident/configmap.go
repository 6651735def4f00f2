package incident

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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
	client    kubernetes.Interface
	namespace string
	name      string

	written map[string]string          // shard name → data last written
	encoded map[string]encodedIncident // incident ID → its JSON at the last write
}

// NewConfigMapStore makes a store; nothing is read until Load.
func NewConfigMapStore(client kubernetes.Interface, namespace, name string) *ConfigMapStore {
	return &ConfigMapStore{client: client, namespace: namespace, name: name, written: map[string]string{}}
}

func (s *ConfigMapStore) selector() string {
	return ledgerLabel + "=" + ledgerValue + ",herald.io/ledger=" + s.name
}

// Load implements Store.
func (s *ConfigMapStore) Load(ctx context.Context, warn func(string, ...any)) ([]Incident, error) {
	list, err := s.client.CoreV1().ConfigMaps(s.namespace).List(ctx, metav1.ListOptions{LabelSelector: s.selector()})
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
	for name, data := range shards {
		if s.written[name] == data {
			continue
		}
		if err := s.put(ctx, name, data); err != nil {
			return err
		}
		s.written[name] = data
	}
	for name := range s.written {
		if _, ok := shards[name]; ok {
			continue
		}
		err := s.client.CoreV1().ConfigMaps(s.namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting old ledger shard %s: %w", name, err)
		}
		delete(s.written, name)
	}
	return nil
}

// encodedIncident is an incident's JSON as of its revision.
type encodedIncident struct {
	rev  uint64
	json []byte
}

// shard encodes incs into shards, doubling the count until each fits.
func (s *ConfigMapStore) shard(incs []Incident) (map[string]string, error) {
	encoded := make([][]byte, len(incs))
	total := 0
	keep := make(map[string]encodedIncident, len(incs))
	for i, inc := range incs {
		// Most incidents did not change since the last write: reuse
		// their encoding rather than marshal the whole ledger each time.
		e, ok := s.encoded[inc.ID]
		if !ok || e.rev != inc.rev {
			b, err := json.Marshal(inc)
			if err != nil {
				return nil, err
			}
			e = encodedIncident{rev: inc.rev, json: b}
		}
		keep[inc.ID] = e
		encoded[i] = e.json
		total += len(e.json) + 1
	}
	s.encoded = keep
	n := 1
	for n*targetShardBytes < total {
		n *= 2
	}
	for ; ; n *= 2 {
		parts := make([][]string, n)
		for i, inc := range incs {
			h := sha256.Sum256([]byte(inc.ID))
			k := binary.BigEndian.Uint64(h[:8]) % uint64(n)
			parts[k] = append(parts[k], string(encoded[i]))
		}
		out := map[string]string{}
		fits := true
		for k, p := range parts {
			data := "[" + strings.Join(p, ",") + "]"
			if len(data) > MaxShardBytes {
				fits = false
				break
			}
			out[s.name+"-"+strconv.Itoa(n)+"-"+strconv.Itoa(k)] = data
		}
		if fits {
			return out, nil
		}
		if n > 4096 {
			return nil, fmt.Errorf("ledger of %d incidents does not fit %d shards", len(incs), n)
		}
	}
}

func (s *ConfigMapStore) put(ctx context.Context, name, data string) error {
	cms := s.client.CoreV1().ConfigMaps(s.namespace)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.namespace, Labels: map[string]string{
			ledgerLabel: ledgerValue, "herald.io/ledger": s.name, "app.kubernetes.io/managed-by": "herald",
		}},
		Data: map[string]string{dataKey: data},
	}
	_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing ledger shard %s/%s: %w", s.namespace, name, err)
	}
	return nil
}

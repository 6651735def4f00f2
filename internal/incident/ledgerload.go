package incident

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reading the ledger: every shard, the newest copy of each incident.

// Load implements Store.
func (s *ConfigMapStore) Load(ctx context.Context, warn func(string, ...any)) ([]Incident, error) {
	if !s.claimed {
		// A reader: which journal shards are stale, the claim says
		// (Claim read it for the leader).
		claim, err := s.client.GetConfigMap(ctx, s.namespace, s.claimName())
		switch {
		case err == nil:
			s.folds, _ = strconv.ParseUint(claim.Data["folds"], 10, 64)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading the ledger's claim %s/%s: %w", s.namespace, s.claimName(), err)
		}
	}
	list, err := s.client.ListConfigMaps(ctx, s.namespace, metav1.ListOptions{LabelSelector: s.selector()})
	if err != nil {
		return nil, fmt.Errorf("reading the ledger ConfigMaps in %s: %w", s.namespace, err)
	}
	// An incident may have copies in two shards (a stale one in a sealed
	// archive shard, a save that stopped half way, a deposed leader's
	// save): the copy in the shard of the newest (epoch, generation) is
	// the current one.
	type current struct {
		inc   Incident
		gen   [2]uint64
		shard string
	}
	best := map[string]current{}
	var order []string
	// A shard written after the claim's count of folds (the claim was
	// rewritten by an older herald, or deleted by hand) proves that many:
	// the count never goes back, and a stale journal shard stays stale.
	for i := range list.Items {
		folds, _ := strconv.ParseUint(list.Items[i].Annotations[foldsAnnotation], 10, 64)
		s.folds = max(s.folds, folds)
	}
	// Archive and journal shards: name → its number and size.
	type fillAndSeal struct {
		kind    *archive
		n, size int
	}
	sealed := map[string]fillAndSeal{}
	for i := range list.Items {
		cm := &list.Items[i]
		if s.claimed && cm.Annotations[writerAnnotation] != s.token {
			marked, err := s.markShard(ctx, cm)
			if err != nil {
				return nil, err
			}
			if marked == nil {
				continue // deleted since it was listed (its incidents are in another shard)
			}
			cm = marked
		}
		s.versions[cm.Name] = cm.ResourceVersion
		// None: 0, written before generations (or epochs).
		epoch, _ := strconv.ParseUint(cm.Annotations[epochAnnotation], 10, 64)
		counter, _ := strconv.ParseUint(cm.Annotations[generationAnnotation], 10, 64)
		gen := [2]uint64{epoch, counter}
		s.gen = max(s.gen, counter)
		n, isArchive := archiveShardNumber(s.name, cm.Name)
		j, isJournal := fillAndSealNumber(s.name, s.journal.kind, cm.Name)
		switch {
		// Tracked even if unreadable: holding nothing current, it is
		// deleted at the next save (a hashed one is rewritten).
		case isArchive:
			sealed[cm.Name] = fillAndSeal{s.archive, n, len(cm.Data[dataKey])}
		case isJournal:
			sealed[cm.Name] = fillAndSeal{s.journal, j, len(cm.Data[dataKey])}
			if s.staleJournal(cm) {
				continue // holding nothing current: deleted at the next save
			}
		}
		incs, skipped, err := decodeShard(cm.Data[dataKey])
		if err != nil {
			warn("ledger ConfigMap is unreadable; its incidents will be treated as new", "configmap", s.namespace+"/"+cm.Name, "error", err)
			if !isArchive && !isJournal {
				s.written[cm.Name] = "" // rewritten, or deleted if the shard count is another
			}
			continue
		}
		if skipped > 0 {
			warn("ledger entries without an ID skipped", "configmap", s.namespace+"/"+cm.Name, "entries", skipped)
		}
		for _, inc := range incs {
			if isArchive && inc.Ended == EndedWaiting {
				// A herald that did not know waits archived it as
				// history; this one keeps waits in the hashed shards
				// only, so an archived copy is stale (waits.go).
				continue
			}
			b, seen := best[inc.ID]
			if seen && slices.Compare(b.gen[:], gen[:]) > 0 {
				continue
			}
			if !seen {
				order = append(order, inc.ID)
			}
			best[inc.ID] = current{inc: inc, gen: gen, shard: cm.Name}
		}
		if !isArchive && !isJournal {
			s.written[cm.Name] = cm.Data[dataKey]
		}
	}
	holds := map[string][]string{}
	out := make([]Incident, 0, len(order))
	for _, id := range order {
		c := best[id]
		if sh, ok := sealed[c.shard]; ok && (sh.kind == s.journal || archivable(&c.inc)) {
			holds[c.shard] = append(holds[c.shard], id) // a tombstone too: it stays until the journal is folded
		}
		if c.inc.Gone {
			continue // it left the ledger (journal.go)
		}
		out = append(out, c.inc)
	}
	for name, sh := range sealed {
		sh.kind.loaded(name, sh.n, sh.size, holds[name]) // sealed; one holding nothing current goes at the next save
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

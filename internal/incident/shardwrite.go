package incident

// Conditional writes: every write of a ledger shard carries the
// resourceVersion this replica last read or wrote, so a deposed leader
// that has not yet noticed it lost the lease cannot overwrite what the new
// leader wrote (docs/operations.md, "Fencing").

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrConflict: a ledger shard changed since this replica last read or
// wrote it, so another replica leads (or did since). The caller stops
// leading; it must not retry the write, which would overwrite the other
// replica's.
var ErrConflict = errors.New("the ledger changed since this replica read it (another herald replica wrote it, or an edit)")

// conflict says whether err means someone else wrote the shard: it
// changed (Conflict), was created (AlreadyExists) or deleted (NotFound,
// for a shard this replica knows).
func conflict(err error, known bool) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || known && apierrors.IsNotFound(err)
}

// delete deletes a shard, if it is still as this replica last saw it.
func (s *ConfigMapStore) delete(ctx context.Context, name, what string) error {
	if err := s.fence(ctx); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		if _, known := s.versions[name]; !known {
			// Its last write's outcome is unknown: delete it only as read,
			// and only if it is this store's. An unconditional delete
			// answered late would remove whatever has that name by then
			// (a successor's new shard of the same name).
			cm, err := s.client.GetConfigMap(ctx, s.namespace, name)
			if apierrors.IsNotFound(err) {
				s.forgetShard(name)
				return nil
			}
			if err != nil {
				return fmt.Errorf("reading %s %s/%s before deleting it: %w", what, s.namespace, name, err)
			}
			if cm.Annotations[writerAnnotation] != s.token && !s.staleJournal(cm) {
				return fmt.Errorf("deleting %s %s/%s: another writer wrote it: %w", what, s.namespace, name, ErrConflict)
			}
			s.versions[name] = cm.ResourceVersion
		}
		err := s.client.DeleteConfigMap(ctx, s.namespace, name, s.versions[name])
		if err == nil || apierrors.IsNotFound(err) {
			s.forgetShard(name)
			return nil
		}
		if apierrors.IsConflict(err) && attempt < ownWriteRetries {
			mine, rerr := s.mine(ctx, name)
			if rerr != nil {
				return rerr
			}
			if mine {
				continue
			}
		}
		if apierrors.IsConflict(err) {
			return fmt.Errorf("deleting %s %s/%s: %w", what, s.namespace, name, ErrConflict)
		}
		s.unsureDeletes[name] = true // it may have been applied
		return fmt.Errorf("deleting %s %s/%s: %w", what, s.namespace, name, err)
	}
}

// forgetShard drops what the store knows of a shard that is gone.
func (s *ConfigMapStore) forgetShard(name string) {
	delete(s.versions, name)
	delete(s.unsureDeletes, name)
	delete(s.recent, name)
}

// ownWriteRetries bounds how often one write is retried after it was
// refused because of this replica's own earlier write (mine).
const ownWriteRetries = 3

// put writes a shard, conditionally on the version this replica last
// read or wrote. A write whose outcome is unknown (a timeout, a broken
// connection, an answer without a version) leaves that version as it
// was: if the write was applied — even long after, while it was still
// in flight — the next write is refused, and mine finds the shard names
// this replica as its writer and retries. Only a shard another writer
// wrote is a conflict.
func (s *ConfigMapStore) put(ctx context.Context, name, data string) error {
	if err := s.fence(ctx); err != nil {
		return err
	}
	s.attempted(name, data)
	for attempt := 0; ; attempt++ {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.namespace, Labels: map[string]string{
				ledgerLabel: ledgerValue, "herald.io/ledger": s.name, "app.kubernetes.io/managed-by": "herald",
			}, Annotations: map[string]string{
				generationAnnotation: strconv.FormatUint(s.gen, 10),
				epochAnnotation:      strconv.FormatUint(s.epoch, 10),
				writerAnnotation:     s.token,
				foldsAnnotation:      strconv.FormatUint(s.folds, 10),
			}},
			Data: map[string]string{dataKey: data},
		}
		rv, known := s.versions[name]
		var err error
		if known {
			cm.ResourceVersion = rv
			rv, err = s.client.UpdateConfigMap(ctx, cm)
		} else {
			var created *corev1.ConfigMap
			if created, err = s.client.CreateConfigMap(ctx, cm); err == nil {
				rv = created.ResourceVersion
			}
		}
		if err == nil {
			if rv != "" {
				s.versions[name] = rv
			} // else: the next write is refused and learns the version (mine)
			if s.putBytes != nil {
				s.putBytes(len(data))
			}
			return nil
		}
		if conflict(err, known) && attempt < ownWriteRetries {
			mine, rerr := s.mine(ctx, name)
			if rerr != nil {
				return rerr
			}
			if mine {
				continue
			}
		}
		if conflict(err, known) {
			return fmt.Errorf("writing ledger shard %s/%s: %w", s.namespace, name, ErrConflict)
		}
		return fmt.Errorf("writing ledger shard %s/%s: %w", s.namespace, name, err)
	}
}

// recentAttempts is how many of a shard's latest writes (or marks) this
// store remembers: an answer lost, then another write refused, then
// found applied is at most a few writes back.
const recentAttempts = 4

// attempted records that this store is writing data to name.
func (s *ConfigMapStore) attempted(name, data string) {
	sum := digest(data)
	r := append(s.recent[name], sum)
	if len(r) > recentAttempts {
		r = r[len(r)-recentAttempts:]
	}
	s.recent[name] = r
}

// attemptedHere says whether data is one of this store's latest writes
// of name.
func (s *ConfigMapStore) attemptedHere(name, data string) bool {
	return slices.Contains(s.recent[name], digest(data))
}

// digest is the SHA-256 of data, read through a small buffer: a shard is
// up to 900 KiB, and converting it to a []byte for sha256.Sum256 copied
// all of it at every write (a seventh of herald's allocation under churn).
func digest(data string) [sha256.Size]byte {
	h := sha256.New()
	var buf [8 << 10]byte
	for len(data) > 0 {
		n := copy(buf[:], data)
		h.Write(buf[:n])
		data = data[n:]
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// mine reads a shard after a write of it was refused and says whether
// this replica may write it on the version read: it is if this store
// wrote it last — the shard names this store as its writer and holds
// what one of its latest writes sent (an earlier write of this replica,
// whose outcome was unknown, was applied; an edit by hand keeps the
// writer annotation but not the data, and is a conflict) — if it is a
// journal shard of an era the ledger has folded (journal.go) — if it is not a
// ledger shard (a ConfigMap in the
// way — restored from a backup, its labels removed by hand: no replica
// wrote it, and taking it for another's shard would make every leader
// start over in turn), or if it is gone after this replica's own delete
// of unknown outcome.
func (s *ConfigMapStore) mine(ctx context.Context, name string) (bool, error) {
	cm, err := s.client.GetConfigMap(ctx, s.namespace, name)
	if apierrors.IsNotFound(err) {
		if s.unsureDeletes[name] {
			delete(s.versions, name)
			delete(s.unsureDeletes, name)
			return true, nil
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading ledger shard %s/%s after a write of it was refused: %w", s.namespace, name, err)
	}
	if cm.Labels[ledgerLabel] != ledgerValue || s.staleJournal(cm) || cm.Annotations[writerAnnotation] == s.token && s.attemptedHere(name, cm.Data[dataKey]) {
		s.versions[name] = cm.ResourceVersion
		return true, nil
	}
	return false, nil
}

// The ledger's fencing token: the ConfigMap <name>-claim, which each
// leader writes when it takes the ledger over (Claim) and, conditionally
// on the resourceVersion it wrote, again before the first write of every
// save: a deposed leader's next save fails before it writes anything.
// A save already past its claim when the successor claims is stopped by
// the shards themselves: the successor marks every shard before it reads
// them (markShard), so each of them has a version the deposed leader does
// not know. What it can still do is create a shard of a name that did not
// exist when the successor listed them; the successor, creating it in
// turn, takes that for a conflict and starts over (docs/operations.md).

// Claim makes this store the ledger's only writer: from now on, writes of
// any store that claimed it before fail with ErrConflict. The leader calls
// it before it loads the ledger (Load then marks every shard as this
// store's); readers (herald incidents) never do. Each claim opens a new
// epoch, which orders this store's writes after every earlier writer's.
func (s *ConfigMapStore) Claim(ctx context.Context) error {
	s.claimed = true
	cm, err := s.client.GetConfigMap(ctx, s.namespace, s.claimName())
	switch {
	case apierrors.IsNotFound(err):
		s.claimVersion = ""
		s.epoch = 1
	case err != nil:
		return fmt.Errorf("reading the ledger's claim %s/%s: %w", s.namespace, s.claimName(), err)
	default:
		s.claimVersion = cm.ResourceVersion
		s.folds, _ = strconv.ParseUint(cm.Data["folds"], 10, 64) // none: before the journal
		if cm.Data["holder"] != s.token {
			prev, _ := strconv.ParseUint(cm.Data["epoch"], 10, 64) // none: written before epochs
			if prev == math.MaxUint64 {
				// One more would wrap to 0 and order this store's writes
				// before every earlier writer's.
				return fmt.Errorf("the ledger's claim %s/%s holds the last epoch there is (%d, edited by hand?): delete it (kubectl delete configmap -n %s %s) and herald starts the epochs again",
					s.namespace, s.claimName(), prev, s.namespace, s.claimName())
			}
			s.epoch = prev + 1
		}
	}
	return s.touchClaim(ctx)
}

// fence touches the claim once per save, before its first write.
func (s *ConfigMapStore) fence(ctx context.Context) error {
	if !s.claimed || s.fenced {
		return nil
	}
	if err := s.touchClaim(ctx); err != nil {
		return err
	}
	s.fenced = true
	return nil
}

// touchClaim writes the claim, naming this store and its epoch,
// conditionally on the version this store last wrote or read. As with a
// shard, a write of unknown outcome leaves that version: if it was
// applied, the next touch is refused, reads the claim, and goes on only
// if the claim still names this store.
func (s *ConfigMapStore) touchClaim(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		s.claims++
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: s.claimName(), Namespace: s.namespace, ResourceVersion: s.claimVersion,
				Labels: map[string]string{"herald.io/ledger-claim": s.name, "app.kubernetes.io/managed-by": "herald"}},
			Data: map[string]string{"holder": s.token, "epoch": strconv.FormatUint(s.epoch, 10), "writes": strconv.FormatUint(s.claims, 10),
				"folds": strconv.FormatUint(s.folds, 10)},
		}
		var err error
		known := s.claimVersion != ""
		if known {
			var rv string
			if rv, err = s.client.UpdateConfigMap(ctx, cm); err == nil && rv != "" {
				s.claimVersion = rv
			}
		} else {
			var created *corev1.ConfigMap
			if created, err = s.client.CreateConfigMap(ctx, cm); err == nil {
				s.claimVersion = created.ResourceVersion
			}
		}
		if err == nil {
			return nil
		}
		if conflict(err, known) && attempt < ownWriteRetries {
			current, rerr := s.client.GetConfigMap(ctx, s.namespace, s.claimName())
			if rerr != nil && !apierrors.IsNotFound(rerr) {
				return fmt.Errorf("reading the ledger's claim %s/%s after a write of it was refused: %w", s.namespace, s.claimName(), rerr)
			}
			if rerr == nil && current.Data["holder"] == s.token {
				s.claimVersion = current.ResourceVersion // this store's own earlier write
				continue
			}
		}
		if conflict(err, known) {
			return fmt.Errorf("writing the ledger's claim %s/%s: it names another writer: %w", s.namespace, s.claimName(), ErrConflict)
		}
		return fmt.Errorf("writing the ledger's claim %s/%s: %w", s.namespace, s.claimName(), err)
	}
}

// markShard makes a shard this store's before it is read: the mark (its
// writer annotation) is conditional on the version listed and changes the
// shard's version, so every later write of a replica that wrote or read
// it before — a deposed leader, even one already past its claim — is
// refused. It returns the shard as marked (nil if it is gone).
func (s *ConfigMapStore) markShard(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	for attempt := 0; ; attempt++ {
		s.attempted(cm.Name, cm.Data[dataKey]) // a mark of unknown outcome is this store's write too
		marked, err := s.client.AnnotateConfigMap(ctx, s.namespace, cm.Name, cm.ResourceVersion, map[string]string{writerAnnotation: s.token})
		if err == nil {
			return marked, nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("marking ledger shard %s/%s as this replica's: %w", s.namespace, cm.Name, err)
		}
		// Written since it was listed: by a deposed leader finishing a
		// save. Read it again and mark that.
		if attempt == 10 {
			return nil, fmt.Errorf("marking ledger shard %s/%s as this replica's: it keeps changing (another replica is still writing it): %w", s.namespace, cm.Name, ErrConflict)
		}
		if cm, err = s.client.GetConfigMap(ctx, s.namespace, cm.Name); apierrors.IsNotFound(err) {
			return nil, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading ledger shard %s/%s: %w", s.namespace, cm.Name, err)
		}
	}
}

func (s *ConfigMapStore) claimName() string { return s.name + "-claim" }

// Epoch is the ledger epoch this store's claim opened (0 before Claim).
func (s *ConfigMapStore) Epoch() uint64 { return s.epoch }

package incident

// Conditional writes: every write of a ledger shard carries the
// resourceVersion this replica last read or wrote, so a deposed leader
// that has not yet noticed it lost the lease cannot overwrite what the new
// leader wrote (docs/operations.md, "Fencing").

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
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
	if err := s.settle(ctx, name); err != nil {
		return err
	}
	if err := s.fence(ctx); err != nil {
		return err
	}
	err := s.client.DeleteConfigMap(ctx, s.namespace, name, s.versions[name])
	if apierrors.IsConflict(err) {
		return fmt.Errorf("deleting %s %s/%s: %w", what, s.namespace, name, ErrConflict)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s/%s: %w", what, s.namespace, name, err)
	}
	delete(s.versions, name)
	return nil
}

func (s *ConfigMapStore) put(ctx context.Context, name, data string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.namespace, Labels: map[string]string{
			ledgerLabel: ledgerValue, "herald.io/ledger": s.name, "app.kubernetes.io/managed-by": "herald",
		}, Annotations: map[string]string{generationAnnotation: strconv.FormatUint(s.gen, 10)}},
		Data: map[string]string{dataKey: data},
	}
	if err := s.settle(ctx, name); err != nil {
		return err
	}
	if err := s.fence(ctx); err != nil {
		return err
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
	if !known && apierrors.IsAlreadyExists(err) {
		if adopted, aerr := s.adopt(ctx, name); aerr != nil || adopted {
			if aerr != nil {
				return aerr
			}
			return s.put(ctx, name, data)
		}
	}
	if conflict(err, known) {
		return fmt.Errorf("writing ledger shard %s/%s: %w", s.namespace, name, ErrConflict)
	}
	if err != nil || rv == "" {
		// Unknown whether it was applied (or the answer did not say its
		// version): the next write to the shard reads it first.
		s.unsure[name] = data
		if err == nil {
			return nil
		}
		return fmt.Errorf("writing ledger shard %s/%s: %w", s.namespace, name, err)
	}
	s.versions[name] = rv
	return nil
}

// adopt takes over a ConfigMap named like a shard that is not a ledger
// shard (its labels were removed by hand, a backup restored one): no
// other replica wrote it, so it is overwritten — conditionally on the
// version read here — rather than taken for a conflict, which would make
// every leader start over in turn. A ledger shard is left alone (false).
func (s *ConfigMapStore) adopt(ctx context.Context, name string) (bool, error) {
	cm, err := s.client.GetConfigMap(ctx, s.namespace, name)
	if err != nil {
		return false, fmt.Errorf("reading %s/%s, which is in the way of a ledger shard: %w", s.namespace, name, err)
	}
	if cm.Labels[ledgerLabel] == ledgerValue {
		return false, nil
	}
	s.versions[name] = cm.ResourceVersion
	return true, nil
}

// settle learns whether a write to name whose outcome was unknown was
// applied: if the shard holds what it wrote, its resourceVersion is this
// replica's to write on; otherwise the one known before stays, and the
// next write conflicts if another replica wrote meanwhile.
func (s *ConfigMapStore) settle(ctx context.Context, name string) error {
	data, ok := s.unsure[name]
	if !ok {
		return nil
	}
	cm, err := s.client.GetConfigMap(ctx, s.namespace, name)
	if apierrors.IsNotFound(err) {
		delete(s.unsure, name) // not applied (or deleted since: the write will say)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ledger shard %s/%s after a write that may not have been applied: %w", s.namespace, name, err)
	}
	if cm.Data[dataKey] == data {
		s.versions[name] = cm.ResourceVersion
	}
	delete(s.unsure, name)
	return nil
}

// The ledger's fencing token: the ConfigMap <name>-claim, which each
// leader writes when it takes the ledger over (Claim) and, conditionally
// on the resourceVersion it wrote, again before the first write of every
// save. A shard's creation cannot be conditional on a resourceVersion, and
// a shard the new leader has not written yet still has the version the
// old one knows; the claim is what makes a deposed leader's save fail
// before it writes anything. (Not atomic with the shards: a save already
// past its claim when the successor claims can still land; the fence in
// time — docs/operations.md — is what keeps that from happening.)

// Claim makes this store the ledger's only writer: from now on, writes of
// any store that claimed it before fail with ErrConflict. The leader calls
// it once it has loaded the ledger; readers (herald incidents) never do.
func (s *ConfigMapStore) Claim(ctx context.Context) error {
	s.claimed, s.claimUnsure = true, false
	if s.token == "" {
		s.token = rand.Text()
	}
	cm, err := s.client.GetConfigMap(ctx, s.namespace, s.claimName())
	switch {
	case apierrors.IsNotFound(err):
		s.claimVersion = ""
	case err != nil:
		return fmt.Errorf("reading the ledger's claim %s/%s: %w", s.namespace, s.claimName(), err)
	default:
		s.claimVersion = cm.ResourceVersion
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

// touchClaim writes the claim, naming this store, conditionally on the
// version this store last wrote or read.
func (s *ConfigMapStore) touchClaim(ctx context.Context) error {
	if s.claimUnsure {
		// The last write's outcome is unknown: the claim is still this
		// store's only if it names it.
		cm, err := s.client.GetConfigMap(ctx, s.namespace, s.claimName())
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading the ledger's claim %s/%s: %w", s.namespace, s.claimName(), err)
		}
		if err != nil || cm.Data["holder"] != s.token {
			return fmt.Errorf("the ledger's claim %s/%s names another writer: %w", s.namespace, s.claimName(), ErrConflict)
		}
		s.claimVersion, s.claimUnsure = cm.ResourceVersion, false
	}
	s.claims++
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: s.claimName(), Namespace: s.namespace, ResourceVersion: s.claimVersion,
			Labels: map[string]string{"herald.io/ledger-claim": s.name, "app.kubernetes.io/managed-by": "herald"}},
		Data: map[string]string{"holder": s.token, "writes": strconv.FormatUint(s.claims, 10)},
	}
	var err error
	known := s.claimVersion != ""
	if known {
		var rv string
		if rv, err = s.client.UpdateConfigMap(ctx, cm); err == nil {
			// An answer without its version: read the claim before
			// writing it again (a write with no version would create it).
			s.claimVersion, s.claimUnsure = rv, rv == ""
		}
	} else {
		var created *corev1.ConfigMap
		if created, err = s.client.CreateConfigMap(ctx, cm); err == nil {
			s.claimVersion = created.ResourceVersion
		}
	}
	if conflict(err, known) {
		return fmt.Errorf("writing the ledger's claim %s/%s: %w", s.namespace, s.claimName(), ErrConflict)
	}
	if err != nil {
		s.claimUnsure = true
		return fmt.Errorf("writing the ledger's claim %s/%s: %w", s.namespace, s.claimName(), err)
	}
	return nil
}

func (s *ConfigMapStore) claimName() string { return s.name + "-claim" }

package volumes

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

type claimKey struct{ namespace, name string }

// claim is what is known of one claim's volume.
type claim struct {
	samples   []rules.VolumeSample // oldest first, one per measurement
	node, pod string               // where the last sample was read
}

// samplesPerWindow bounds one claim's samples whatever the interval and
// window: a sample closer than window/samplesPerWindow to the one before
// is not kept (at the defaults, one a minute for an hour: every one).
const samplesPerWindow = 60

// maxClaims bounds the claims kept (about 3.5 KB each with a full
// window); more are not measured, and said.
const maxClaims = 20_000

// Store holds the claims' samples for the detector (rules.VolumeStats).
// The poller writes; workers read.
type Store struct {
	mu     sync.RWMutex
	claims map[claimKey]*claim
	// measuring: every node has been read since this replica began to
	// lead (rules.VolumeStats.Measuring).
	measuring atomic.Bool
}

// Measuring says whether every node has been read since the poller
// started (this replica's term as leader).
func (s *Store) Measuring() bool { return s.measuring.Load() }

// NewStore returns an empty store.
func NewStore() *Store { return &Store{claims: map[claimKey]*claim{}} }

// Usage returns a copy of a claim's samples.
func (s *Store) Usage(namespace, name string) (rules.VolumeUsage, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.claims[claimKey{namespace, name}]
	if !ok || len(c.samples) == 0 {
		return rules.VolumeUsage{}, false
	}
	return rules.VolumeUsage{Samples: append([]rules.VolumeSample(nil), c.samples...), Node: c.node, Pod: c.pod}, true
}

// Len is how many claims are known.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.claims)
}

// add records a node's reading; it says whether it is a new measurement
// (not one the kubelet served before, nor one closer than spacing to the
// last kept), and whether the store was full.
func (s *Store) add(node string, r reading, spacing time.Duration) (added, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.claims[r.claim]
	if !ok {
		if len(s.claims) >= maxClaims {
			return false, true
		}
		c = &claim{}
		s.claims[r.claim] = c
	}
	if n := len(c.samples); n > 0 && r.sample.At.Before(c.samples[n-1].At.Add(max(spacing, time.Nanosecond))) {
		return false, false // the kubelet's cached figure again, an older one, or too soon
	}
	if len(c.samples) > samplesPerWindow {
		c.samples = append(c.samples[:0], c.samples[1:]...)
	}
	c.samples = append(c.samples, r.sample)
	c.node, c.pod = node, r.pod
	return true, false
}

// forget drops the samples older than keep, and the claims left without
// any (no kubelet has measured them within the window: no pod mounts
// them any longer). A claim its pod stopped mounting for a while (a
// restart, a move to another node) keeps its samples meanwhile. It
// returns the claims dropped.
func (s *Store) forget(now time.Time, keep time.Duration) []claimKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []claimKey
	from := now.Add(-keep)
	for k, c := range s.claims {
		i := 0
		for i < len(c.samples) && c.samples[i].At.Before(from) {
			i++
		}
		if i > 0 {
			c.samples = append(c.samples[:0], c.samples[i:]...)
		}
		if len(c.samples) == 0 {
			delete(s.claims, k)
			gone = append(gone, k)
		}
	}
	return gone
}

// clear drops every claim (no rule reads them any longer).
func (s *Store) clear() []claimKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	gone := make([]claimKey, 0, len(s.claims))
	for k := range s.claims {
		gone = append(gone, k)
	}
	clear(s.claims)
	return gone
}

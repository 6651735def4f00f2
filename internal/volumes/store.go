package volumes

import (
	"sync"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

type claimKey struct{ namespace, name string }

// claim is what is known of one claim's volume.
type claim struct {
	samples   []rules.VolumeSample // oldest first, one per measurement
	node, pod string               // where the last sample was read
}

// maxSamples bounds one claim's samples whatever the interval and
// window (a day at one a minute is 1,440; 4 h at the default is 240).
const maxSamples = 720

// maxClaims bounds the claims kept; more are not measured, and said.
const maxClaims = 200_000

// Store holds the claims' samples for the detector (rules.VolumeStats).
// The poller writes; workers read.
type Store struct {
	mu     sync.RWMutex
	claims map[claimKey]*claim
}

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
// (not one the kubelet served before), and whether the store was full.
func (s *Store) add(node string, r reading) (added, full bool) {
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
	if n := len(c.samples); n > 0 && !r.sample.At.After(c.samples[n-1].At) {
		return false, false // the kubelet's cached figure again (or an older one)
	}
	if len(c.samples) == maxSamples {
		c.samples = append(c.samples[:0], c.samples[1:]...)
	}
	c.samples = append(c.samples, r.sample)
	c.node, c.pod = node, r.pod
	return true, false
}

// forget drops what a round says is gone: the samples older than keep,
// the claims left without any, and those whose last node answered
// without them (no pod there mounts them any longer) unless another node
// reported them. It returns the claims dropped.
func (s *Store) forget(now time.Time, keep time.Duration, answered map[string]bool, reported map[claimKey]bool) []claimKey {
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
		if len(c.samples) == 0 || (answered[c.node] && !reported[k]) {
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

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
	samples   []sample // oldest first, one per measurement
	node, pod string   // where the last sample was read
}

// sample is a rules.VolumeSample in 40 bytes rather than 56 (the time
// in Unix nanoseconds): a claim holds up to 61 of them.
type sample struct {
	at                                      int64
	capacity, available, inodes, inodesFree int64
}

func compact(s rules.VolumeSample) sample {
	return sample{at: s.At.UnixNano(), capacity: s.Capacity, available: s.Available, inodes: s.Inodes, inodesFree: s.InodesFree}
}

func (s sample) expand() rules.VolumeSample {
	return rules.VolumeSample{At: time.Unix(0, s.at), Capacity: s.capacity, Available: s.available, Inodes: s.inodes, InodesFree: s.inodesFree}
}

// samplesPerWindow bounds one claim's samples whatever the interval and
// window: a sample closer than window/samplesPerWindow to the one before
// is not kept (at the defaults, one a minute for an hour: every one).
const samplesPerWindow = 60

// maxClaims bounds the claims kept (under 3 KB each with a full window,
// BenchmarkStoreMemory); more are not measured, and said.
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
	out := make([]rules.VolumeSample, len(c.samples))
	for i, smp := range c.samples {
		out[i] = smp.expand()
	}
	return rules.VolumeUsage{Samples: out, Node: c.node, Pod: c.pod}, true
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
		c = &claim{samples: make([]sample, 0, samplesPerWindow+1)}
		s.claims[r.claim] = c
	}
	at := r.sample.At.UnixNano()
	if n := len(c.samples); n > 0 && at < c.samples[n-1].at+int64(max(spacing, time.Nanosecond)) {
		return false, false // the kubelet's cached figure again, an older one, or too soon
	}
	if len(c.samples) > samplesPerWindow {
		c.samples = append(c.samples[:0], c.samples[1:]...)
	}
	c.samples = append(c.samples, compact(r.sample))
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
	from := now.Add(-keep).UnixNano()
	for k, c := range s.claims {
		i := 0
		for i < len(c.samples) && c.samples[i].at < from {
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

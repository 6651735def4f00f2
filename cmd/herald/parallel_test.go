package main

import (
	"os"
	"sync"
	"testing"

	"github.com/herald-k8s/herald/internal/testenv"
)

// controlPlanes are the tests' control planes: a test that ends gives its
// own back, emptied, for the next (testenv.Pool). Tests that restart the
// API server or etcd, or need other Options (an audit log), start theirs
// with testenv.Start.
var controlPlanes testenv.Pool

func TestMain(m *testing.M) {
	code := m.Run()
	controlPlanes.Close()
	os.Exit(code)
}

// The end-to-end tests wait on timers far more than they compute, so
// they run side by side (t.Parallel), each with its own control plane.
// How many at once is set here, not by go test's -parallel (make test
// gives a -parallel high enough for all): side by side they share two
// cores, and a test that puts a storm or a failover under load asserts
// latencies that hold only while the machine is not saturated. A test
// weighs what it loads the machine with: 1, or 2 for those (heavy); at
// most testCapacity is running, taken in the order the tests asked.

const testCapacity = 4

// beside runs t beside the other tests, with weight 1.
func beside(t *testing.T) { runBeside(t, 1) }

// besideHeavy runs t beside the other tests, with weight 2: a storm,
// a failover or an outage under load.
func besideHeavy(t *testing.T) { runBeside(t, 2) }

func runBeside(t *testing.T, weight int) {
	t.Parallel()
	testSlots.take(weight)
	t.Cleanup(func() { testSlots.give(weight) })
}

// testSlots is a weighted semaphore served in arrival order.
var testSlots = newFIFOSemaphore(testCapacity)

func newFIFOSemaphore(capacity int) *fifoSemaphore {
	s := &fifoSemaphore{free: capacity}
	s.cond = sync.NewCond(&s.mu)
	return s
}

type fifoSemaphore struct {
	mu      sync.Mutex
	cond    *sync.Cond
	free    int
	next    uint64 // the ticket being served
	tickets uint64 // tickets handed out
}

func (s *fifoSemaphore) take(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ticket := s.tickets
	s.tickets++
	for ticket != s.next || s.free < n {
		s.cond.Wait()
	}
	s.free -= n
	s.next++
	s.cond.Broadcast()
}

func (s *fifoSemaphore) give(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free += n
	s.cond.Broadcast()
}

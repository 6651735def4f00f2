package main

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	if heraldBinary.dir != "" {
		os.RemoveAll(heraldBinary.dir)
	}
	os.Exit(code)
}

// The end-to-end tests wait on timers far more than they compute, so
// they run side by side (t.Parallel), each with a control plane to
// itself. How many at once is set here, not by go test's -parallel (make
// test gives a -parallel high enough for all): side by side they share
// two cores, and a test that puts a storm or a failover under load
// asserts latencies that hold only while the machine is not saturated. A
// test weighs what it loads the machine with: 1, or 2 for those (heavy);
// at most testCapacity is running. A test that measures herald's latency
// under a storm runs alone (alone), normally after the others: the heralds of
// this package run in one process, under the race detector, on the same
// two cores, so a storm beside another heavy test measured the other
// test (a p50 of 1.4 s for what takes 60 ms alone).
//
// The longest start first (longestFirst), then the others in the order
// they asked: served in the order of the test files, a 4-minute test
// in splitbrain_test.go started when most others were done and ran
// nearly alone to the end.

const testCapacity = 4

// longestFirst are the tests that take longest, longest first (go test
// -race -v ./cmd/herald, 2026-11-29): the heavy ones, then light ones of
// more than 20 s.
var longestFirst = []string{
	"TestNoSplitBrain", "TestAPIServerRestartUnderLoad", "TestSIGKILLAtRandomPoints",
	"TestRollingRestartUnderLoad", "TestFailoverUnderLoad", "TestEtcdOutage",
	"TestNoPerEventAPICalls",
	"TestForWaitSurvivesRestartAndFailover", "TestHostileObjects",
	"TestFlappingCrashLoopIsOneIncident", "TestMuting", "TestHotReload",
	"TestSlackPressExactlyOnceAcrossFailover", "TestOnCallDestinations",
	"TestIntakeFailover", "TestPrometheusAlertEndToEnd", "TestMissedCronJobRun", "TestCertificates",
}

// beside runs t beside the other tests, with weight 1.
func beside(t *testing.T) { runBeside(t, 1) }

// besideHeavy runs t beside the other tests, with weight 2: a storm,
// a failover or an outage under load.
func besideHeavy(t *testing.T) { runBeside(t, 2) }

// alone runs t with no other test of this package beside it. Its rank is
// after every other's, so once the tests have all asked for their slots
// (as under make test's -parallel) it starts when the others are done,
// as are most other packages; under go test's default -parallel (the
// number of cores) it may come earlier, still alone.
func alone(t *testing.T) {
	t.Parallel()
	testSlots.take(testCapacity, len(longestFirst)+1)
	t.Cleanup(func() { testSlots.give(testCapacity) })
}

func runBeside(t *testing.T, weight int) {
	t.Parallel()
	rank := slices.Index(longestFirst, t.Name())
	if rank < 0 {
		rank = len(longestFirst)
	}
	testSlots.take(weight, rank)
	t.Cleanup(func() { testSlots.give(weight) })
}

// testSlots is a weighted semaphore served by rank, then in arrival
// order: the first waiting ticket is served first, whatever the weight
// of those behind it.
var testSlots = newSlotQueue(testCapacity)

func newSlotQueue(capacity int) *slotQueue {
	s := &slotQueue{free: capacity}
	s.cond = sync.NewCond(&s.mu)
	return s
}

type slotQueue struct {
	mu       sync.Mutex
	cond     *sync.Cond
	free     int
	waiting  []*ticket // in the order they are served
	arrivals int
}

type ticket struct{ weight, rank, arrival int }

func (s *slotQueue) take(weight, rank int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	me := &ticket{weight: weight, rank: rank, arrival: s.arrivals}
	s.arrivals++
	s.waiting = append(s.waiting, me)
	slices.SortFunc(s.waiting, func(a, b *ticket) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.arrival, b.arrival))
	})
	for s.waiting[0] != me || s.free < weight {
		s.cond.Wait()
	}
	s.free -= weight
	s.waiting = s.waiting[1:]
	s.cond.Broadcast()
}

func (s *slotQueue) give(weight int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free += weight
	s.cond.Broadcast()
}

// TestSlotQueueServesByRank: a ticket of a better rank that asked later is
// served first, and a heavy ticket at the head is not passed by lighter
// ones that would fit.
func TestSlotQueueServesByRank(t *testing.T) {
	q := newSlotQueue(2)
	q.take(2, 0) // full
	served := make(chan string, 3)
	ask := func(name string, weight, rank int) { // and wait until it waits
		q.mu.Lock()
		before := q.arrivals
		q.mu.Unlock()
		go func() { q.take(weight, rank); served <- name }()
		waitUntil(t, name+" to wait", func() bool { q.mu.Lock(); defer q.mu.Unlock(); return q.arrivals > before })
	}
	ask("light, asked first", 1, 9)
	ask("heavy, ranked first", 2, 0)
	ask("light, asked last", 1, 9)
	q.give(1) // one unit free: the heavy ticket at the head does not fit, and no one passes it
	q.give(1)
	if got := <-served; got != "heavy, ranked first" {
		t.Fatalf("served first: %s", got)
	}
	q.give(2)
	if a, b := <-served, <-served; a != "light, asked first" || b != "light, asked last" {
		t.Errorf("then served %q, %q; want the lights in the order they asked", a, b)
	}
}

// TestLongestFirstNamesTests: every name in longestFirst is a test of
// this package (a renamed test would silently lose its rank).
func TestLongestFirstNamesTests(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(data)
	}
	for _, name := range longestFirst {
		if !strings.Contains(all.String(), "\nfunc "+name+"(t *testing.T) {") {
			t.Errorf("longestFirst names %s, which is not a test here", name)
		}
	}
}

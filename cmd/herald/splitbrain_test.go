package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/sinks"
)

// replicaArrival is one webhook request as the receiver saw it.
type replicaArrival struct {
	at      time.Time
	replica string // its Herald-Replica header
	p       sinks.Payload
}

// slot is one of the three replicas: a POD_NAME, its own fault proxy to
// the API server, and the process running there now.
type slot struct {
	name  string
	proxy *faultProxy
	kc    string
	r     *replica
}

// leaderChange is one handover of the Lease: how the leader was deposed,
// who took over and when (the Lease's acquireTime, which the successor
// wrote with this machine's clock), and how many notifications the
// deposed leader had queued just before.
type leaderChange struct {
	how, from, to string
	deposed       time.Time // when the test began to depose it
	acquired      time.Time
	backlog       float64
}

// maxLatency is the most the fault proxies add to a replica's requests
// and their answers, but for the requests they hold and then let through.
const maxLatency = 3 * time.Second

// TestNoSplitBrain: three replicas, each reaching the API server through a
// fault proxy of its own, notify a crash storm (1,200 transitions) while
// the leader is deposed 18 times, three times each way — cut off from the
// API server, SIGKILLed, slowed by 3 s each way so its renewals fail,
// answered 2.9 s late (its renewals applied at once) and then cut off,
// frozen (SIGSTOP) past its Lease and resumed once its successor
// notifies, or its requests held until its successor has claimed the
// ledger and then let through — and the receiver takes 50 ms a request, so a deposed leader has a
// backlog (at least one must have had one queued). Each delivery says
// which replica sent it (Herald-Replica). Shown, for every handover: the
// deposed leader's last delivery arrived before its successor took the
// Lease (the Lease's acquireTime), so before the successor's first too;
// nothing is lost; a notification is repeated only with its first
// idempotency key, by another replica, only if its first delivery fell
// after its sender's last ledger write (one batch), and each deposed
// leader left at most 50 unrecorded deliveries to send again (the ledger
// gate); every ledger write of the deposed leader that reached the API
// server after its successor claimed the ledger was refused there (and
// some did).
func TestNoSplitBrain(t *testing.T) {
	if testing.Short() {
		t.Skip("three processes through fault proxies under a crash storm, a dozen handovers")
	}
	besideHeavy(t)
	h := newLoadHarnessWith(t, harnessOptions{replicas: 0, env: testenv.Options{Audit: true}})
	var arrivals []replicaArrival
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		at := time.Now()
		// A slow receiver (50 ms a request), so that a leader has a
		// backlog to send when it is deposed, as with a slow chat API.
		select {
		case <-time.After(50 * time.Millisecond):
		case <-req.Context().Done():
		}
		var p sinks.Payload
		if err := json.NewDecoder(req.Body).Decode(&p); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		arrivals = append(arrivals, replicaArrival{at, req.Header.Get("Herald-Replica"), p})
		h.got = append(h.got, delivery{at, p})
		h.mu.Unlock()
	}))
	t.Cleanup(recv.Close)
	cfg, err := os.ReadFile(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	webhookURL := strings.Split(strings.Split(string(cfg), "url: ")[1], "/herald")[0]
	os.WriteFile(h.cfg, []byte(strings.ReplaceAll(string(cfg), webhookURL, recv.URL)), 0o600)

	api := strings.TrimPrefix(h.env.Config.Host, "https://")
	slots := make([]*slot, 3)
	for i := range slots {
		s := &slot{name: fmt.Sprintf("replica-%d", i), proxy: newFaultProxy(t, api), kc: filepath.Join(h.dir, fmt.Sprintf("kubeconfig-%d", i))}
		viaProxy := rest.CopyConfig(h.env.Config)
		viaProxy.Host = "https://" + s.proxy.addr
		if err := testenv.WriteKubeconfigOf(s.kc, viaProxy); err != nil {
			t.Fatal(err)
		}
		s.r = h.startEnv([]string{"POD_NAME=" + s.name}, "--kubeconfig", s.kc)
		slots[i] = s
	}
	ctx := context.Background()
	holder := func() string {
		l, err := h.client.CoordinationV1().Leases("default").Get(ctx, "herald", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	newLeader := func(old string) (string, time.Time) {
		var next string
		var acquired time.Time
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			l, err := h.client.CoordinationV1().Leases("default").Get(ctx, "herald", metav1.GetOptions{})
			if err != nil || l.Spec.HolderIdentity == nil || l.Spec.AcquireTime == nil {
				return false, nil
			}
			next, acquired = *l.Spec.HolderIdentity, l.Spec.AcquireTime.Time
			return next != "" && next != old, nil
		})
		if err != nil {
			t.Fatalf("no new leader a minute after %s was deposed", old)
		}
		return next, acquired
	}
	delivered := func(replica string) bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return slices.ContainsFunc(arrivals, func(a replicaArrival) bool { return a.replica == replica })
	}
	slotOf := func(identity string) *slot {
		for _, s := range slots {
			if strings.HasPrefix(identity, s.name+"_") {
				return s
			}
		}
		t.Fatalf("the Lease names %q, none of the replicas", identity)
		return nil
	}

	modes := []string{"cut off", "SIGKILL", "slowed", "slow answers, then cut off", "frozen", "held, then let through"}
	var changes []leaderChange
	current, _ := newLeader("")
	start := time.Now()
	want := h.loadShaped(200, 6, 30*time.Second, func() {
		for i := 0; len(changes) < 3*len(modes); i++ {
			// Depose the leader once it has notified and its ledger has
			// recorded some of that (two writes), so that every handover
			// has a before and an after to compare, and the successor a
			// ledger to start from: a leader deposed before its first
			// write hands over nothing (its successor starts afresh).
			s := slotOf(current)
			wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				return delivered(current) && ledgerWritesOf(s.r) >= 2, nil
			})
			how := modes[i%len(modes)]
			backlog := scrape(s.r, `herald_sink_queue_depth{sink="hook"}`)
			deposed := time.Now()
			var next string
			var acquired time.Time
			switch how {
			case "cut off":
				s.proxy.cut()
			case "SIGKILL":
				s.r.cmd.Process.Signal(syscall.SIGKILL)
			case "slowed":
				s.proxy.setLatency(maxLatency)
			case "slow answers, then cut off":
				// Renewals are applied at once but answered 2.9 s later,
				// within the 3 s renew deadline; then the leader is cut
				// off. A holder that timed its hold from the answer (or
				// from its next attempt) would believe it leads well
				// past the moment a follower may take over.
				s.proxy.setAnswerLatency(2900 * time.Millisecond)
				wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 4*time.Second, true, func(context.Context) (bool, error) {
					return holder() != current, nil
				})
				s.proxy.cut()
			case "frozen":
				// Paused (as by a long GC, CPU starvation or a frozen
				// VM) past its Lease, with notifications queued; it
				// resumes once the successor notifies. Every goroutine
				// whose timer expired wakes at once: whichever reaches a
				// sink first must find the hold over.
				s.r.cmd.Process.Signal(syscall.SIGSTOP)
				next, acquired = newLeader(current)
				wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
					return delivered(next), nil
				})
				s.r.cmd.Process.Signal(syscall.SIGCONT)
			case "held, then let through":
				// Everything the leader sends the API server (and every
				// answer) is held past its Lease and its successor's
				// claim of the ledger, then let through: ledger writes
				// it made while it still led reach the API server late,
				// behind its successor's, and must be refused there.
				s.proxy.hold()
				next, acquired = newLeader(current)
				wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
					return ledgerWritesOf(slotOf(next).r) >= 1, nil
				})
				s.proxy.release()
			}
			if next == "" {
				next, acquired = newLeader(current)
			}
			changes = append(changes, leaderChange{how, current, next, deposed, acquired, backlog})
			t.Logf("handover %d (%s): %s → %s", len(changes), how, current, next)
			current = next
			s.proxy.setLatency(0)
			s.proxy.setAnswerLatency(0)
			s.proxy.restore()
			select {
			case <-s.r.done: // killed, or gave up while cut off
				s.r = h.startEnv([]string{"POD_NAME=" + s.name}, "--kubeconfig", s.kc)
			default: // started over by itself, as a candidate
			}
		}
	})
	deliveries, dups := h.checkWithin(want, 2*time.Minute)
	t.Logf("%d transitions over %s: %d deliveries, %d repeated (same key), %d handovers",
		len(want), time.Since(start).Round(time.Second), deliveries, dups, len(changes))
	if !slices.ContainsFunc(changes, func(c leaderChange) bool { return c.backlog > 0 }) {
		t.Error("no deposed leader had notifications queued: the test shows nothing of what a deposed leader would still send")
	}

	// A replica deposed without being killed started over in the same
	// process; its count of start-overs survived the exec.
	startOvers := 0.0
	for _, s := range slots {
		startOvers += scrape(s.r, `herald_start_overs_total{reason="lease_lost"}`)
	}
	if startOvers == 0 {
		t.Error("no replica counts a start-over after a lost lease (herald_start_overs_total)")
	}
	t.Logf("start-overs after a lost lease, counted by the live replicas: %v", startOvers)

	h.mu.Lock()
	got := slices.Clone(arrivals)
	h.mu.Unlock()
	writes := ledgerWrites(t, h.env.AuditLog())
	checkNoOverlap(t, got)
	checkStoppedBeforeTakeover(t, changes, got)
	checkRepeats(t, got, writes, changes)
	checkDeposedWritesRefused(t, changes, writes)
}

// checkStoppedBeforeTakeover: each deposed leader's last delivery reached
// the receiver before its successor took the Lease — not merely before
// the successor's first delivery, which its start-up delays.
func checkStoppedBeforeTakeover(t *testing.T, changes []leaderChange, got []replicaArrival) {
	t.Helper()
	for i, c := range changes {
		var last time.Time
		n := 0
		for _, a := range got {
			if a.replica == c.from {
				last, n = a.at, n+1
			}
		}
		if !last.Before(c.acquired) {
			t.Errorf("handover %d (%s): %s delivered until %s, after %s took the Lease at %s", i+1, c.how, c.from,
				last.Format("15:04:05.000"), c.to, c.acquired.Format("15:04:05.000"))
		} else {
			t.Logf("handover %d (%s): %s (%v queued when deposed, %d delivered) stopped %s before %s took the Lease", i+1, c.how, c.from,
				c.backlog, n, c.acquired.Sub(last).Round(time.Millisecond), c.to)
		}
	}
}

var metricsAddrLine = regexp.MustCompile(`"msg":"serving metrics and health","addr":"([^"]+)"`)

// scrape reads one sample of r's current process's /metrics (a process
// that started over serves its metrics anew); 0 if it cannot be read.
func scrape(r *replica, sample string) float64 {
	all := metricsAddrLine.FindAllStringSubmatch(r.logs(), -1)
	if len(all) == 0 {
		return 0
	}
	v, _ := scrapeMetric(all[len(all)-1][1], sample)
	return v
}

func ledgerWritesOf(r *replica) float64 { return scrape(r, "herald_ledger_writes_total") }

// checkNoOverlap: the deliveries of each replica term (identity) fall in
// an interval, and no two intervals overlap.
func checkNoOverlap(t *testing.T, got []replicaArrival) {
	t.Helper()
	type term struct {
		replica     string
		first, last time.Time
		n           int
	}
	terms := map[string]*term{}
	for _, a := range got {
		if a.replica == "" {
			t.Fatalf("a delivery without Herald-Replica: %s", a.p.ID)
		}
		tm := terms[a.replica]
		if tm == nil {
			tm = &term{replica: a.replica, first: a.at}
			terms[a.replica] = tm
		}
		tm.last, tm.n = a.at, tm.n+1
	}
	ordered := slices.SortedFunc(func(yield func(*term) bool) {
		for _, tm := range terms {
			if !yield(tm) {
				return
			}
		}
	}, func(a, b *term) int { return a.first.Compare(b.first) })
	for i := 1; i < len(ordered); i++ {
		prev, next := ordered[i-1], ordered[i]
		if !prev.last.Before(next.first) {
			t.Errorf("split brain: %s delivered until %s, %s from %s (%s of overlap)", prev.replica, prev.last.Format("15:04:05.000"),
				next.replica, next.first.Format("15:04:05.000"), prev.last.Sub(next.first).Round(time.Millisecond))
		} else {
			t.Logf("%s: %d deliveries until %s; %s from %s (gap %s)", prev.replica, prev.n, prev.last.Format("15:04:05.000"),
				next.replica, next.first.Format("15:04:05.000"), next.first.Sub(prev.last).Round(time.Millisecond))
		}
	}
}

// checkRepeats: a notification delivered twice was first sent by a
// replica that could not record it: after (within one ledger batch and
// the proxy's latency before) that replica's last successful write of a
// ledger shard.
// The same replica never sends one twice.
func checkRepeats(t *testing.T, got []replicaArrival, writes []ledgerWrite, changes []leaderChange) {
	t.Helper()
	lastOK := map[string]time.Time{} // of a shard: the claim records no delivery
	for _, w := range writes {
		if w.code < 300 && !strings.HasSuffix(w.name, "-claim") && w.at.After(lastOK[w.replica]) {
			lastOK[w.replica] = w.at
		}
	}
	first, previous := map[string]replicaArrival{}, map[string]string{}
	repeats, bySender, leftBy := 0, map[string]int{}, map[string]int{}
	for _, a := range got {
		k := deliveryKey(a.p)
		f, seen := first[k]
		prev := previous[k]
		previous[k] = a.replica
		if !seen {
			first[k] = a
			continue
		}
		repeats++
		bySender[f.replica]++
		// What a deposed leader left unrecorded is what the next one
		// sends again: counted against the replica whose delivery this
		// repeats (a repeat's own repeat, after a second handover, counts
		// against the one that repeated it).
		leftBy[prev]++
		if f.replica == a.replica {
			t.Errorf("%s delivered twice by %s", k, a.replica)
		}
		if bound := lastOK[f.replica].Add(-maxLatency - time.Second); f.at.Before(bound) {
			t.Errorf("%s repeated by %s, though %s delivered it at %s, before its last ledger write at %s recorded it",
				k, a.replica, f.replica, f.at.Format("15:04:05.000"), lastOK[f.replica].Format("15:04:05.000"))
		}
	}
	t.Logf("%d notifications repeated, each first sent after its sender's last ledger write; by first sender: %v", repeats, bySender)
	// The ledger gate (--ledger-lag-max-deliveries, 50 by default) bounds
	// what each deposed leader leaves for its successor to repeat.
	for i, c := range changes {
		if n := leftBy[c.from]; n > 50 {
			t.Errorf("handover %d (%s): %s left %d deliveries unrecorded that were sent again, want at most 50 (the ledger gate)", i+1, c.how, c.from, n)
		} else {
			t.Logf("handover %d (%s): %s left %d deliveries unrecorded that were sent again (at most 50)", i+1, c.how, c.from, n)
		}
	}
}

// checkDeposedWritesRefused: once the successor has claimed the ledger
// (its first ledger write), every ledger write of the replica it took over
// from is refused.
func checkDeposedWritesRefused(t *testing.T, changes []leaderChange, writes []ledgerWrite) {
	t.Helper()
	refused := 0
	for i, c := range changes {
		var late []string
		var claimed time.Time
		for _, w := range writes {
			if w.replica == c.to && w.code < 300 {
				claimed = w.at
				break
			}
		}
		if claimed.IsZero() {
			t.Errorf("%s never wrote the ledger after taking over from %s", c.to, c.from)
			continue
		}
		for _, w := range writes {
			if w.replica != c.from || w.at.Before(claimed) {
				continue
			}
			if w.code < 300 {
				t.Errorf("deposed %s (%s) wrote %s %s at %s, after %s claimed the ledger at %s: accepted (%d)",
					c.from, c.how, w.verb, w.name, w.at.Format("15:04:05.000"), c.to, claimed.Format("15:04:05.000"), w.code)
			} else {
				// Refused for the precondition (409), not merely failed (a
				// timeout's 504 says nothing of whether etcd took it).
				if w.code == http.StatusConflict {
					refused++
				}
				late = append(late, fmt.Sprintf("%s %s: %d", w.verb, w.name, w.code))
			}
		}
		if len(late) == 0 {
			var near []string
			for _, w := range writes {
				if w.replica == c.from && w.at.After(c.deposed.Add(-2*time.Second)) {
					near = append(near, fmt.Sprintf("%s %s %s: %d", w.at.Format("15:04:05.000"), w.verb, w.name, w.code))
				}
			}
			t.Logf("handover %d (%s): deposed at %s, successor claimed at %s; the deposed leader's ledger writes from 2 s before: %v",
				i+1, c.how, c.deposed.Format("15:04:05.000"), claimed.Format("15:04:05.000"), near)
		}
		if len(late) > 0 {
			t.Logf("handover %d (%s): ledger writes of %s that reached the API server after %s claimed the ledger at %s, none accepted: %s",
				i+1, c.how, c.from, c.to, claimed.Format("15:04:05.000"), strings.Join(late, "; "))
		}
	}
	// The fence at the edge keeps a deposed leader's ledger writes from
	// leaving once its hold has ended; those it sent before may still
	// arrive late, as the held ones do, and must be refused. A run where
	// none arrived late shows nothing of that.
	// (TestConfigMapLedger/DeposedPastItsClaim holds the refusal itself,
	// deterministically.)
	if refused == 0 {
		t.Error("no ledger write of a deposed leader reached the API server after its successor's claim to be refused (409): the test shows nothing of their refusal")
	}
	t.Logf("ledger writes of deposed leaders after their successor's claim refused for their precondition (409): %d", refused)
}

// ledgerWrite is one write of a ConfigMap in the API server's audit log.
type ledgerWrite struct {
	replica    string // the identity in the user agent
	verb, name string
	at         time.Time // when the API server received it
	code       int
}

// ledgerWrites reads the audit log's ConfigMap writes by herald replicas,
// in the order the API server received them.
func ledgerWrites(t *testing.T, path string) []ledgerWrite {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []ledgerWrite
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Stage     string `json:"stage"`
			Verb      string `json:"verb"`
			UserAgent string `json:"userAgent"`
			ObjectRef struct {
				Resource string `json:"resource"`
				Name     string `json:"name"`
			} `json:"objectRef"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
			RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Stage != "ResponseComplete" || ev.ObjectRef.Resource != "configmaps" {
			continue
		}
		if ev.Verb != "create" && ev.Verb != "update" && ev.Verb != "patch" && ev.Verb != "delete" {
			continue
		}
		_, identity, ok := strings.Cut(ev.UserAgent, "(")
		if !ok || !strings.HasPrefix(ev.UserAgent, "herald/") {
			continue
		}
		out = append(out, ledgerWrite{replica: strings.TrimSuffix(identity, ")"), verb: ev.Verb, name: ev.ObjectRef.Name,
			at: ev.RequestReceivedTimestamp, code: ev.ResponseStatus.Code})
	}
	slices.SortFunc(out, func(a, b ledgerWrite) int { return a.at.Compare(b.at) })
	return out
}

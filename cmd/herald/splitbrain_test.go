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

// leaderChange is one handover of the Lease.
type leaderChange struct {
	how, from, to string
}

// maxLatency is the most the fault proxies add to a replica's requests
// and their answers.
const maxLatency = 3 * time.Second

// TestNoSplitBrain: three replicas, each reaching the API server through a
// fault proxy of its own, notify a crash storm (1,200 transitions) while
// the leader is deposed again and again — cut off from the API server,
// SIGKILLed, slowed by 3 s each way so its renewals fail, or answered
// 2.9 s late (its renewals applied at once) and then cut off — and the
// receiver takes 50 ms a request, so a deposed leader has a backlog. Each delivery
// says which replica sent it (Herald-Replica). Shown, for every handover:
// the deposed leader's last delivery arrived before the new leader's first
// (no two replicas notify at once); nothing is lost; a notification is
// repeated only with its first idempotency key, by another replica, and
// only if its first delivery fell after its sender's last ledger write
// (one batch); every ledger write the deposed leader made after its
// successor claimed the ledger was refused by the API server.
func TestNoSplitBrain(t *testing.T) {
	if testing.Short() {
		t.Skip("three processes through fault proxies under a crash storm, a dozen handovers")
	}
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
	newLeader := func(old string) string {
		var next string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			next = holder()
			return next != "" && next != old, nil
		})
		if err != nil {
			t.Fatalf("no new leader a minute after %s was deposed", old)
		}
		return next
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

	var changes []leaderChange
	current := newLeader("")
	start := time.Now()
	want := h.loadShaped(200, 6, 25*time.Second, func() {
		for i := 0; len(changes) < 12; i++ {
			// Depose the leader once it has notified and its ledger has
			// recorded some of that (two writes), so that every handover
			// has a before and an after to compare, and the successor a
			// ledger to start from: a leader deposed before its first
			// write hands over nothing (its successor starts afresh).
			s := slotOf(current)
			wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				return delivered(current) && ledgerWritesOf(s.r) >= 2, nil
			})
			how := []string{"cut off", "SIGKILL", "slowed", "slow answers, then cut off"}[i%4]
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
			}
			next := newLeader(current)
			changes = append(changes, leaderChange{how, current, next})
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
	if len(changes) < 10 {
		t.Errorf("%d handovers, want at least 10", len(changes))
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
	checkRepeats(t, got, writes)
	checkDeposedWritesRefused(t, changes, writes)
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
func checkRepeats(t *testing.T, got []replicaArrival, writes []ledgerWrite) {
	t.Helper()
	lastOK := map[string]time.Time{} // of a shard: the claim records no delivery
	for _, w := range writes {
		if w.code < 300 && !strings.HasSuffix(w.name, "-claim") && w.at.After(lastOK[w.replica]) {
			lastOK[w.replica] = w.at
		}
	}
	first := map[string]replicaArrival{}
	repeats, bySender := 0, map[string]int{}
	for _, a := range got {
		k := deliveryKey(a.p)
		f, seen := first[k]
		if !seen {
			first[k] = a
			continue
		}
		repeats++
		bySender[f.replica]++
		if f.replica == a.replica {
			t.Errorf("%s delivered twice by %s", k, a.replica)
		}
		if bound := lastOK[f.replica].Add(-maxLatency - time.Second); f.at.Before(bound) {
			t.Errorf("%s repeated by %s, though %s delivered it at %s, before its last ledger write at %s recorded it",
				k, a.replica, f.replica, f.at.Format("15:04:05.000"), lastOK[f.replica].Format("15:04:05.000"))
		}
	}
	t.Logf("%d notifications repeated, each first sent after its sender's last ledger write; by first sender: %v", repeats, bySender)
}

// checkDeposedWritesRefused: once the successor has claimed the ledger
// (its first ledger write), every ledger write of the replica it took over
// from is refused.
func checkDeposedWritesRefused(t *testing.T, changes []leaderChange, writes []ledgerWrite) {
	t.Helper()
	refused := 0
	for _, c := range changes {
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
				refused++
			}
		}
	}
	t.Logf("ledger writes of deposed leaders after their successor's claim: %d, all refused", refused)
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

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/testenv"
)

// inFlightWindow is how long a notification can be delivered without the
// ledger knowing yet: one ledger flush (incident.FlushInterval, 1 s) plus
// the write itself. A herald killed in that window sends it again after
// its restart, with the same idempotency key (docs/incidents.md).
const inFlightWindow = 3 * time.Second

// TestSIGKILLAtRandomPoints kills herald with SIGKILL at five random
// moments of a run of 600 crashes (1,000 transitions) and starts it again
// at once, as the kubelet would: every transition is notified, and a
// notification is repeated only if its first delivery fell in the
// in-flight window before a kill, with the same idempotency key.
func TestSIGKILLAtRandomPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute and a half of load with kills")
	}
	besideHeavy(t)
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("HERALD_KILL_SEED"), 10, 64); err == nil {
		seed = s // a failed run's kill times again
	}
	t.Logf("seed %d (kill times; HERALD_KILL_SEED=%[1]d runs them again)", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	h := newLoadHarnessWith(t, harnessOptions{replicas: 1})
	current := h.replicas[0]
	h.leader([]*replica{current})
	// Kill times over the 75 s of load: one in each 13 s slot, at a
	// random second of its first 4, so kills are at least 10 s apart and
	// each restart has taken over (5 s lease) before the next kill.
	var at []time.Duration
	for i := range 5 {
		at = append(at, time.Duration(5+13*i+rng.IntN(4))*time.Second)
	}
	var kills []time.Time
	start := time.Now()
	want := h.loadShaped(200, 5, 15*time.Second, func() {
		for _, d := range at {
			time.Sleep(time.Until(start.Add(d))) // the kill schedule, not a wait for a condition
			current.cmd.Process.Signal(syscall.SIGKILL)
			<-current.done
			kills = append(kills, time.Now())
			current = h.start()
		}
	})
	deliveries, dups := h.check(want)
	h.mu.Lock()
	defer h.mu.Unlock()
	first := map[string]time.Time{}
	for _, d := range h.got {
		k := deliveryKey(d.p)
		f, seen := first[k]
		if !seen {
			first[k] = d.at
			continue
		}
		if !slices.ContainsFunc(kills, func(k time.Time) bool { return !f.After(k) && k.Sub(f) <= inFlightWindow }) {
			t.Errorf("%s repeated, but its first delivery (%s) was not within %s before a kill (%v)", k, f.Format(time.StampMilli), inFlightWindow, kills)
		}
	}
	t.Logf("%d transitions, 5 SIGKILLs at %v: %d deliveries, %d repeated within the in-flight window", len(want), at, deliveries, dups)
}

// TestAPIServerRestartUnderLoad stops kube-apiserver for 10 s in the
// middle of 500 crash transitions (crashes keep being written as soon as
// it is back): every transition is notified, and none twice, whichever
// way the watch comes back.
//
//   - Watch cache on (the API server's default), with etcd written to
//     while it is down (as the other API servers of an HA control plane
//     do): the new watch cache starts after herald's last
//     resourceVersion, the watch gets 410 Gone and herald lists again.
//     That list must follow at once (patientWatches), or crashes that come
//     and go before it are seen only as their final state, never notified.
//   - Watch cache off: the watch resumes from etcd's history.
func TestAPIServerRestartUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("two minutes of load across API server restarts")
	}
	besideHeavy(t)
	for _, tt := range []struct {
		name            string
		apiServerArgs   []string
		writesWhileDown int
	}{
		{"watch cache, lists again", nil, 10},
		{"no watch cache, resumes", []string{"--watch-cache=false"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Lease settings longer than the outage: herald keeps leading.
			// (With shorter ones it loses the lease and starts over from
			// the ledger; TestEtcdOutage covers that.)
			h := newLoadHarnessWith(t, harnessOptions{replicas: 1, env: testenv.Options{APIServerArgs: tt.apiServerArgs},
				args: []string{"--lease-duration", "60s", "--renew-deadline", "45s", "--retry-period", "2s"}})
			h.leader(h.replicas)
			var down time.Duration
			want := h.loadShaped(100, 5, 12*time.Second, func() {
				time.Sleep(20 * time.Second) // in the middle of the load
				stopped := time.Now()
				h.env.StopAPIServer()
				if err := h.env.AdvanceEtcdRevision(tt.writesWhileDown); err != nil {
					t.Error(err)
				}
				time.Sleep(10 * time.Second) // the outage
				if err := h.env.StartAPIServer(context.Background()); err != nil {
					t.Error(err)
				}
				down = time.Since(stopped)
			})
			deliveries, dups := h.check(want)
			if dups != 0 {
				t.Errorf("%d transitions notified twice across an API server restart", dups)
			}
			if strings.Contains(h.replicas[0].logs(), "starting over") {
				t.Errorf("herald lost its lease during the restart:\n%s", h.replicas[0].logs())
			}
			t.Logf("%d transitions, API server down %s: %d deliveries, %d duplicates; the last arrived %s after the load ended",
				len(want), down.Round(100*time.Millisecond), deliveries, dups, h.lastWait.Round(100*time.Millisecond))
		})
	}
}

// readyz asks a herald process's /readyz.
func readyz(r *replica) int {
	// The last address: a herald that started over serves on a new port.
	all := regexp.MustCompile(`"msg":"serving metrics and health","addr":"([^"]+)"`).FindAllStringSubmatch(r.logs(), -1)
	if all == nil {
		return 0
	}
	resp, err := http.Get("http://" + all[len(all)-1][1] + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestEtcdOutage stops etcd for 30 s under a herald with the default
// lease settings: the process stays up (same PID), says it is not ready
// while etcd is away, and recovers by itself: crashes before and after
// are all notified, none twice.
func TestEtcdOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a 30 s etcd outage")
	}
	besideHeavy(t)
	h := newLoadHarnessWith(t, harnessOptions{replicas: 1, args: []string{}})
	r := h.replicas[0]
	h.leader(h.replicas)
	ctx := context.Background()
	crash := func(names ...string) {
		for _, name := range names {
			if _, err := h.client.CoreV1().Pods("default").Create(ctx, newPod(name), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			setStatus(t, h.client, name, crashLooping, 2)
		}
	}
	names := func(prefix string) []string {
		var out []string
		for i := range 10 {
			out = append(out, fmt.Sprintf("%s-%d", prefix, i))
		}
		return out
	}
	crash(names("before")...)
	want := map[string]bool{}
	for _, n := range names("before") {
		want[n+"/1/firing"] = true
	}
	h.check(want)
	ledgerSettled(t, h.env, names("before")...) // what was delivered is on record before etcd goes

	h.env.StopEtcd()
	stopped := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return readyz(r) == http.StatusServiceUnavailable, nil
	})
	if err != nil {
		t.Fatalf("/readyz still %d with etcd down", readyz(r))
	}
	notReadyAfter := time.Since(stopped)
	time.Sleep(time.Until(stopped.Add(30 * time.Second))) // the outage
	select {
	case <-r.done:
		t.Fatalf("herald exited during the etcd outage: %v\n%s", r.exitErr, r.logs())
	default:
	}
	if err := h.env.StartEtcd(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return readyz(r) == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("herald not ready 2 min after etcd came back:\n%s", r.logs())
	}
	recovered := time.Since(back)
	crash(names("after")...)
	for _, n := range names("after") {
		want[n+"/1/firing"] = true
	}
	_, dups := h.check(want)
	if dups != 0 {
		t.Errorf("%d notifications repeated across the etcd outage: %v; herald's log (etcd stopped %s, back %s):\n%s", dups, h.dupKeys,
			stopped.Format("15:04:05.000"), back.Format("15:04:05.000"), grepLines(r.logs(), `"level":"WARN"`)+"\n"+grepLines(r.logs(), `"level":"ERROR"`)+"\n"+grepLines(r.logs(), "leader"))
	}
	t.Logf("not ready %s after etcd stopped; ready again %s after it came back; PID %d throughout; started over: %v",
		notReadyAfter.Round(100*time.Millisecond), recovered.Round(100*time.Millisecond), r.cmd.Process.Pid, strings.Contains(r.logs(), "starting over"))
}

// ledgerSettled waits until herald's ledger, read as herald reads it,
// records no pending delivery and holds an incident for each of the named
// objects. The ledger is written at most once a second, after the
// notification: a write made before the last incident opened has nothing
// pending either, so the names are what says the last write is on record.
func ledgerSettled(t *testing.T, env *testenv.Env, objects ...string) {
	t.Helper()
	var missing []string
	ledgerHolds(t, env, func(incs []incident.Incident) bool {
		held := map[string]bool{}
		for _, inc := range incs {
			if len(inc.Pending) > 0 {
				return false
			}
			held[inc.Object.Name] = true
		}
		missing = slices.DeleteFunc(slices.Clone(objects), func(name string) bool { return held[name] })
		return len(missing) == 0
	}, func() string { return fmt.Sprintf("pending deliveries, or no incident of %v", missing) })
}

// ledgerResolved waits until herald's ledger holds object's incident as
// resolved, with nothing left to deliver: a ledger write made before the
// resolution has the incident open.
func ledgerResolved(t *testing.T, env *testenv.Env, object string) {
	t.Helper()
	ledgerHolds(t, env, func(incs []incident.Incident) bool {
		return slices.ContainsFunc(incs, func(inc incident.Incident) bool {
			return inc.Object.Name == object && !inc.ResolvedAt.IsZero() && len(inc.Pending) == 0
		})
	}, func() string { return object + "'s incident not resolved and delivered" })
}

// ledgerHolds waits up to 20 s until the ledger in namespace default,
// read through herald's own store, satisfies ok; why says what it lacked.
func ledgerHolds(t *testing.T, env *testenv.Env, ok func([]incident.Incident) bool, why func() string) {
	t.Helper()
	client, err := kube.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	store := incident.NewConfigMapStore(client, "default", config.DefaultLedgerName)
	ctx := context.Background()
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		incs, err := store.Load(ctx, func(string, ...any) {})
		return err == nil && ok(incs), nil
	})
	if err != nil {
		t.Fatalf("the ledger: %s", why())
	}
}

// TestExpiredWatchListsAgain cuts herald off from the API server, makes
// changes, and compacts etcd's history past herald's last resourceVersion
// (the API server's watch cache is off, so the watch reaches etcd): when
// the connection returns, the watch cannot resume (410 Gone), herald lists
// again, and notifies exactly the changes it missed, once.
func TestExpiredWatchListsAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("etcd compaction under a cut connection")
	}
	beside(t)
	h := newLoadHarnessWith(t, harnessOptions{replicas: 0, env: testenv.Options{APIServerArgs: []string{"--watch-cache=false"}},
		args: []string{"--lease-duration", "60s", "--renew-deadline", "45s", "--retry-period", "2s"}})
	ctx := context.Background()
	for i := range 60 {
		if _, err := h.client.CoreV1().Pods("default").Create(ctx, newPod(fmt.Sprintf("w-%02d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		setStatus(t, h.client, fmt.Sprintf("w-%02d", i), ready, 0)
	}
	// herald reaches the API server only through the proxy.
	proxy := newFaultProxy(t, strings.TrimPrefix(h.env.Config.Host, "https://"))
	viaProxy := *h.env
	viaProxy.Config = rest.CopyConfig(h.env.Config)
	viaProxy.Config.Host = "https://" + proxy.addr
	viaProxy.WriteKubeconfig(h.kc)
	r := h.start()
	h.leader(h.replicas)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(r.logs(), `"msg":"starting workers"`), nil
	})
	if err != nil {
		t.Fatal("herald did not start its workers")
	}

	proxy.cut()
	want := map[string]bool{}
	for i := range 60 {
		name := fmt.Sprintf("w-%02d", i)
		switch {
		case i < 30: // crash: herald must notify these
			setStatus(t, h.client, name, crashLooping, 3)
			want[name+"/1/firing"] = true
		case i < 45: // a change that is no problem
			setStatus(t, h.client, name, ready, 1)
		}
	}
	if err := h.env.CompactEtcd(); err != nil {
		t.Fatal(err)
	}
	proxy.restore()
	deliveries, dups := h.check(want)
	if dups != 0 || deliveries != 30 {
		t.Errorf("%d deliveries with %d duplicates, want exactly the 30 missed crashes", deliveries, dups)
	}
	if !regexp.MustCompile(`too old resource version|Gone|Expired`).MatchString(r.logs()) {
		t.Errorf("no sign in the logs that the watch expired; the test did not exercise a relist:\n%s", r.logs())
	}
	t.Logf("30 crashes and 15 other changes while cut off, etcd compacted: %d deliveries, %d duplicates", deliveries, dups)
}

// TestNoPerEventAPICalls: with 10,000 pods cached and a storm of 2,000
// crashes, herald reads everything from its cache. The API server's audit
// log counts every request herald (user agent herald/...) makes during
// the storm: leases and ledger ConfigMaps, never a pod, and the crash
// context's pods/log and events requests within its budget (5 a second,
// a burst of 10), however many pods crash. It must also see herald's
// lease renewals and ledger writes in the window: counting nothing passes
// nothing.
func TestNoPerEventAPICalls(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 pods")
	}
	besideHeavy(t)
	h := newLoadHarnessWith(t, harnessOptions{replicas: 0, env: testenv.Options{Audit: true}})
	ctx := context.Background()
	const pods, storm = 10000, 2000
	parallel(t, pods, func(i int) error {
		_, err := h.client.CoreV1().Pods("default").Create(ctx, newPod(fmt.Sprintf("load-%05d", i)), metav1.CreateOptions{})
		return err
	})
	r := h.start()
	h.leader(h.replicas)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return strings.Contains(r.logs(), `"msg":"starting workers"`), nil
	})
	if err != nil {
		t.Fatal("herald did not start its workers")
	}
	stormStart := time.Now()
	want := map[string]bool{}
	var sw sync.WaitGroup
	for w := range 32 {
		sw.Go(func() {
			for i := w; i < storm; i += 32 {
				if err := writePodStatus(h.client, fmt.Sprintf("load-%05d", i), crashLooping, 3); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	sw.Wait()
	for i := range storm {
		want[fmt.Sprintf("load-%05d/1/firing", i)] = true
	}
	h.check(want)
	stormEnd := time.Now()

	requests := auditByAgent(t, h.env.AuditLog(), "herald/", stormStart, stormEnd)
	total, forContext := 0, 0
	for what, n := range requests {
		total += n
		switch {
		case what == "get pods/log" || what == "list events":
			forContext += n
		case !strings.Contains(what, " leases") && !strings.Contains(what, " configmaps"):
			t.Errorf("herald made %d %s requests during the storm", n, what)
		}
	}
	// Zero requests would pass everything above: the log must show
	// herald at work in the window (its lease renewed, its ledger
	// written), or the count proves nothing (a changed user agent, a
	// window the audit log does not cover).
	if requests["patch leases"] == 0 || requests["update configmaps"]+requests["create configmaps"] == 0 { // renewals are patches
		t.Errorf("the audit log shows none of herald's lease renewals or ledger writes during the storm (%v): the count above proves nothing", requests)
	}
	if budget := int(5*stormEnd.Sub(stormStart).Seconds()) + 10 + 2; forContext > budget {
		t.Errorf("%d requests for crash context during the storm, over the budget of %d", forContext, budget)
	}
	t.Logf("%d pods cached, %d crashes notified in %s; herald's API requests meanwhile: %d %v",
		pods, storm, stormEnd.Sub(stormStart).Round(100*time.Millisecond), total, requests)
}

// auditByAgent counts the audit log's requests from a user agent between
// two times, by "verb resource".
func auditByAgent(t *testing.T, path, agent string, from, to time.Time) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		var ev struct {
			// A streamed response (pods/log, a watch) is logged at two
			// stages: count each request once.
			AuditID   string `json:"auditID"`
			Verb      string `json:"verb"`
			UserAgent string `json:"userAgent"`
			ObjectRef struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
			RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil || !strings.HasPrefix(ev.UserAgent, agent) || seen[ev.AuditID] {
			continue
		}
		seen[ev.AuditID] = true
		if ev.RequestReceivedTimestamp.Before(from) || ev.RequestReceivedTimestamp.After(to) {
			continue
		}
		res := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			res += "/" + ev.ObjectRef.Subresource
		}
		out[ev.Verb+" "+res]++
	}
	return out
}

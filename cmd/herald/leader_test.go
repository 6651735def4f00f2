package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

var leaderIdentity = regexp.MustCompile(`msg="became the leader" lease=default/herald identity=(\S+)`)

// TestOneLeaderNotifiesAndHandsOverOnSIGTERM: of two replicas only the
// Lease holder notifies; stopping it gracefully hands over to the other
// with no duplicate and nothing lost.
func TestOneLeaderNotifiesAndHandsOverOnSIGTERM(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	cfg := fmt.Sprintf(`
rules:
  - {name: pod-crashloop, kind: Pod, detector: crashloop, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, recv.URL)
	timings := []string{"--lease-duration", "5s", "--renew-deadline", "3s", "--retry-period", "1s"}
	a := startedHerald(t, env, cfg, timings...)
	b := runHerald(t, env, cfg, timings...)
	defer b.stop()
	m := leaderIdentity.FindStringSubmatch(a.logs.String())
	if m == nil {
		t.Fatalf("replica A did not report leading:\n%s", a.logs)
	}
	ctx := context.Background()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(b.logs.String(), `msg="following the leader" leader=`+m[1]), nil
	})
	if err != nil {
		t.Fatalf("replica B does not follow A:\n%s", b.logs)
	}
	lease, err := client.CoordinationV1().Leases("default").Get(ctx, "herald", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != m[1] {
		t.Fatalf("Lease holder %v (%v), want A's identity %s", lease.Spec.HolderIdentity, err, m[1])
	}

	crashPods(t, client, "before", 3)
	for _, p := range recv.collect(t, 3, 10*time.Second) {
		if p.Transition != "firing" {
			t.Fatalf("got %s", p.Transition)
		}
	}
	stopped := time.Now()
	a.stop()
	b.waitReady()
	handover := time.Since(stopped)
	t.Logf("graceful handover: %s from A's SIGTERM to B running its workers", handover.Round(time.Millisecond))
	if !strings.Contains(a.logs.String(), `msg="left the election"`) {
		t.Errorf("A did not release the lease:\n%s", a.logs)
	}
	// B resends nothing A delivered: the next notification is a new crash.
	expectSentinel(t, client, recv, "after")
}

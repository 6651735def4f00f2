package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/oncalltest"
	"github.com/herald-k8s/herald/internal/slackstandin"
	"github.com/herald-k8s/herald/internal/testenv"
)

// TestSlackPressExactlyOnceAcrossFailover: two herald replicas. A press
// reaches the leader, which acts; its acknowledgement to Slack is lost
// (the stand-in drops it, as a connection that broke would) and the
// leader is killed. Slack delivers the press again, to the next leader,
// which finds it done: for Acknowledge, one acknowledgement in the ledger
// and one Event; then the same for Silence 1 h: one Silence, one Event,
// one thread reply.
func TestSlackPressExactlyOnceAcrossFailover(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	ctx := context.Background()
	if err := env.InstallCRDs(ctx, silenceCRDs); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	sl, pd := buttonsSlack(t), oncalltest.NewPagerDuty(t)
	h := &loadHarness{t: t, env: env, client: client, bin: buildHerald(t), dir: t.TempDir(),
		args: []string{"--lease-duration", "5s", "--renew-deadline", "3s", "--retry-period", "1s"}}
	h.kc = filepath.Join(h.dir, "kubeconfig")
	env.WriteKubeconfig(h.kc)
	h.cfg = filepath.Join(h.dir, "herald.yaml")
	if err := os.WriteFile(h.cfg, []byte(fmt.Sprintf(buttonsConfig, sl.URL()+"/api/", pd.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	live := []*replica{h.start(), h.start()}
	first := h.leader(live)
	if err := waitFor(30*time.Second, func() bool { return strings.Contains(first.logs(), `"msg":"starting workers"`) }); err != nil {
		t.Fatalf("the leader did not start its workers:\n%s", first.logs())
	}

	podOnNode(t, client, "shop", "node-1")
	setStatus(t, client, "shop", crashLooping, 3)
	alert := alertWith(t, sl, "herald_silence_1h", "herald_ack")

	// pressLost presses and loses herald's acknowledgement, then kills
	// the leader that acted; it returns the envelope and the replicas
	// still alive.
	pressLost := func(action, user string, leader *replica, live []*replica, done func() bool) (string, []*replica) {
		t.Helper()
		waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := sl.WaitConnected(waitCtx); err != nil {
			t.Fatal(err)
		}
		dropped := sl.DroppedAcks()
		sl.DropAcks(1)
		env, err := sl.Press(waitCtx, slackstandin.Press{Channel: alert.Channel, TS: alert.TS, ActionID: action, User: user})
		if err != nil {
			t.Fatal(err)
		}
		if err := sl.WaitFor(waitCtx, func(s *slackstandin.Server) bool { return s.DroppedAcks() > dropped }); err != nil {
			t.Fatalf("the leader did not answer the %s press: %v\n%s", action, err, leader.logs())
		}
		if !done() {
			t.Fatalf("the leader answered the %s press before acting on it", action)
		}
		leader.cmd.Process.Kill()
		<-leader.done
		var rest []*replica
		for _, r := range live {
			if r != leader {
				rest = append(rest, r)
			}
		}
		return env, rest
	}

	acked := func() bool {
		incs := ledgerIncidents(t, env)
		return len(incs) == 1 && incs[0].Ack != nil
	}
	envAck, live := pressLost("herald_ack", "U0BOB1", first, live, acked)
	live = append(live, h.start()) // a replica to take over from the next leader
	second := h.leader(live)
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := sl.WaitAcked(waitCtx, envAck); err != nil {
		t.Fatalf("the acknowledge press was not handled after the failover: %v\n%s", err, second.logs())
	}
	if n := sl.Deliveries(envAck); n < 2 {
		t.Fatalf("the acknowledge press was delivered %d times; the test needs it delivered again", n)
	}
	incs := ledgerIncidents(t, env)
	if len(incs) != 1 || incs[0].Ack == nil || incs[0].Ack.By != "slack:U0BOB1" {
		t.Fatalf("ledger: %+v, want one incident acknowledged by slack:U0BOB1", incs)
	}
	if n := len(eventsWithReason(t, env, "Acknowledged")); n != 1 {
		t.Errorf("%d Acknowledged Events, want 1", n)
	}
	if eph := sl.Ephemerals("U0BOB1"); len(eph) != 0 {
		t.Errorf("bob was told %+v; the second delivery of his own press must say nothing", eph)
	}
	// The notification of the acknowledgement is at-least-once like
	// every notification: PagerDuty hears it, maybe twice, always about
	// the same incident.
	if err := waitFor(20*time.Second, func() bool { return pdActions(pd, "acknowledge") >= 1 }); err != nil {
		t.Errorf("PagerDuty never heard the acknowledgement: %+v", pd.Events())
	}

	envSilence, live := pressLost("herald_silence_1h", "U0ANA1", second, live, func() bool { return len(slackSilences(t, dyn, "default")) == 1 })
	live = append(live, h.start())
	third := h.leader(live)
	if err := sl.WaitAcked(waitCtx, envSilence); err != nil {
		t.Fatalf("the press was not handled after the failover: %v\n%s", err, third.logs())
	}
	if n := sl.Deliveries(envSilence); n < 2 {
		t.Fatalf("the press was delivered %d times; the test needs it delivered again", n)
	}
	if n := len(slackSilences(t, dyn, "default")); n != 1 {
		t.Errorf("%d silences after the press was delivered twice, want 1", n)
	}
	if n := len(eventsWithReason(t, env, "Silenced")); n != 1 {
		t.Errorf("%d Silenced Events, want 1", n)
	}
	said := 0
	for _, r := range sl.Replies(alert.Channel, alert.TS) {
		if strings.Contains(r.Text, "Silenced ") {
			said++
		}
	}
	if said != 1 || len(sl.Ephemerals("U0ANA1")) != 0 {
		t.Errorf("the thread says it %d times and ana was told %d things; want once and nothing", said, len(sl.Ephemerals("U0ANA1")))
	}
}

// ledgerIncidents reads herald's ledger in the default namespace.
func ledgerIncidents(t *testing.T, env *testenv.Env) []incident.Incident {
	t.Helper()
	typed, err := kube.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	incs, err := incident.NewConfigMapStore(typed, "default", config.DefaultLedgerName).Load(context.Background(), func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	return incs
}

package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// TestHotReload: a rule added to the running herald's file fires without
// a restart; a broken file is rejected with its errors and the rules in
// force keep firing; a removed rule's incidents resolve, saying so.
func TestHotReload(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	rule := func(name, team string) string {
		return fmt.Sprintf("  - {name: %s, kind: Pod, detector: crashloop, labels: \"team=%s\", sinks: [hook]}\n", name, team)
	}
	file := func(rules string) string {
		return "rules:\n" + rules + fmt.Sprintf("sinks:\n  - {name: hook, webhook: {url: %s/herald}}\n", recv.URL)
	}
	// runHerald writes the file under a temp dir; rewrite that same file.
	h := startedHerald(t, env, file(rule("team-a", "a")), "--config-reload-interval", "100ms")
	defer h.stop()
	cfgPath := h.config
	ctx := context.Background()
	crash := func(name, team string) {
		pod := newPod(name)
		pod.Labels["team"] = team
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		setStatus(t, client, name, crashLooping, 3)
	}
	waitLog := func(s string, n int) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return strings.Count(h.logs.String(), s) >= n, nil
		})
		if err != nil {
			t.Fatalf("no %q in the logs:\n%s", s, h.logs)
		}
	}

	crash("b-1", "b") // no rule for team b yet
	os.WriteFile(cfgPath, []byte(file(rule("team-a", "a")+rule("team-b", "b"))), 0o600)
	waitLog(`msg="configuration reloaded"`, 1)
	got := recv.next(t, 10*time.Second)
	if got.Transition != "firing" || got.Object.Name != "b-1" || got.Incident.Rule != "team-b" {
		t.Fatalf("after adding team-b: %s %s by %s", got.Transition, got.Object.Name, got.Incident.Rule)
	}

	os.WriteFile(cfgPath, []byte(file(rule("team-a", "a")+"  - {name: broken, kind: Pod, condition: 'object.status.phase ==', sinks: [hook]}\n")), 0o600)
	waitLog(`msg="configuration change rejected; the previous configuration keeps running"`, 1)
	if !strings.Contains(h.logs.String(), "rules[1].condition: CEL: Syntax error") {
		t.Errorf("the rejection does not say where:\n%s", h.logs)
	}
	// The incidents block needs a restart: rejected as a whole.
	os.WriteFile(cfgPath, []byte("incidents: {updateInterval: 5s}\n"+file(rule("team-a", "a")+rule("team-b", "b"))), 0o600)
	waitLog(`incidents changed: these take effect at a restart`, 1)
	// So does the crash context (its redact patterns would reach findings
	// and not log lines).
	os.WriteFile(cfgPath, []byte("context: {redact: ['customer-[0-9]+']}\n"+file(rule("team-a", "a")+rule("team-b", "b"))), 0o600)
	waitLog(`context changed: these take effect at a restart`, 1)
	crash("b-2", "b") // team-b is still in force
	if got := recv.next(t, 10*time.Second); got.Object.Name != "b-2" || got.Incident.Rule != "team-b" {
		t.Fatalf("after the broken file: %s by %s, want b-2 by team-b", got.Object.Name, got.Incident.Rule)
	}

	os.WriteFile(cfgPath, []byte(file(rule("team-a", "a"))), 0o600)
	waitLog(`msg="configuration reloaded"`, 2)
	// team-b's incidents resolve, saying why: no message stays red
	// forever for a rule that is gone.
	var resolved []string
	for range 2 {
		got := recv.next(t, 10*time.Second)
		if got.Transition != "resolved" || got.Incident.Rule != "team-b" || got.Change != "rule removed" || got.Incident.Ended != "rule-removed" {
			t.Fatalf("after removing team-b: %s %s by %s (%q, ended %q), want team-b's incidents resolved: rule removed", got.Transition, got.Object.Name, got.Incident.Rule, got.Change, got.Incident.Ended)
		}
		resolved = append(resolved, got.Object.Name)
	}
	if slices.Sort(resolved); strings.Join(resolved, ",") != "b-1,b-2" {
		t.Errorf("resolved %v, want b-1 and b-2", resolved)
	}
	crash("a-1", "a")
	if got := recv.next(t, 10*time.Second); got.Object.Name != "a-1" || got.Transition != "firing" {
		t.Fatalf("after removing team-b: %s %s, want a-1 firing", got.Transition, got.Object.Name)
	}

	// Sinks change at run time too: team-a now goes to a second receiver.
	recv2 := newReceiver(t)
	os.WriteFile(cfgPath, []byte(fmt.Sprintf("rules:\n  - {name: team-a, kind: Pod, detector: crashloop, labels: \"team=a\", sinks: [hook2]}\nsinks:\n  - {name: hook2, webhook: {url: %s/herald}}\n", recv2.URL)), 0o600)
	waitLog(`msg="configuration reloaded"`, 3)
	crash("a-2", "a")
	if got := recv2.next(t, 10*time.Second); got.Object.Name != "a-2" || got.Transition != "firing" {
		t.Fatalf("after the sink change: %s %s at the new sink, want a-2 firing", got.Transition, got.Object.Name)
	}
	select {
	case p := <-recv.got:
		t.Errorf("the old sink still got %s %s", p.Transition, p.Object.Name)
	default:
	}

	// An exclude added to team-a: a-2's incident resolves because the
	// rule changed, and says so — not that the pod recovered.
	os.WriteFile(cfgPath, []byte(fmt.Sprintf("rules:\n  - {name: team-a, kind: Pod, detector: crashloop, labels: \"team=a\", exclude: {names: [a-2]}, sinks: [hook2]}\nsinks:\n  - {name: hook2, webhook: {url: %s/herald}}\n", recv2.URL)), 0o600)
	waitLog(`msg="configuration reloaded"`, 4)
	if got := recv2.next(t, 45*time.Second); got.Object.Name != "a-2" || got.Transition != "resolved" || got.Incident.Ended != "rule-changed" {
		t.Fatalf("after excluding a-2: %s %s ended %q, want a-2 resolved, ended rule-changed", got.Transition, got.Object.Name, got.Incident.Ended)
	}
}

// reloadingHerald starts herald on a new control plane with rules (YAML
// list items) and a webhook sink, checking its file every 100 ms; sinks is
// the sinks section, to write new rules with.
func reloadingHerald(t *testing.T, rules string) (client kubernetes.Interface, recv *receiver, h *heraldRun, sinks string) {
	t.Helper()
	env := controlPlanes.Get(t)
	client, _ = env.Client()
	recv = newReceiver(t)
	sinks = fmt.Sprintf("sinks:\n  - {name: hook, webhook: {url: %s/herald}}\n", recv.URL)
	h = startedHerald(t, env, "rules:\n"+rules+sinks, "--config-reload-interval", "100ms")
	t.Cleanup(h.stop)
	return client, recv, h, sinks
}

// TestReloadCachesPodsWholeForCEL: pods are cached compact (annotations
// dropped) while only built-in detectors read them; a CEL rule added at
// run time may read anything, so the pod cache is listed again whole and
// the new rule sees the annotation the compact cache did not keep.
func TestReloadCachesPodsWholeForCEL(t *testing.T) {
	beside(t)
	crashRule := "  - {name: crash, kind: Pod, detector: crashloop, sinks: [hook]}\n"
	client, recv, h, sinks := reloadingHerald(t, crashRule)
	pod := newPod("owned")
	pod.Annotations = map[string]string{"owner": "payments"}
	if _, err := client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setStatus(t, client, "owned", ready, 0)
	celRule := "  - name: owned\n    kind: Pod\n    condition: 'has(object.metadata.annotations) && object.metadata.annotations[\"owner\"] == \"payments\"'\n    sinks: [hook]\n"
	os.WriteFile(h.config, []byte("rules:\n"+crashRule+celRule+sinks), 0o600)
	got := recv.next(t, 20*time.Second)
	if got.Transition != "firing" || got.Object.Name != "owned" || got.Incident.Rule != "owned" {
		t.Fatalf("after adding the CEL rule: %s %s by %s, want owned firing by rule owned", got.Transition, got.Object.Name, got.Incident.Rule)
	}
	if !strings.Contains(h.logs.String(), `kindsAdded=[Pod]`) {
		t.Errorf("the pod cache was not listed again:\n%s", h.logs)
	}
	// The crash rule keeps working on the whole objects.
	setStatus(t, client, "owned", crashLooping, 2)
	if got := recv.next(t, 10*time.Second); got.Incident.Rule != "crash" || got.Transition != "firing" {
		t.Fatalf("after the relist: %s by %s, want firing by crash", got.Transition, got.Incident.Rule)
	}
}

// TestReloadToWholePodsKeepsWorkloadGroups: a reload that makes the pod
// cache list again whole (a CEL rule) keeps grouping by workload working:
// the new pod informer gets the workload index before it starts, so two
// crashing pods of a Deployment of three are still one incident, "2/3".
func TestReloadToWholePodsKeepsWorkloadGroups(t *testing.T) {
	beside(t)
	groupRule := "  - {name: crash, kind: Pod, detector: crashloop, groupBy: workload, updateInterval: 0s, sinks: [hook]}\n"
	client, recv, h, sinks := reloadingHerald(t, groupRule)
	createDeploymentPods(t, client, 3)
	celRule := "  - {name: never, kind: Pod, condition: 'object.metadata.name == \"no-such-pod\"', sinks: [hook]}\n"
	os.WriteFile(h.config, []byte("rules:\n"+groupRule+celRule+sinks), 0o600)
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(h.logs.String(), `kindsAdded=[Pod]`), nil
	})
	if err != nil {
		t.Fatalf("the pod cache was not listed again whole:\n%s", h.logs)
	}
	setDeploymentPods(t, client, 2, crashLooping)
	got := recv.collect(t, 2, 30*time.Second)
	expectOneDeploymentIncident(t, got)
	// The workload's pod count comes from the index.
	if last := got[1].Title; last != "CrashLoopBackOff: Deployment default/api: 2/3 pods (container app)" {
		t.Errorf("title after two of three pods: %q", last)
	}
}

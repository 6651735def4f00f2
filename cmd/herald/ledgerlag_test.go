package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// refuseLedgerWrites installs a ValidatingAdmissionPolicy (the API
// server's own admission, as a cluster's policy engine would) that
// refuses every write of herald's ledger shards in default, while the
// Lease and everything else is written as usual; the returned func lifts
// it.
func refuseLedgerWrites(t *testing.T, client kubernetes.Interface) (lift func()) {
	t.Helper()
	ctx := context.Background()
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-ledger-writes"},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{
				ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "herald.io/ledger", Operator: metav1.LabelSelectorOpExists}}},
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}},
			},
			Validations: []admissionv1.Validation{{Expression: "false", Message: "ledger writes are refused by the test's policy"}},
		},
	}
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "no-ledger-writes"},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "no-ledger-writes",
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server puts a new policy in force a moment after it is
	// created: a ledger write in between went through, and herald rightly
	// let one more delivery go than the test counted.
	created := time.Now()
	if err := waitFor(30*time.Second, func() bool { return ledgerWriteRefused(client) }); err != nil {
		t.Fatal("the policy never refused a ledger write")
	}
	t.Logf("the policy refused ledger writes %s after it was created", time.Since(created).Round(time.Millisecond))
	return func() {
		client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, "no-ledger-writes", metav1.DeleteOptions{})
		client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, "no-ledger-writes", metav1.DeleteOptions{})
		if err := waitFor(30*time.Second, func() bool { return !ledgerWriteRefused(client) }); err != nil {
			t.Fatal("ledger writes were still refused after the policy was lifted")
		}
	}
}

// ledgerWriteRefused says whether the API server refuses a ConfigMap
// write labelled as herald's ledger now, asking with a dry run (admission
// runs, nothing is stored).
func ledgerWriteRefused(client kubernetes.Interface) bool {
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ledger-write-probe", Namespace: "default", Labels: map[string]string{"herald.io/ledger": "probe"}}}
	_, err := client.CoreV1().ConfigMaps("default").Create(context.Background(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	// (The policy's refusal is a 422 Invalid, its message says forbidden.)
	return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'no-ledger-writes'")
}

// TestLedgerWritesRefusedPauseSending: the ledger's ConfigMap writes are
// refused (an admission policy) while the Lease renews fine, so the
// leader never loses it. Sending pauses once 10 deliveries
// (--ledger-lag-max-deliveries) are unrecorded — said in the log and the
// metrics — and the next leader, once the policy is lifted, repeats at
// most those 10 and loses nothing.
func TestLedgerWritesRefusedPauseSending(t *testing.T) {
	beside(t)
	const limit = 10
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	recv := newReceiver(t)
	config := fmt.Sprintf(`
incidents: {resolveHoldDown: 0s, flapping: {starts: 0}}
rules:
  - {name: crash, kind: Pod, detector: crashloop, settle: 0s, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, recv.URL)
	metrics := freeAddr(t)
	args := []string{"--lease-duration", "5s", "--renew-deadline", "3s", "--retry-period", "1s", "--shutdown-grace", "2s",
		"--ledger-lag-max-deliveries", fmt.Sprint(limit)}
	a := startedHerald(t, env, config, append(args, "--metrics-addr", metrics)...)
	t.Cleanup(a.stop)

	crashPods(t, client, "before", 3)
	seen := map[string]int{}
	for _, p := range recv.collect(t, 3, 30*time.Second) {
		seen[p.ID]++
	}
	if err := waitFor(20*time.Second, func() bool {
		v, _ := scrapeMetric(metrics, "herald_ledger_unrecorded_deliveries")
		return v == 0
	}); err != nil {
		t.Fatal("the first three deliveries were never recorded")
	}

	lift := refuseLedgerWrites(t, client)
	crashPods(t, client, "during", 25)
	for _, p := range recv.collect(t, limit, 60*time.Second) {
		seen[p.ID]++
	}
	if err := waitFor(20*time.Second, func() bool {
		paused, _ := scrapeMetric(metrics, "herald_sending_paused")
		return paused == 1
	}); err != nil {
		t.Fatalf("sending did not pause with %d deliveries unrecorded:\n%s", limit, grepLines(a.logs.String(), "ledger"))
	}
	if n := metricValue(t, metrics, "herald_ledger_unrecorded_deliveries"); n != limit {
		t.Errorf("herald_ledger_unrecorded_deliveries = %v, want %d", n, limit)
	}
	if age := metricValue(t, metrics, "herald_ledger_unrecorded_oldest_seconds"); age <= 0 {
		t.Errorf("herald_ledger_unrecorded_oldest_seconds = %v, want the age of the oldest", age)
	}
	if leader := metricValue(t, metrics, "herald_leader"); leader != 1 {
		t.Errorf("herald_leader = %v: the Lease must still renew for this test to mean anything", leader)
	}
	select {
	case p := <-recv.got:
		t.Errorf("a delivery past the limit while paused: %s", p.ID)
	default:
	}
	if err := waitFor(10*time.Second, func() bool {
		return strings.Contains(a.logs.String(), "sending paused") && strings.Contains(a.logs.String(), "writing the incident ledger failed") &&
			strings.Contains(a.logs.String(), "ledger writes are refused by the test's policy")
	}); err != nil {
		t.Errorf("the pause is not logged with its cause:\n%s", grepLines(a.logs.String(), "ledger"))
	}

	// A failover while the ledger is behind: the next leader repeats at
	// most what the gate let go unrecorded.
	a.stop()
	lift()
	bMetrics := freeAddr(t)
	b := startedHerald(t, env, config, append(args, "--metrics-addr", bMetrics)...)
	t.Cleanup(b.stop)
	deadline := time.After(60 * time.Second)
	for len(seen) < 28 {
		select {
		case p := <-recv.got:
			seen[p.ID]++
		case <-deadline:
			t.Fatalf("%d of 28 notifications after the failover:\n%s", len(seen), b.logs.String())
		}
	}
	// Everything the new leader had to send has gone: its queue is empty
	// and its ledger recorded it. Whatever arrived meanwhile counts.
	if err := waitFor(30*time.Second, func() bool {
		depth, _ := scrapeMetric(bMetrics, `herald_sink_queue_depth{sink="hook"}`)
		unrecorded, _ := scrapeMetric(bMetrics, "herald_ledger_unrecorded_deliveries")
		return depth == 0 && unrecorded == 0
	}); err != nil {
		t.Fatal("the new leader's queue never emptied")
	}
	for drained := false; !drained; {
		select {
		case p := <-recv.got:
			seen[p.ID]++
		default:
			drained = true
		}
	}
	repeats := 0
	for _, n := range seen {
		repeats += n - 1
	}
	t.Logf("deliveries before the pause: %d; repeated after the failover: %d (limit %d)", 3+limit, repeats, limit)
	if repeats > limit {
		t.Errorf("%d notifications repeated after the failover, want at most %d", repeats, limit)
	}
}

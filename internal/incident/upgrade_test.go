package incident

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/internal/testenv"
)

// ledgerFixture is a ledger as herald wrote it on 2026-11-29: its
// ConfigMaps, as the API server held them. An upgraded herald must load
// it and carry on without sending anything again.
const ledgerFixture = "testdata/ledger-2026-11-29.json"

var updateLedgerFixture = flag.Bool("update-ledger-fixture", false,
	"write "+ledgerFixture+" with this herald (only to record a new format on purpose: the upgrade test holds every later herald to the old one)")

// fixtureConfigMap is what the fixture keeps of one ConfigMap.
type fixtureConfigMap struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Data        map[string]string `json:"data"`
}

// upgradeClock is the instant the fixture's scene ends.
var upgradeClock = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)

// upgradeFindings are the findings of the fixture's scene, by object key:
// the same findings after the upgrade must send nothing.
func upgradeFindings() map[string][]rules.Finding {
	delivered := finding("u1", "app", false, "5")
	delivered.Object.Name, delivered.RestartStep, delivered.UpdateInterval = "web-1", 1, 10*time.Minute
	undelivered := finding("u2", "app", false, "3")
	undelivered.Object.Name = "web-2"
	acked := finding("u3", "app", false, "3")
	acked.Object.Name, acked.Repeat = "web-3", time.Hour
	waiting := finding("u4", "", false, "0")
	waiting.Object.Name, waiting.Reason, waiting.For = "api", "PodPending", 10*time.Minute
	return map[string][]rules.Finding{
		"Pod/shop/web-1": {delivered},
		"Pod/shop/web-2": {undelivered},
		"Pod/shop/web-3": {acked},
		"Pod/shop/api":   {waiting},
		"Pod/shop/old":   nil, // resolved
	}
}

// upgradeScene is the fixture's scene, played on a tracker: web-1 fired
// and was delivered, then restarted twice more (an update held for its
// update interval); web-2 fired and no sink has accepted it yet; web-3
// fired, was delivered and acknowledged (no repeat while acknowledged);
// api waits out a for: of 10m (4 minutes in); old fired and resolved,
// both delivered.
func upgradeScene(t *testing.T) *Tracker {
	clock := upgradeClock.Add(-5 * time.Minute)
	tr := NewTracker(Options{Now: func() time.Time { return clock }})
	deliver := func(notes []Notification) {
		for _, n := range notes {
			tr.Delivered(n, "out")
		}
	}
	fired := finding("u1", "app", false, "3")
	fired.Object.Name, fired.RestartStep, fired.UpdateInterval = "web-1", 1, 10*time.Minute
	notes, _ := tr.Reconcile("Pod/shop/web-1", []rules.Finding{fired})
	deliver(notes)
	old := finding("u9", "app", false, "1")
	old.Object.Name = "old"
	notes, _ = tr.Reconcile("Pod/shop/old", []rules.Finding{old})
	deliver(notes)
	clock = clock.Add(time.Minute)
	notes, _ = tr.Reconcile("Pod/shop/old", nil)
	deliver(notes)
	f := upgradeFindings()
	notes, _ = tr.Reconcile("Pod/shop/web-3", f["Pod/shop/web-3"])
	deliver(notes)
	if _, _, res := tr.Acks().Record(notes[0].Incident.ID, Ack{By: "slack:U0123ABC", Name: "Ana", At: clock, Key: "press-1"}); res != AckRecorded {
		t.Fatalf("acknowledging web-3: %v", res)
	}
	deliver(tr.Undelivered())
	tr.Reconcile("Pod/shop/api", f["Pod/shop/api"])
	clock = upgradeClock.Add(-time.Minute)
	tr.Reconcile("Pod/shop/web-1", f["Pod/shop/web-1"]) // held: within the update interval
	tr.Reconcile("Pod/shop/web-2", f["Pod/shop/web-2"]) // pending for "out"
	clock = upgradeClock
	return tr
}

// TestUpgradeFromLedger: a ledger written by an earlier herald (the
// fixture) is loaded by this one, which then sends nothing again: the
// same findings make no notification, what no sink accepted is still
// owed (once, with its first idempotency key), the held update goes out
// at its time and not before, and the wait ends when it would have.
func TestUpgradeFromLedger(t *testing.T) {
	env := testenv.New(t)
	typed, err := kube.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if *updateLedgerFixture {
		writeLedgerFixture(t, typed)
	}
	raw, err := os.ReadFile(ledgerFixture)
	if err != nil {
		t.Fatal(err)
	}
	var cms []fixtureConfigMap
	if err := json.Unmarshal(raw, &cms); err != nil {
		t.Fatal(err)
	}
	client, _ := env.Client()
	for _, cm := range cms {
		if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Labels: cm.Labels, Annotations: cm.Annotations}, Data: cm.Data,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	store := NewConfigMapStore(typed, "default", "upgrade")
	if err := store.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	incs, err := store.Load(ctx, func(msg string, args ...any) { t.Errorf("warning loading the fixture: %s %v", msg, args) })
	if err != nil {
		t.Fatal(err)
	}
	clock := upgradeClock.Add(10 * time.Second) // the new leader's start
	tr := NewTracker(Options{Now: func() time.Time { return clock }})
	tr.Restore(incs)

	for key, findings := range upgradeFindings() {
		if notes, _ := tr.Reconcile(key, findings); len(notes) != 0 {
			t.Errorf("%s: the same findings after the upgrade sent %v", key, notes)
		}
	}
	owed := tr.Undelivered()
	if len(owed) != 1 || owed[0].Incident.Object.Name != "web-2" || owed[0].Transition != Firing || owed[0].Seq != 1 {
		t.Fatalf("owed after the upgrade: %v, want web-2's firing only", owed)
	}
	if notes := tr.ReleaseHeld(clock); len(notes) != 0 {
		t.Errorf("the held update went out early: %v", notes)
	}
	clock = upgradeClock.Add(9 * time.Minute) // web-1's update interval ends
	if notes := tr.ReleaseHeld(clock); len(notes) != 1 || notes[0].Incident.Object.Name != "web-1" || notes[0].Transition != Updated || notes[0].Seq != 2 {
		t.Errorf("web-1's held update: %v, want one update, its second notification", notes)
	}
	if notes, _ := tr.Reconcile("Pod/shop/web-3", upgradeFindings()["Pod/shop/web-3"]); len(notes) != 0 {
		t.Errorf("web-3 is acknowledged: no repeat, got %v", notes)
	}
	clock = upgradeClock.Add(6 * time.Minute) // api's wait ends (10m from 4m before)
	notes, _ := tr.Reconcile("Pod/shop/api", upgradeFindings()["Pod/shop/api"])
	if len(notes) != 1 || notes[0].Transition != Firing {
		t.Errorf("api's wait: %v, want it to fire when the wait ends", notes)
	}
	// And the upgraded herald writes the ledger it loaded.
	if _, _, err := save(ctx, tr, store); err != nil {
		t.Fatal(err)
	}
}

// writeLedgerFixture records today's ledger: the scene saved through the
// ConfigMap store to the API server, and read back as it holds it.
func writeLedgerFixture(t *testing.T, typed *kube.Client) {
	ctx := context.Background()
	store := NewConfigMapStore(typed, "default", "upgrade")
	if err := store.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := save(ctx, upgradeScene(t), store); err != nil {
		t.Fatal(err)
	}
	list, err := typed.ListConfigMaps(ctx, "default", metav1.ListOptions{LabelSelector: store.selector()})
	if err != nil {
		t.Fatal(err)
	}
	claim, err := typed.GetConfigMap(ctx, "default", store.claimName())
	if err != nil {
		t.Fatal(err)
	}
	items := append(list.Items, *claim)
	var out []fixtureConfigMap
	for _, cm := range items {
		if slices.ContainsFunc(out, func(f fixtureConfigMap) bool { return f.Name == cm.Name }) {
			continue
		}
		out = append(out, fixtureConfigMap{Name: cm.Name, Labels: cm.Labels, Annotations: cm.Annotations, Data: cm.Data})
	}
	slices.SortFunc(out, func(a, b fixtureConfigMap) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ledgerFixture, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	// The fixture is then loaded into a fresh namespace's worth of names:
	// delete what the scene wrote.
	for _, cm := range out {
		if err := typed.DeleteConfigMap(ctx, "default", cm.Name, ""); err != nil {
			t.Fatal(err)
		}
	}
}

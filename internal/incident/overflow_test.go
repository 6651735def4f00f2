package incident

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

func nsFinding(ns, pod string) rules.Finding {
	f := podFinding(pod, 1)
	f.Object.Namespace = ns
	return f
}

// TestOpenIncidentsPerNamespaceCapped: with a limit of 3, a namespace's
// fourth and later problems make one "too many incidents" incident that
// counts them (updated as it grows), other namespaces are not held back,
// a held-back problem opens its own incident once there is room (and
// leaves the overflow incident), and the overflow incident resolves when
// nothing is held back.
func TestOpenIncidentsPerNamespaceCapped(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now, MaxOpenPerNamespace: 3})
	reconcile := func(ns, pod string, crashing bool) ([]Notification, time.Duration) {
		var fs []rules.Finding
		if crashing {
			fs = []rules.Finding{nsFinding(ns, pod)}
		}
		return tr.Reconcile("Pod/"+ns+"/"+pod, fs)
	}
	var notes []Notification
	for i := range 10 {
		n, recheck := reconcile("tenant", fmt.Sprintf("p%d", i), true)
		if i >= 3 && recheck == 0 {
			t.Errorf("held-back p%d is not looked at again", i)
		}
		notes = append(notes, n...)
	}
	if got := transitions(notes); got != "firing firing firing firing updated updated updated updated updated updated " {
		t.Fatalf("ten problems in one namespace: %s", got)
	}
	over := notes[len(notes)-1].Incident
	if over.Rule != OverflowRule || over.Object.Kind != "Namespace" || over.Object.Name != "tenant" || over.MemberCount != 7 {
		t.Fatalf("overflow incident: rule %s on %s %s with %d members", over.Rule, over.Object.Kind, over.Object.Name, over.MemberCount)
	}
	// It is the namespace's: routed, silenced and labelled as its
	// incidents are (a Silence in tenant mutes it).
	if over.Object.Namespace != "tenant" {
		t.Errorf("overflow incident in namespace %q, want tenant", over.Object.Namespace)
	}
	if over.Title != "Too many incidents in namespace tenant: 7 more problems held back" {
		t.Errorf("title %q", over.Title)
	}
	if !strings.Contains(over.Text, "Pod/p3, Pod/p4, Pod/p5, Pod/p6, Pod/p7 and 2 more") || over.Facts["limit"] != "3" {
		t.Errorf("text %q, facts %v", over.Text, over.Facts)
	}
	if notes[len(notes)-1].Change != "6 → 7 held back" {
		t.Errorf("change %q", notes[len(notes)-1].Change)
	}
	if n, _ := reconcile("other", "q", true); transitions(n) != "firing " || n[0].Incident.Rule != "pod-crashloop" {
		t.Errorf("another namespace is held back too: %s", transitions(n))
	}
	if tr.Open() != 5 {
		t.Errorf("%d open, want 3 in tenant, its overflow and 1 in other", tr.Open())
	}
	// p0 recovers: the next held-back problem looked at opens on its own.
	if n, _ := reconcile("tenant", "p0", false); transitions(n) != "resolved " {
		t.Fatalf("p0 recovered: %s", transitions(n))
	}
	n, _ := reconcile("tenant", "p3", true)
	if got := transitions(n); got != "firing updated " || n[0].Incident.Object.Name != "p3" || n[1].Change != "7 → 6 held back" {
		t.Fatalf("p3 with room: %s %+v", got, n)
	}
	// The others recover: the overflow incident counts down and resolves.
	var end []Notification
	for i := 4; i < 10; i++ {
		n, _ := reconcile("tenant", fmt.Sprintf("p%d", i), false)
		end = append(end, n...)
	}
	if got := transitions(end); got != "updated updated updated updated updated resolved " {
		t.Errorf("held-back problems gone: %s", got)
	}
	if tr.Open() != 4 {
		t.Errorf("%d open, want p1, p2, p3 and q", tr.Open())
	}
}

// TestOversizedIncidentFitsTheLedger: an incident whose texts and
// undelivered notifications grew past any shard is saved cut down, so the
// ledger's layout succeeds and every shard stays under MaxShardBytes.
func TestOversizedIncidentFitsTheLedger(t *testing.T) {
	incs := realisticIncidents(200)
	huge := &incs[7]
	huge.Text = strings.Repeat("x", 2<<20)
	huge.Facts["lastMessage"] = strings.Repeat("é", 600<<10)
	for i := range 20000 {
		huge.Pending = append(huge.Pending, Pending{Seq: i, Transition: Updated, Change: strings.Repeat("c", 100), Sinks: []string{"slack"}})
	}
	store := NewConfigMapStore(nil, "default", "herald-ledger")
	shared := make([]*Incident, len(incs))
	for i := range incs {
		shared[i] = &incs[i]
	}
	shards := map[string]string{} // every shard the first save writes
	keep := shardIO{
		put: func(_ context.Context, name, data string) error { shards[name] = data; return nil },
		del: func(context.Context, string, string) error { return nil },
	}
	if err := store.save(context.Background(), shared, keep); err != nil {
		t.Fatalf("save: %v", err)
	}
	found := false
	for name, data := range shards {
		if len(data)+1 > MaxShardBytes {
			t.Errorf("shard %s is %d bytes", name, len(data))
		}
		var loaded []Incident
		if err := json.Unmarshal([]byte(data), &loaded); err != nil {
			t.Fatal(err)
		}
		for _, inc := range loaded {
			if inc.ID != huge.ID {
				continue
			}
			found = true
			b, _ := json.Marshal(inc)
			if len(b) > MaxIncidentBytes || inc.Seq != huge.Seq || len(inc.Pending) == 0 || inc.Pending[len(inc.Pending)-1].Seq != 19999 {
				t.Errorf("saved entry: %d bytes, seq %d, %d pending; want ≤ %d, its seq, the newest pending kept", len(b), inc.Seq, len(inc.Pending), MaxIncidentBytes)
			}
		}
	}
	if !found {
		t.Error("the oversized incident was not saved at all")
	}
}

// TestNamespaceCapStage: the stage alone — a namespace is full at its
// limit of open incidents, overflow incidents and cluster-scoped objects
// are not counted, and closing makes room.
func TestNamespaceCapStage(t *testing.T) {
	c := newNamespaceCap(2)
	f := finding("u1", "app", false, "1") // in namespace shop
	a, b := &Incident{Object: f.Object}, &Incident{Object: f.Object}
	c.count(a, 1)
	if c.full(f) {
		t.Fatal("full at 1 of 2")
	}
	c.count(&Incident{Rule: OverflowRule, Object: f.Object}, 1)
	c.count(&Incident{Object: rules.ObjectRef{Kind: "Node", Name: "n1"}}, 1)
	if c.full(f) {
		t.Fatal("an overflow incident or a node's counted in the namespace")
	}
	c.count(b, 1)
	if !c.full(f) {
		t.Fatal("not full at 2 of 2")
	}
	if node := (rules.Finding{Object: rules.ObjectRef{Kind: "Node", Name: "n2"}}); c.full(node) {
		t.Error("a cluster-scoped object is capped")
	}
	c.count(a, -1)
	if c.full(f) || len(c.openIn) != 1 {
		t.Errorf("closing one made no room: %v", c.openIn)
	}
	if none := newNamespaceCap(0); none.full(f) {
		t.Error("a cap of 0 caps")
	}
}

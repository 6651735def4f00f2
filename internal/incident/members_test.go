package incident

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

// longPod names pod i of a workload with a name of 250 characters.
func longPod(i int) string {
	return fmt.Sprintf("%s-%05d", strings.Repeat("p", 244), i)
}

func groupedFinding(pod string, total int) rules.Finding {
	f := podFinding(pod, 1)
	f.GroupByWorkload, f.GroupTotal = true, total
	f.Group = &rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "api"}
	return f
}

// TestMembersBounded: a workload of 3,000 pods with 250-character names
// makes one incident whose notifications and ledger entry hold a count
// and a sample, never the 3,000 names; the message names five and says
// how many more; members leaving count down to a resolution.
func TestMembersBounded(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	tr := NewTracker(Options{Now: clock.now})
	const n = 3000
	var last Notification
	for i := range n {
		notes, _ := tr.Reconcile("Pod/shop/"+longPod(i), []rules.Finding{groupedFinding(longPod(i), n)})
		for _, note := range notes {
			last = note
			tr.Delivered(note, "out")
		}
	}
	inc := last.Incident
	if inc.MemberCount != n || len(inc.Members) != MaxMemberSample {
		t.Fatalf("notification holds %d member keys and a count of %d, want %d and %d", len(inc.Members), inc.MemberCount, MaxMemberSample, n)
	}
	if want := "CrashLoopBackOff: Deployment shop/api: 3000/3000 pods (container app)"; inc.Title != want {
		t.Errorf("title %q, want %q", inc.Title, want)
	}
	if pods := inc.Facts["pods"]; !strings.HasPrefix(pods, longPod(0)+", "+longPod(1)) || !strings.HasSuffix(pods, " and 2,995 more") {
		t.Errorf("pods fact %q, want five names and 2,995 more", pods)
	}
	incs, _ := tr.Snapshot()
	entry, err := json.Marshal(incs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(entry) > 16<<10 {
		t.Errorf("ledger entry of the incident is %d bytes, want at most 16 KiB whatever the number of pods", len(entry))
	}
	t.Logf("3,000 pods of 250 characters: ledger entry %d bytes", len(entry))
	// The first pods recover: the sample fills from those still crashing.
	for i := range n - 1 {
		tr.Reconcile("Pod/shop/"+longPod(i), nil)
	}
	incs, _ = tr.Snapshot()
	if got := incs[0]; got.MemberCount != 1 || len(got.Members) != 1 || got.Members[0] != "Pod/shop/"+longPod(n-1) {
		t.Fatalf("after %d pods recovered: count %d, sample %d (%.20q…), want the last pod", n-1, got.MemberCount, len(got.Members), got.Members)
	}
	notes, _ := tr.Reconcile("Pod/shop/"+longPod(n-1), nil)
	if transitions(notes) != "resolved " {
		t.Errorf("last pod recovered: %s, want resolved", transitions(notes))
	}
}

// TestMembersAfterRestore: restored from the ledger, a grouped incident
// knows its count and sample only; the start-up reconcile sees members
// again (not counted twice), and MembersSeen counts out those it did not
// see: an update says how many are left, or, with none left, the
// incident resolves.
func TestMembersAfterRestore(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	opts := Options{Now: clock.now}
	tr := NewTracker(opts)
	const n = 100
	for i := range n {
		tr.Reconcile(fmt.Sprintf("Pod/shop/api-%03d", i), []rules.Finding{groupedFinding(fmt.Sprintf("api-%03d", i), n)})
	}
	saved, _ := tr.Snapshot()

	t.Run("some left while away", func(t *testing.T) {
		tr := NewTracker(opts)
		tr.Restore(saved)
		var notes []Notification
		for i := 40; i < n; i++ { // 60 still crash, the first 40 are gone
			more, _ := tr.Reconcile(fmt.Sprintf("Pod/shop/api-%03d", i), []rules.Finding{groupedFinding(fmt.Sprintf("api-%03d", i), n)})
			notes = append(notes, more...)
		}
		for _, k := range tr.MemberKeys() {
			if k < "Pod/shop/api-040" {
				more, _ := tr.ReconcileGone(k)
				notes = append(notes, more...)
			}
		}
		if len(notes) != 0 {
			t.Fatalf("start-up reconcile made %s before MembersSeen", transitions(notes))
		}
		notes = tr.MembersSeen()
		if len(notes) != 1 || notes[0].Transition != Updated || notes[0].Change != "100 → 60 of 100 pods" {
			t.Fatalf("MembersSeen: %+v, want one update 100 → 60", notes)
		}
	})
	t.Run("none left", func(t *testing.T) {
		tr := NewTracker(opts)
		tr.Restore(saved)
		var recheck time.Duration
		for _, k := range tr.MemberKeys() {
			notes, r := tr.ReconcileGone(k)
			if len(notes) != 0 {
				t.Fatalf("%s gone: %s before MembersSeen", k, transitions(notes))
			}
			recheck = max(recheck, r)
		}
		if recheck == 0 || len(tr.MemberKeys()) == 0 {
			t.Fatal("no recheck asked for and no member key kept: nothing would resolve the incident")
		}
		if notes := tr.MembersSeen(); len(notes) != 0 {
			t.Fatalf("MembersSeen: %s", transitions(notes))
		}
		var notes []Notification
		for _, k := range tr.MemberKeys() {
			more, _ := tr.ReconcileGone(k)
			notes = append(notes, more...)
		}
		if transitions(notes) != "resolved " || tr.Open() != 0 {
			t.Fatalf("recheck after MembersSeen: %s, %d open; want resolved", transitions(notes), tr.Open())
		}
	})
}

// TestLedgerBeforeBoundedMembers: an incident written with every member
// and no count loads with its count, and saves a sample.
func TestLedgerBeforeBoundedMembers(t *testing.T) {
	old := Incident{ID: "fp-1", Fingerprint: "fp", Rule: "r", Grouped: true, Object: rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "api"}}
	for i := range 50 {
		old.Members = append(old.Members, fmt.Sprintf("Pod/shop/api-%02d", i))
	}
	old.NotifiedMembers = 50
	tr := NewTracker(Options{})
	tr.Restore([]Incident{old})
	incs, _ := tr.Snapshot()
	if incs[0].MemberCount != 50 || len(incs[0].Members) != MaxMemberSample {
		t.Errorf("count %d, sample %d; want 50 and %d", incs[0].MemberCount, len(incs[0].Members), MaxMemberSample)
	}
	if len(tr.MemberKeys()) != 50 || len(tr.MembersSeen()) != 0 {
		t.Error("every member of the old entry should be known, and none unseen")
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 2950: "2,950", 1234567: "1,234,567", -4200: "-4,200"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

package incident

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/internal/testenv"
)

// realisticIncidents makes n open incidents shaped like crash loops.
func realisticIncidents(n int) []Incident {
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	incs := make([]Incident, n)
	for i := range incs {
		pod := fmt.Sprintf("checkout-7d9f8b6c5-%05d", i)
		fp := fmt.Sprintf("%016x", i*7919)
		incs[i] = Incident{
			ID: fp + "-mwr4w8x4", Fingerprint: fp, Rule: "pod-crashloop", Severity: "critical", Reason: "CrashLoopBackOff",
			Object:    rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: pod, UID: fmt.Sprintf("5f0c%04x-1b2c-4d5e-8f90-%012x", i%65536, i)},
			Container: "app", Facts: map[string]string{"restartCount": "7", "exitCode": "1", "lastReason": "Error"},
			Title: "CrashLoopBackOff: Pod shop/" + pod + " container app",
			Text:  "CrashLoopBackOff: Pod shop/" + pod + " container app: restarted 7 times, last exit code 1 (Error)",
			Sinks: []string{"slack"}, FirstSeen: t0, Seq: 1, LastNotified: t0, Members: []string{"Pod/shop/" + pod},
			NotifiedMembers: 1, NotifiedRestarts: 7,
		}
	}
	return incs
}

// TestConfigMapLedger runs the ConfigMap ledger against one real API
// server: each part uses a ledger of its own name.
func TestConfigMapLedger(t *testing.T) {
	env := testenv.New(t)
	client, _ := env.Client()
	typed, err := kube.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("SizeBound", func(t *testing.T) { ledgerSizeBound(t, client, typed) })
	t.Run("Archive", func(t *testing.T) { ledgerArchive(t, client, typed) })
	t.Run("Journal", func(t *testing.T) { ledgerJournal(t, client, typed) })
	t.Run("JournalFoldInterrupted", func(t *testing.T) { ledgerJournalFoldInterrupted(t, typed) })
	t.Run("JournalStale", func(t *testing.T) { ledgerJournalStale(t, client, typed) })
	t.Run("HashedWriteLandsLate", func(t *testing.T) { ledgerHashedWriteLandsLate(t, typed) })
	t.Run("LostWriteThenReshard", func(t *testing.T) { ledgerLostWriteThenReshard(t, client, typed) })
	t.Run("DeleteUnknownVersion", func(t *testing.T) { ledgerDeleteUnknownVersion(t, typed) })
	t.Run("Conditional", func(t *testing.T) { ledgerConditional(t, typed) })
	t.Run("Adopt", func(t *testing.T) { ledgerAdopt(t, typed) })
	t.Run("OwnWriteLandsLate", func(t *testing.T) { ledgerOwnWriteLandsLate(t, env.Config, typed) })
	t.Run("DeposedPastItsClaim", func(t *testing.T) { ledgerDeposedPastItsClaim(t, env.Config, typed) })
	t.Run("EpochOrders", func(t *testing.T) { ledgerEpochOrders(t, typed) })
	t.Run("HandEditConflicts", func(t *testing.T) { ledgerHandEditConflicts(t, typed) })
	t.Run("FinalWriteFenced", func(t *testing.T) { ledgerFinalWriteFenced(t, env.Config, typed) })
	t.Run("Waits", func(t *testing.T) { ledgerWaits(t, typed) })
	t.Run("LastEpoch", func(t *testing.T) { ledgerLastEpoch(t, typed) })
}

// ledgerAdopt: a ConfigMap named like a shard but not labelled as one (a
// restored backup, labels removed by hand) is taken over by the leader,
// not taken for another writer's shard — which would make every leader
// start over in turn.
func ledgerAdopt(t *testing.T, typed *kube.Client) {
	ctx := context.Background()
	stray := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stray-1-0", Namespace: "default"}, Data: map[string]string{"x": "y"}}
	if _, err := typed.CreateConfigMap(ctx, stray); err != nil {
		t.Fatal(err)
	}
	store := NewConfigMapStore(typed, "default", "stray")
	if err := store.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Load(ctx, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	if err := store.Save(ctx, realisticIncidents(5)); err != nil {
		t.Fatalf("saving over an unlabelled ConfigMap named like a shard: %v", err)
	}
	loaded, err := NewConfigMapStore(typed, "default", "stray").Load(ctx, func(string, ...any) {})
	if err != nil || len(loaded) != 5 {
		t.Errorf("loaded %d incidents (%v) after the adoption, want 5", len(loaded), err)
	}
}

// ledgerConditional: two replicas write one ledger, as a deposed leader
// and its successor do. Once the successor has claimed the ledger, every
// write of the old one — a change to a shard the successor has not
// written yet, or has, a resharding that creates one and deletes two — is
// refused with ErrConflict, and what the successor wrote stays.
func ledgerConditional(t *testing.T, typed *kube.Client) {
	ctx := context.Background()
	warn := func(string, ...any) {}
	old := NewConfigMapStore(typed, "default", "fenced-ledger")
	if err := old.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Load(ctx, warn); err != nil {
		t.Fatal(err)
	}
	incs := realisticIncidents(3000) // two shards
	if err := old.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	successor := NewConfigMapStore(typed, "default", "fenced-ledger")
	if err := successor.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	loaded, err := successor.Load(ctx, warn)
	if err != nil || len(loaded) != len(incs) {
		t.Fatalf("the successor loaded %d incidents (%v), want %d", len(loaded), err, len(incs))
	}
	changed := func() []Incident { c := realisticIncidents(3000); c[0].Seq, c[0].rev = 9, 99; return c }
	if err := old.Save(ctx, changed()); !errors.Is(err, ErrConflict) {
		t.Errorf("the deposed leader's write of a shard its successor loaded but has not written yet: %v, want ErrConflict", err)
	}
	for i := range loaded {
		loaded[i].Seq = 2 // the successor notified every one again
	}
	if err := successor.Save(ctx, loaded); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		incs []Incident
	}{
		{"a changed incident", changed()},
		{"half the incidents gone (a new shard created, two deleted)", realisticIncidents(100)},
	} {
		if err := old.Save(ctx, tc.incs); !errors.Is(err, ErrConflict) {
			t.Errorf("the deposed leader's write of %s after the successor's: %v, want ErrConflict", tc.what, err)
		}
	}
	after, err := NewConfigMapStore(typed, "default", "fenced-ledger").Load(ctx, warn)
	if err != nil || len(after) != len(incs) {
		t.Fatalf("loaded %d incidents after the deposed leader's writes (%v), want %d", len(after), err, len(incs))
	}
	for _, inc := range after {
		if inc.Seq != 2 {
			t.Fatalf("incident %s has seq %d: the deposed leader overwrote the successor's ledger", inc.ID, inc.Seq)
		}
	}
	if err := successor.Save(ctx, after[:10]); err != nil {
		t.Errorf("the successor's own next write (deleting a shard): %v", err)
	}
}

// ledgerSizeBound writes 20,000 open incidents: every shard stays under
// MaxShardBytes, everything loads back, an incident archived writes no
// hashed shard, and a storm's changes go to the journal, not to the
// shards that hold them.
func ledgerSizeBound(t *testing.T, client kubernetes.Interface, typed *kube.Client) {
	ctx := context.Background()
	store := NewConfigMapStore(typed, "default", "herald-ledger")
	var put int
	store.CountBytes(func(n int) { put += n })
	incs := realisticIncidents(20000)
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	cms, err := client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: store.selector()})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, cm := range cms.Items {
		size := len(cm.Data[dataKey])
		total += size
		if size > MaxShardBytes {
			t.Errorf("shard %s holds %d bytes, over %d", cm.Name, size, MaxShardBytes)
		}
	}
	t.Logf("20000 incidents: %d shards, %d bytes, %d bytes per incident", len(cms.Items), total, total/20000)
	if put != total {
		t.Errorf("the store counted %d bytes written, the shards hold %d", put, total)
	}

	loaded, err := NewConfigMapStore(typed, "default", "herald-ledger").Load(ctx, func(msg string, args ...any) { t.Errorf("warning: %s %v", msg, args) })
	if err != nil || len(loaded) != 20000 {
		t.Fatalf("loaded %d incidents, %v", len(loaded), err)
	}
	rv := map[string]string{}
	for _, cm := range cms.Items {
		rv[cm.Name] = cm.ResourceVersion
	}
	// One incident resolves, its deliveries done: it moves to the
	// archive, a new shard. No hashed shard is written: its open copy
	// stays in its shard, older than the archive's, until the shard is
	// next written.
	incs[42].ResolvedAt = time.Now()
	incs[42].rev++ // as the tracker marks every change (touch)
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	after, _ := client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: store.selector()})
	changed, added := 0, 0
	for _, cm := range after.Items {
		switch old, ok := rv[cm.Name]; {
		case !ok:
			added++
			if cm.Name != "herald-ledger-a-0" {
				t.Errorf("new shard %s, want only the archive's herald-ledger-a-0", cm.Name)
			}
		case old != cm.ResourceVersion:
			changed++
		}
	}
	if changed != 0 || added != 1 {
		t.Errorf("%d shards rewritten and %d added for one resolved incident, want 0 and 1", changed, added)
	}

	// A storm: 50 incidents change, spread over the shards. The save
	// writes their copies to the journal, not the shards they are in.
	rng := rand.New(rand.NewPCG(4, 2))
	changedIDs := map[string]string{}
	for range 50 {
		i := rng.IntN(len(incs))
		if i == 42 {
			continue
		}
		incs[i].Facts = map[string]string{"restartCount": strconv.Itoa(100 + i)}
		incs[i].rev++
		changedIDs[incs[i].ID] = incs[i].Facts["restartCount"]
	}
	put = 0
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	t.Logf("a storm's save: %d changed incidents of 20,000, %d bytes sent", len(changedIDs), put)
	if bound := 50 * 1000; put > bound {
		t.Errorf("a save of %d changed incidents of 20,000 sent %d bytes, want at most %d (their copies, not their shards)", len(changedIDs), put, bound)
	}
	loaded, err = NewConfigMapStore(typed, "default", "herald-ledger").Load(ctx, func(msg string, args ...any) { t.Errorf("warning: %s %v", msg, args) })
	if err != nil || len(loaded) != len(incs) {
		t.Fatalf("loaded %d incidents after the storm's save (%v), want %d", len(loaded), err, len(incs))
	}
	for _, inc := range loaded {
		if want, ok := changedIDs[inc.ID]; ok && inc.Facts["restartCount"] != want {
			t.Errorf("incident %s loaded with restartCount %s, want %s: the journal's copy lost", inc.ID, inc.Facts["restartCount"], want)
		}
		if inc.ID == incs[42].ID && inc.ResolvedAt.IsZero() {
			t.Errorf("incident 42 loaded open: its stale copy in its hashed shard won over the archive's")
		}
	}

	// Shrinking the ledger removes shards no longer needed.
	if err := store.Save(ctx, incs[:10]); err != nil {
		t.Fatal(err)
	}
	after, _ = client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: store.selector()})
	if len(after.Items) != 1 || !strings.HasPrefix(after.Items[0].Name, "herald-ledger-1-") {
		t.Errorf("after shrinking to 10 incidents: %d shards", len(after.Items))
	}
}

// ledgerArchive: resolved incidents whose deliveries are done
// go to archive shards written while they fill and then left alone. Under
// churn a save writes the changed open incident's shard and the filling
// archive shard, never a sealed one; an archived incident that opens
// again, or changes, is current from its new shard though its stale copy
// stays in the sealed one (listed before or after it); a sealed shard whose incidents have all left the ledger
// is deleted; and a fresh load returns exactly the ledger.
func ledgerArchive(t *testing.T, client kubernetes.Interface, typed *kube.Client) {
	ctx := context.Background()
	store := NewConfigMapStore(typed, "default", "arch")
	sizes := watchSizes(t, client, "arch", store)
	shards := func() map[string]string { // name → resourceVersion
		t.Helper()
		list, err := client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: store.selector()})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, cm := range list.Items {
			if len(cm.Data[dataKey]) > MaxShardBytes {
				t.Errorf("shard %s holds %d bytes", cm.Name, len(cm.Data[dataKey]))
			}
			out[cm.Name] = cm.ResourceVersion
		}
		return out
	}
	journal := func(m map[string]string) (names []string) {
		for name := range m {
			if _, ok := fillAndSealNumber("arch", "j", name); ok {
				names = append(names, name)
			}
		}
		return names
	}
	// written: the hashed and archive shards written between before and
	// after (the journal's: journal()).
	written := func(before, after map[string]string) (hashed, archived []string) {
		for name, v := range after {
			if before[name] == v {
				continue
			}
			if _, ok := archiveShardNumber("arch", name); ok {
				archived = append(archived, name)
			} else if _, ok := fillAndSealNumber("arch", "j", name); !ok {
				hashed = append(hashed, name)
			}
		}
		return hashed, archived
	}
	loadsExactly := func(incs []Incident) map[string]Incident {
		t.Helper()
		loaded, err := NewConfigMapStore(typed, "default", "arch").Load(ctx, func(msg string, args ...any) { t.Errorf("warning: %s %v", msg, args) })
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]Incident{}
		for _, inc := range loaded {
			byID[inc.ID] = inc
		}
		if len(loaded) != len(incs) || len(byID) != len(incs) {
			t.Fatalf("loaded %d incidents (%d IDs), want %d", len(loaded), len(byID), len(incs))
		}
		for _, inc := range incs {
			if got, ok := byID[inc.ID]; !ok || !got.ResolvedAt.Equal(inc.ResolvedAt) || got.Facts["restartCount"] != inc.Facts["restartCount"] {
				t.Fatalf("incident %s loaded as %+v, want %+v", inc.ID, got, inc)
			}
		}
		return byID
	}

	// 10 open incidents, 990 resolved: the archive fills several shards
	// in one save.
	incs := realisticIncidents(1000)
	resolved := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	for i := 10; i < len(incs); i++ {
		incs[i].ResolvedAt = resolved
	}
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	first := shards()
	var archives []string
	for name := range first {
		if _, ok := archiveShardNumber("arch", name); ok {
			archives = append(archives, name)
		}
	}
	if len(archives) < 3 || len(first) != len(archives)+1 {
		t.Fatalf("shards %v: want one hashed shard and at least 3 archive shards for 990 resolved incidents", first)
	}
	// Sealed at a 32nd of what the archive holds (at least 16 KiB): a
	// save rewrites the filling one.
	if most, seal := largestShard(t, client, "arch", "a"), max(sizes.last.Archive.Bytes/32, minSealBytes); most > seal+2<<10 {
		t.Errorf("an archive shard of %d bytes in an archive of %d: want it sealed at %d", most, sizes.last.Archive.Bytes, seal)
	}
	loadsExactly(incs)

	// Churn: an open incident changes, a new one resolves.
	incs[3].Facts = map[string]string{"restartCount": "8"}
	incs[3].rev++
	extra := realisticIncidents(1001)[1000]
	extra.ResolvedAt = resolved
	incs = append(incs, extra)
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	second := shards()
	hashed, archived := written(first, second)
	if len(hashed) != 0 || len(archived) != 1 || archived[0] != store.archive.filling || len(journal(second)) != 1 {
		t.Errorf("under churn wrote hashed %v and archive %v, journal %v; want no hashed shard, only the filling archive shard %s and one journal shard",
			hashed, archived, journal(second), store.archive.filling)
	}
	sizes.check()

	// An incident in the first, sealed archive shard opens again.
	if store.archive.home[incs[20].ID].shard != "arch-a-0" {
		t.Fatalf("incident 20 archived in %q, want arch-a-0", store.archive.home[incs[20].ID].shard)
	}
	incs[20].ResolvedAt = time.Time{}
	incs[20].rev++
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	third := shards()
	if hashed, archived := written(second, third); len(hashed) != 0 || len(archived) != 0 || third[store.journal.filling] == second[store.journal.filling] {
		t.Errorf("reopening an archived incident wrote hashed %v and archive %v; want only the journal's filling shard", hashed, archived)
	}
	if got := loadsExactly(incs)[incs[20].ID]; !got.ResolvedAt.IsZero() {
		t.Errorf("reopened incident loaded resolved at %v: its stale archived copy won over its current one", got.ResolvedAt)
	}

	// Another incident in arch-a-0 changes and stays resolved: its new
	// copy goes to the filling shard, listed after arch-a-0 where its
	// stale copy stays.
	incs[21].Facts = map[string]string{"restartCount": "9"}
	incs[21].rev++
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	moved := shards()
	if hashed, archived := written(third, moved); len(hashed) != 0 || len(archived) != 1 || archived[0] != store.archive.filling {
		t.Errorf("changing an archived incident wrote hashed %v and archive %v, want only the filling archive shard", hashed, archived)
	}
	if got := loadsExactly(incs)[incs[21].ID]; got.Facts["restartCount"] != "9" {
		t.Errorf("changed archived incident loaded as %v: its stale copy won", got.Facts)
	}
	third = moved

	// Every incident archived in arch-a-0 leaves the ledger (expired):
	// the shard goes, no other archive shard is written.
	var kept []Incident
	for _, inc := range incs {
		if h, ok := store.archive.home[inc.ID]; !ok || h.shard != "arch-a-0" {
			kept = append(kept, inc)
		}
	}
	if len(kept) == len(incs) {
		t.Fatal("nothing archived in arch-a-0")
	}
	if err := store.Save(ctx, kept); err != nil {
		t.Fatal(err)
	}
	fourth := shards()
	if _, ok := fourth["arch-a-0"]; ok {
		t.Error("arch-a-0 still there after everything it held left the ledger")
	}
	if _, archived := written(third, fourth); len(archived) != 0 {
		t.Errorf("expiry rewrote archive shards %v", archived)
	}
	sizes.check()
	loadsExactly(kept)

	// An open incident changes: journaled.
	for i := range kept {
		if kept[i].ResolvedAt.IsZero() {
			kept[i].Facts = map[string]string{"restartCount": "11"}
			kept[i].rev++
			break
		}
	}
	if err := store.Save(ctx, kept); err != nil {
		t.Fatal(err)
	}
	fourth = shards()

	// A store that loaded the ledger carries on: the next save keeps
	// what is archived where it is.
	again := NewConfigMapStore(typed, "default", "arch")
	sizes.of(again)
	loaded, err := again.Load(ctx, func(msg string, args ...any) { t.Errorf("warning: %s %v", msg, args) })
	if err != nil {
		t.Fatal(err)
	}
	if len(journal(fourth)) == 0 {
		t.Fatal("no journal shard before the load: the part below tests nothing")
	}
	if err := again.Save(ctx, loaded); err != nil {
		t.Fatal(err)
	}
	// Its first save folds the journal into the hashed shards (it does
	// not know what they hold), and writes no archive shard.
	folded := shards()
	if _, archived := written(fourth, folded); len(archived) != 0 || len(journal(folded)) != 0 {
		t.Errorf("the first save after a load wrote archive %v and left journal %v; want no archive shard written and the journal folded", archived, journal(folded))
	}
	sizes.check() // the archive's shards as loaded
	loadsExactly(kept)
	if err := again.Save(ctx, loaded); err != nil {
		t.Fatal(err)
	}
	if hashed, archived := written(folded, shards()); len(hashed)+len(archived) != 0 {
		t.Errorf("saving again what was just loaded wrote hashed %v and archive %v, want nothing", hashed, archived)
	}
	fourth = shards()

	// An archive shard that cannot be read is reported, and deleted at
	// the next save rather than left behind for ever; so is a hashed
	// shard of a shard count the ledger no longer has.
	for _, name := range []string{"arch-a-99", "arch-4-3"} {
		bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels: map[string]string{ledgerLabel: ledgerValue, "herald.io/ledger": "arch"}}, Data: map[string]string{dataKey: "[{not json"}}
		if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, bad, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	warned := 0
	afterBad := NewConfigMapStore(typed, "default", "arch")
	loaded, err = afterBad.Load(ctx, func(string, ...any) { warned++ })
	if err != nil || warned != 2 || len(loaded) != len(kept) {
		t.Fatalf("loading beside two unreadable shards: %d incidents, %d warnings, %v; want %d, 2", len(loaded), warned, err, len(kept))
	}
	if err := afterBad.Save(ctx, loaded); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"arch-a-99", "arch-4-3"} {
		if _, ok := shards()[name]; ok {
			t.Errorf("the unreadable shard %s is still there after a save", name)
		}
	}
}

// ledgerLastEpoch: a claim holding the last epoch there is (an edit by
// hand) is refused with what to do, rather than wrapped to 0, which would
// order the new writer's shards before every earlier one's.
func ledgerLastEpoch(t *testing.T, typed *kube.Client) {
	ctx := context.Background()
	store := NewConfigMapStore(typed, "default", "last-epoch")
	if _, err := typed.CreateConfigMap(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: store.claimName(), Namespace: "default"},
		Data: map[string]string{"holder": "someone-else", "epoch": "18446744073709551615"}}); err != nil {
		t.Fatal(err)
	}
	err := store.Claim(ctx)
	if err == nil || !strings.Contains(err.Error(), "last epoch") || !strings.Contains(err.Error(), "kubectl delete configmap -n default last-epoch-claim") {
		t.Fatalf("claiming after the last epoch: %v (epoch %d)", err, store.Epoch())
	}
}

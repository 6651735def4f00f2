package incident

// The ledger's journal against a real API server (journal.go): run by
// TestConfigMapLedger, beside the other ledger parts.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/kube"
)

// ledgerJournal: a change goes to the journal and loads as current; an
// incident that leaves the ledger never comes back on load, whether its
// newest copy is in the journal or in its hashed shard; and the journal,
// grown to half the open incidents, is folded into the hashed shards
// and deleted.
func ledgerJournal(t *testing.T, client kubernetes.Interface, typed *kube.Client) {
	ctx := context.Background()
	store := NewConfigMapStore(typed, "default", "jrnl")
	folds := 0
	store.CountFolds(func() { folds++ })
	sizes := watchSizes(t, client, "jrnl", store)
	kinds := func() (hashed, journal map[string]string) { // name → resourceVersion
		t.Helper()
		list, err := client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: store.selector()})
		if err != nil {
			t.Fatal(err)
		}
		hashed, journal = map[string]string{}, map[string]string{}
		for _, cm := range list.Items {
			if _, ok := fillAndSealNumber("jrnl", "j", cm.Name); ok {
				journal[cm.Name] = cm.ResourceVersion
			} else {
				hashed[cm.Name] = cm.ResourceVersion
			}
		}
		return hashed, journal
	}
	loadsExactly := func(incs []Incident) {
		t.Helper()
		loadsAs(t, typed, "jrnl", incs)
	}
	change := func(inc *Incident, restarts int) {
		inc.Facts = map[string]string{"restartCount": strconv.Itoa(restarts)}
		inc.rev++
	}

	// Enough incidents (690 KB) that the journal seals a shard before it
	// holds half their bytes.
	incs := realisticIncidents(1000)
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	hashed, _ := kinds()

	// A change: journaled, the hashed shards left alone.
	change(&incs[5], 50)
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	now, journal := kinds()
	if !maps.Equal(now, hashed) || len(journal) != 1 {
		t.Fatalf("a change wrote hashed shards %v (were %v) and journal %v; want only a journal shard", now, hashed, journal)
	}
	sizes.check()
	loadsExactly(incs)
	// 200 more: the journal's first shard, holding incident 5's copy,
	// fills and is sealed; still no hashed shard is written.
	for i := 100; i < 300; i++ {
		change(&incs[i], i)
	}
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	if now, journal = kinds(); !maps.Equal(now, hashed) || len(journal) < 2 || !store.journal.shards["jrnl-j-0"].sealed {
		t.Fatalf("200 more changes wrote hashed shards %v (were %v) and journal %v; want only journal shards, jrnl-j-0 sealed", now, hashed, journal)
	}
	sizes.check()
	// Each sealed at a 32nd of the journal's size at its fold (half the
	// open incidents'), not larger: a save rewrites the filling one.
	if most, seal := largestShard(t, client, "jrnl", "j"), max(sizes.last.Hashed.Bytes/2/32, minSealBytes); most > seal+2<<10 {
		t.Errorf("a journal shard of %d bytes, sealed at %d", most, seal)
	}
	loadsExactly(incs)

	// Incident 5 leaves the ledger: its copy in the sealed journal shard
	// must not bring it back.
	incs = slices.Delete(incs, 5, 6)
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	loadsExactly(incs)

	// An incident never journaled leaves from its hashed shard while
	// another's change is journaled: a tombstone, no hashed write.
	change(&incs[6], 60)
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	incs = slices.Delete(incs, 7, 8)
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	if now, _ := kinds(); !maps.Equal(now, hashed) {
		t.Errorf("an incident leaving wrote hashed shards %v (were %v); want only its tombstone in the journal", now, hashed)
	}
	loadsExactly(incs)

	// Changes pile up in the journal until it holds half the open
	// incidents' bytes; then a save folds it into the hashed shards.
	folded := false
	for i := range 100 {
		for j := range 10 {
			change(&incs[(10*i+j)%len(incs)], 1000+i)
		}
		if err := store.Save(ctx, incs); err != nil {
			t.Fatal(err)
		}
		if _, journal := kinds(); len(journal) == 0 {
			folded = true
			break
		}
	}
	if !folded {
		t.Error("the journal was never folded into the hashed shards")
	}
	if folds < 2 { // the first save, and this one
		t.Errorf("%d folds counted, want at least 2", folds)
	}
	sizes.check()
	loadsExactly(incs)
	// What the store remembers of its writes goes with the shards.
	now, journal = kinds()
	for name := range store.recent {
		if _, ok := now[name]; !ok && journal[name] == "" {
			t.Errorf("the store still remembers writes of %s, deleted", name)
		}
	}

	// An incident leaves and comes back, unchanged (a restored wait
	// pushed out and let back in): its tombstone must not hide it.
	back := incs[3]
	incs = slices.Delete(incs, 3, 4)
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	loadsExactly(incs)
	// 200 changes seal the journal shard that holds its tombstone.
	for i := 100; i < 300; i++ {
		change(&incs[i], 3000+i)
	}
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	if h := store.journal.home[back.ID]; h.shard == "" || !store.journal.shards[h.shard].sealed {
		t.Fatalf("the tombstone is not in a sealed journal shard (%+v): the test does not test what it says", h)
	}
	incs = slices.Insert(incs, 3, back) // where it was: its shard holds what it held
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	loadsExactly(incs)
}

// sizeWatch keeps what stores of one ledger last reported of its size
// (ReportSizes), to check against what the API server holds.
type sizeWatch struct {
	t      *testing.T
	client kubernetes.Interface
	ledger string
	last   ShardSizes
}

func watchSizes(t *testing.T, client kubernetes.Interface, ledger string, store *ConfigMapStore) *sizeWatch {
	w := &sizeWatch{t: t, client: client, ledger: ledger}
	w.of(store)
	return w
}

// of makes store report to w too.
func (w *sizeWatch) of(store *ConfigMapStore) { store.ReportSizes(func(sz ShardSizes) { w.last = sz }) }

// check fails the test unless what was last reported is what the API
// server holds.
func (w *sizeWatch) check() {
	w.t.Helper()
	if stored := storedSizes(w.t, w.client, w.ledger); w.last != stored {
		w.t.Errorf("the store reports shards %+v, the API server holds %+v", w.last, stored)
	}
}

// storedShards is the length of the data of each of ledger's shards in
// the API server, by name.
func storedShards(t *testing.T, client kubernetes.Interface, ledger string) map[string]int {
	t.Helper()
	list, err := client.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{LabelSelector: "herald.io/ledger=" + ledger})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, cm := range list.Items {
		out[cm.Name] = len(cm.Data[dataKey])
	}
	return out
}

// storedSizes counts ledger's shards of each kind in the API server, and
// the bytes of their data.
func storedSizes(t *testing.T, client kubernetes.Interface, ledger string) ShardSizes {
	t.Helper()
	var out ShardSizes
	for name, size := range storedShards(t, client, ledger) {
		kind := &out.Hashed
		if _, ok := fillAndSealNumber(ledger, "j", name); ok {
			kind = &out.Journal
		} else if _, ok := fillAndSealNumber(ledger, "a", name); ok {
			kind = &out.Archive
		}
		kind.Shards++
		kind.Bytes += size
	}
	return out
}

// largestShard is the largest data of ledger's shards of kind ("a",
// "j") in the API server.
func largestShard(t *testing.T, client kubernetes.Interface, ledger, kind string) int {
	t.Helper()
	_, most := ofKind(ledger, kind, storedShards(t, client, ledger))
	return most
}

// ofKind counts ledger's shards of kind ("a", "j") among shards (name →
// data length), and gives the largest's length.
func ofKind(ledger, kind string, shards map[string]int) (n, most int) {
	for name, size := range shards {
		if _, ok := fillAndSealNumber(ledger, kind, name); ok {
			n++
			most = max(most, size)
		}
	}
	return n, most
}

// loadsAs fails t unless a fresh store loads exactly incs from ledger
// (by ID, with each one's restartCount).
func loadsAs(t *testing.T, typed *kube.Client, ledger string, incs []Incident) {
	t.Helper()
	loaded, err := NewConfigMapStore(typed, "default", ledger).Load(context.Background(), func(msg string, args ...any) { t.Errorf("warning: %s %v", msg, args) })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, inc := range incs {
		want[inc.ID] = inc.Facts["restartCount"]
	}
	for _, inc := range loaded {
		if r, ok := want[inc.ID]; !ok {
			t.Errorf("incident %s loaded: it left the ledger", inc.ID)
		} else if r != inc.Facts["restartCount"] {
			t.Errorf("incident %s loaded with restartCount %s, want %s", inc.ID, inc.Facts["restartCount"], r)
		}
	}
	if len(loaded) != len(incs) {
		t.Errorf("loaded %d incidents, want %d", len(loaded), len(incs))
	}
}

// failing is the store's own writes and deletes, but the n-th call that
// match picks fails (as a crash or a lost lease would stop the save
// there).
func failing(store *ConfigMapStore, n int, match func(op, name string) bool) shardIO {
	seen := 0
	fail := func(op, name string) error {
		if match(op, name) {
			if seen++; seen == n {
				return fmt.Errorf("injected: the save stops at the %s of %s", op, name)
			}
		}
		return nil
	}
	return shardIO{
		put: func(ctx context.Context, name, data string) error {
			if err := fail("put", name); err != nil {
				return err
			}
			return store.put(ctx, name, data)
		},
		del: func(ctx context.Context, name, what string) error {
			if err := fail("delete", name); err != nil {
				return err
			}
			return store.delete(ctx, name, what)
		},
	}
}

// ledgerJournalFoldInterrupted: a fold stopped half way — after some of
// its hashed shards, or some of its deletes — leaves a ledger where each
// incident loads as the last save or the stopped one left it, and an
// incident that left in it (its open copy in a sealed journal shard, its
// resolved one in an archive shard, an older one in its hashed shard)
// stays gone; the next save finishes the fold.
func ledgerJournalFoldInterrupted(t *testing.T, typed *kube.Client) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		n    int
		at   func(op, name string) bool
	}{
		{"second hashed write", 2, func(op, name string) bool {
			return op == "put" && strings.Count(name, "-") == 2 && !strings.Contains(name, "-j-") && !strings.Contains(name, "-a-")
		}},
		{"second journal delete", 2, func(op, name string) bool { return op == "delete" && strings.Contains(name, "-j-") }},
		{"archive delete", 1, func(op, name string) bool { return op == "delete" && strings.Contains(name, "-a-") }},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			ledger := "fold" + strconv.Itoa(len(c.name))
			store := NewConfigMapStore(typed, "default", ledger)
			incs := realisticIncidents(2000) // several hashed shards
			if err := store.Save(ctx, incs); err != nil {
				t.Fatal(err)
			}
			// K's change is journaled, then sealed in the journal's first
			// shard by 200 more.
			const k = 5
			incs[k].Facts = map[string]string{"restartCount": "50"}
			incs[k].rev++
			if err := store.Save(ctx, incs); err != nil {
				t.Fatal(err)
			}
			for i := 100; i < 300; i++ {
				incs[i].Facts = map[string]string{"restartCount": strconv.Itoa(i)}
				incs[i].rev++
			}
			if err := store.Save(ctx, incs); err != nil {
				t.Fatal(err)
			}
			if sh := store.journal.shards[ledger+"-j-0"]; sh == nil || !sh.sealed {
				t.Fatalf("the journal's first shard is not sealed: the test does not test what it says")
			}
			// K resolves, its deliveries done: archived, alone in the
			// archive's first shard.
			incs[k].ResolvedAt = time.Now()
			incs[k].rev++
			if err := store.Save(ctx, incs); err != nil {
				t.Fatal(err)
			}
			loadsAs(t, typed, ledger, incs)
			// K leaves the ledger (expired) and half the incidents change:
			// the save writes K's tombstone, folds and deletes the archive
			// shard, and stops where the case says. Each incident then
			// loads as the last save left it or as this one meant; K stays
			// gone.
			incs = slices.Delete(incs, k, k+1)
			before := slices.Clone(incs)
			for i := 1000; i < 2000-1; i++ {
				incs[i].Facts = map[string]string{"restartCount": strconv.Itoa(i + 1)}
				incs[i].rev++
			}
			if err := store.save(ctx, sharedOf(incs), failing(store, c.n, c.at)); err == nil || !strings.Contains(err.Error(), "injected") {
				t.Fatalf("the fold: %v, want it stopped by the injected failure", err)
			}
			loadsEither(t, typed, ledger, before, incs)
			if err := store.Save(ctx, incs); err != nil {
				t.Fatal(err)
			}
			loadsAs(t, typed, ledger, incs)
		})
	}
}

// ledgerHashedWriteLandsLate: a fold's write of a hashed shard whose
// answer is lost, but which lands, leaves the shard holding what the
// store did not see it accept. An incident that arrived in that write
// and leaves the ledger afterwards must not come back once the journal,
// with its tombstone, is folded — however the shard's incidents look by
// then (here: as before the write, so nothing else makes the store
// write it again).
func ledgerHashedWriteLandsLate(t *testing.T, typed *kube.Client) {
	ctx := context.Background()
	store := NewConfigMapStore(typed, "default", "landed")
	incs := realisticIncidents(2)
	a, b := incs[0], incs[1]
	// A is small, so that B's tombstone alone folds the journal; B is
	// larger, so that its arrival alone folds (it is written to the
	// hashed shard, not the journal).
	a.Title, a.Text = "", ""
	b.Facts["pad"] = strings.Repeat("b", 1000)
	encodedA, err := encodeForLedger(&a)
	if err != nil {
		t.Fatal(err)
	}
	if tomb := tombstoneOf(b.ID, b.Fingerprint); 2*(len(tomb)+1) < len(encodedA)+1 {
		t.Fatalf("B's tombstone (%d bytes) is under half of A (%d): the test does not test what it says", len(tomb), len(encodedA))
	}
	if err := store.Save(ctx, []Incident{a}); err != nil {
		t.Fatal(err)
	}
	lostHashed := false
	lost := shardIO{put: func(ctx context.Context, name, data string) error {
		version := store.versions[name]
		if err := store.put(ctx, name, data); err != nil {
			return err
		}
		if _, journal := fillAndSealNumber("landed", "j", name); !journal && !lostHashed {
			lostHashed = true
			store.versions[name] = version // as if no answer came
			return errors.New("injected: the answer to the write was lost; the write landed")
		}
		return nil
	}, del: store.delete}
	if err := store.save(ctx, sharedOf([]Incident{a, b}), lost); err == nil || !lostHashed {
		t.Fatalf("B's arrival: %v, hashed write lost: %v; want its hashed shard's write lost (the test does not test what it says)", err, lostHashed)
	}
	// B leaves: A's shard holds what it held before B came, and B's
	// tombstone folds the journal.
	folds := store.folds
	if err := store.Save(ctx, []Incident{a}); err != nil {
		t.Fatal(err)
	}
	if store.folds == folds {
		t.Fatal("B leaving did not fold the journal: the test does not test what it says")
	}
	loadsAs(t, typed, "landed", []Incident{a})
}

// ledgerLostWriteThenReshard: a hashed shard whose write's answer was
// lost (the write landed) is deleted when the next save changes the
// number of hashed shards: left behind, an incident in it that has left
// the ledger would come back on load once the journal is folded.
func ledgerLostWriteThenReshard(t *testing.T, client kubernetes.Interface, typed *kube.Client) {
	ctx := context.Background()
	store := NewConfigMapStore(typed, "default", "reshard")
	incs := realisticIncidents(1000) // about 690 KB: two hashed shards
	a, b := incs[0], incs[1]
	b.Facts["pad"] = strings.Repeat("b", 1000) // its arrival alone folds
	if err := store.Save(ctx, []Incident{a}); err != nil {
		t.Fatal(err)
	}
	var lostName string
	lost := shardIO{put: func(ctx context.Context, name, data string) error {
		version := store.versions[name]
		if err := store.put(ctx, name, data); err != nil {
			return err
		}
		store.versions[name] = version // as if no answer came
		lostName = name
		return errors.New("injected: the answer to the write was lost; the write landed")
	}, del: store.delete}
	if err := store.save(ctx, sharedOf([]Incident{a, b}), lost); err == nil || lostName != "reshard-1-0" {
		t.Fatalf("B's arrival: %v, lost the write of %q; want reshard-1-0's lost (the test does not test what it says)", err, lostName)
	}
	// B leaves and 998 others arrive: two hashed shards, reshard-1-0 no
	// longer one of them.
	rest := append([]Incident{a}, incs[2:]...)
	if err := store.Save(ctx, rest); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("default").Get(ctx, "reshard-1-0", metav1.GetOptions{}); err == nil {
		t.Error("reshard-1-0, whose write's answer was lost, is still there after the shard count changed")
	}
	loadsAs(t, typed, "reshard", rest)
}

// loadsEither fails t unless a fresh store loads the incidents of after
// (the same IDs as before), each as in before or as in after.
func loadsEither(t *testing.T, typed *kube.Client, ledger string, before, after []Incident) {
	t.Helper()
	loaded, err := NewConfigMapStore(typed, "default", ledger).Load(context.Background(), func(msg string, args ...any) { t.Errorf("warning: %s %v", msg, args) })
	if err != nil {
		t.Fatal(err)
	}
	either := map[string][2]string{}
	for i := range after {
		either[after[i].ID] = [2]string{before[i].Facts["restartCount"], after[i].Facts["restartCount"]}
	}
	for _, inc := range loaded {
		r, ok := either[inc.ID]
		if !ok {
			t.Errorf("incident %s loaded: it left the ledger", inc.ID)
		} else if got := inc.Facts["restartCount"]; got != r[0] && got != r[1] {
			t.Errorf("incident %s loaded with restartCount %s, want %s (the last save's) or %s (the stopped one's)", inc.ID, got, r[0], r[1])
		}
	}
	if len(loaded) != len(after) {
		t.Errorf("loaded %d incidents, want %d", len(loaded), len(after))
	}
}

func sharedOf(incs []Incident) []*Incident {
	out := make([]*Incident, len(incs))
	for i := range incs {
		out[i] = &incs[i]
	}
	return out
}

// ledgerJournalStale: a journal shard the ledger's leader did not
// write or delete — a deposed leader's create answered late, or this
// leader's own that landed after it deleted the name — is read as
// nothing once the journal has been folded after it was made, so an
// incident removed since does not come back from it; a new leader's
// first save deletes it.
func ledgerJournalStale(t *testing.T, client kubernetes.Interface, typed *kube.Client) {
	ctx := context.Background()
	claimed := func() *ConfigMapStore {
		s := NewConfigMapStore(typed, "default", "stale")
		if err := s.Claim(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	old := claimed()
	if _, err := old.Load(ctx, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	incs := realisticIncidents(100)
	if err := old.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	successor := claimed()
	loaded, err := successor.Load(ctx, func(string, ...any) {})
	if err != nil || len(loaded) != len(incs) {
		t.Fatalf("the successor loaded %d incidents (%v), want %d", len(loaded), err, len(incs))
	}
	stray := func(name string, folds uint64, inc Incident) {
		t.Helper()
		inc.Facts = map[string]string{"restartCount": "70"}
		data, err := encodeForLedger(&inc)
		if err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels: map[string]string{ledgerLabel: ledgerValue, "herald.io/ledger": "stale"},
			Annotations: map[string]string{epochAnnotation: strconv.FormatUint(old.Epoch(), 10), generationAnnotation: "1000",
				writerAnnotation: old.token, foldsAnnotation: strconv.FormatUint(folds, 10)}},
			Data: map[string]string{dataKey: "[" + string(data) + "]"}}
		if _, err := typed.CreateConfigMap(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	// The deposed leader's create lands after the successor read the
	// ledger; the successor's first save folds.
	stray("stale-j-7", old.folds, loaded[7])
	if err := successor.Save(ctx, loaded); err != nil {
		t.Fatal(err)
	}
	// The successor's own create of the current era lands late, after
	// it deleted the name.
	stray("stale-j-9", successor.folds, loaded[8])
	// Incidents 7 and 8 leave (tombstones); then half the others change:
	// a fold, which deletes the tombstones.
	kept := slices.Delete(slices.Clone(loaded), 7, 9)
	if err := successor.Save(ctx, kept); err != nil {
		t.Fatal(err)
	}
	for i := range len(kept)/2 + 1 {
		kept[i].Facts = map[string]string{"restartCount": strconv.Itoa(200 + i)}
		kept[i].rev++
	}
	folds := successor.folds
	if err := successor.Save(ctx, kept); err != nil {
		t.Fatal(err)
	}
	if successor.folds != folds+1 {
		t.Fatalf("the journal was not folded (%d folds, then %d): the test does not test what it says", folds, successor.folds)
	}
	loadsAs(t, typed, "stale", kept)
	// An older herald rewrites the claim without the count (a
	// downgrade): a journal shard written since the fold still proves
	// it, and the strays stay stale.
	kept[60].Facts = map[string]string{"restartCount": "600"}
	kept[60].rev++
	if err := successor.Save(ctx, kept); err != nil {
		t.Fatal(err)
	}
	claim, err := typed.GetConfigMap(ctx, "default", "stale-claim")
	if err != nil {
		t.Fatal(err)
	}
	delete(claim.Data, "folds")
	if _, err := typed.UpdateConfigMap(ctx, claim); err != nil {
		t.Fatal(err)
	}
	loadsAs(t, typed, "stale", kept)
	// A fold whose journal deletes fail has counted itself in the claim
	// already: the shards it could not delete are stale.
	for i := range len(kept)/2 + 1 {
		kept[i].Facts = map[string]string{"restartCount": strconv.Itoa(400 + i)}
		kept[i].rev++
	}
	counted := successor.folds
	err = successor.save(ctx, sharedOf(kept), failing(successor, 1, func(op, name string) bool { return op == "delete" && strings.Contains(name, "-j-") }))
	if err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("the fold: %v, want it stopped at its first journal delete", err)
	}
	if claim, err = typed.GetConfigMap(ctx, "default", "stale-claim"); err != nil || claim.Data["folds"] != strconv.FormatUint(counted+1, 10) {
		t.Errorf("the claim counts %q folds after a fold whose journal delete failed, want %d", claim.Data["folds"], counted+1)
	}
	loadsAs(t, typed, "stale", kept)
	// A new leader's first save deletes both.
	next := claimed()
	if _, err := next.Load(ctx, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	if err := next.Save(ctx, kept); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"stale-j-7", "stale-j-9"} {
		if _, err := client.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{}); err == nil {
			t.Errorf("%s is still there after a new leader's first save", name)
		}
	}
}

// ledgerDeleteUnknownVersion: a shard whose version the store does not
// know (its last write's outcome was unknown) is deleted only as read,
// and only if this store wrote it: never another writer's shard of the
// same name.
func ledgerDeleteUnknownVersion(t *testing.T, typed *kube.Client) {
	ctx := context.Background()
	store := NewConfigMapStore(typed, "default", "unknown")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unknown-j-4", Namespace: "default",
		Labels:      map[string]string{ledgerLabel: ledgerValue, "herald.io/ledger": "unknown"},
		Annotations: map[string]string{writerAnnotation: "another-replica"}}}
	if _, err := typed.CreateConfigMap(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := store.delete(ctx, "unknown-j-4", "journal shard"); !errors.Is(err, ErrConflict) {
		t.Errorf("deleting another writer's shard of unknown version: %v, want ErrConflict", err)
	}
	if _, err := typed.GetConfigMap(ctx, "default", "unknown-j-4"); err != nil {
		t.Fatalf("another writer's shard is gone: %v", err)
	}
	got, _ := typed.GetConfigMap(ctx, "default", "unknown-j-4")
	got.Annotations[writerAnnotation] = store.token
	if _, err := typed.UpdateConfigMap(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := store.delete(ctx, "unknown-j-4", "journal shard"); err != nil {
		t.Errorf("deleting its own shard of unknown version: %v", err)
	}
	if _, err := typed.GetConfigMap(ctx, "default", "unknown-j-4"); err == nil {
		t.Error("its own shard is still there")
	}
}

package incident

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/internal/fence"
	"github.com/herald-k8s/herald/internal/kube"
)

// ledgerOwnWriteLandsLate: a shard write whose answer comes too late (the
// client gave up, the API server applies it afterwards — a slow API
// server, a busy machine) is this replica's own write. The next save must
// not take the shard's new version for another replica's work and stop
// leading: a lone herald that deposed itself this way in a storm was
// the bug. The proxy lands the late write just after the next save reads
// the shard (the moment that fooled the old "read it back" check) and
// just before its next write.
func ledgerOwnWriteLandsLate(t *testing.T, cfg *rest.Config, direct *kube.Client) {
	ctx := context.Background()
	proxy, client := newHoldProxy(t, cfg)
	store := NewConfigMapStore(client, "default", "late")
	if err := store.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Load(ctx, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	incs := realisticIncidents(10)
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}

	// Each save changes every incident: too much for the journal, so it
	// writes the hashed shard (journal.go).
	proxy.holdNext(shardWrite("default", "late"))
	for i := range incs {
		incs[i].Seq, incs[i].rev = 2, 2
	}
	timedOut, giveUp := context.WithCancel(ctx)
	saved := make(chan error, 1)
	go func() { saved <- store.Save(timedOut, incs) }()
	var late *heldWrite
	select {
	case late = <-proxy.held:
	case err := <-saved:
		t.Fatalf("the save ended before its shard write: %v", err)
	}
	giveUp() // the client's timeout: the answer is late, the write is not lost
	if err := <-saved; err == nil || errors.Is(err, ErrConflict) {
		t.Fatalf("the save whose answer did not come: %v, want an error of unknown outcome", err)
	}

	for i := range incs {
		incs[i].Seq, incs[i].rev = 3, 3
	}
	if err := store.Save(ctx, incs); err != nil {
		t.Fatalf("the next save, after the replica's own late write landed: %v (a lone replica took its own write for another's)", err)
	}
	select {
	case <-late.applied:
	default:
		t.Fatal("the late write never landed: the test did not reproduce the race")
	}
	if late.status != http.StatusOK {
		t.Fatalf("the late write was answered %d, want 200 (it must land to reproduce the race)", late.status)
	}
	loaded, err := NewConfigMapStore(direct, "default", "late").Load(ctx, func(string, ...any) {})
	if err != nil || len(loaded) != 10 {
		t.Fatalf("loaded %d incidents (%v), want 10", len(loaded), err)
	}
	for _, inc := range loaded {
		if inc.Seq != 3 {
			t.Errorf("incident %s has seq %d after the last save, want 3", inc.ID, inc.Seq)
		}
	}
}

// ledgerDeposedPastItsClaim: a deposed leader whose save already passed
// the claim (it touched the claim before the successor took it) writes a
// shard the successor has loaded. The claim cannot stop that write; the
// shard's own precondition must: the successor marked every shard before
// reading it, so the write's resourceVersion is stale.
func ledgerDeposedPastItsClaim(t *testing.T, cfg *rest.Config, direct *kube.Client) {
	ctx := context.Background()
	warn := func(string, ...any) {}
	proxy, client := newHoldProxy(t, cfg)
	old := NewConfigMapStore(client, "default", "past")
	if err := old.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Load(ctx, warn); err != nil {
		t.Fatal(err)
	}
	incs := realisticIncidents(3000) // several shards
	if err := old.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}

	proxy.holdNext(shardWrite("default", "past"))
	changed := realisticIncidents(3000)
	for i := range changed {
		changed[i].Seq, changed[i].rev = 9, 99
	}
	saved := make(chan error, 1)
	go func() { saved <- old.Save(ctx, changed) }()
	var write *heldWrite
	select {
	case write = <-proxy.held: // past its claim: the claim was touched, a shard write is on its way
	case err := <-saved:
		t.Fatalf("the deposed leader's save ended before a shard write: %v", err)
	}

	successor := NewConfigMapStore(direct, "default", "past")
	if err := successor.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	loaded, err := successor.Load(ctx, warn)
	if err != nil || len(loaded) != len(incs) {
		t.Fatalf("the successor loaded %d incidents (%v), want %d", len(loaded), err, len(incs))
	}
	if status := proxy.release(write); status != http.StatusConflict {
		t.Errorf("the deposed leader's shard write, past its claim, was answered %d, want 409 Conflict", status)
	}
	if err := <-saved; !errors.Is(err, ErrConflict) {
		t.Errorf("the deposed leader's save past its claim: %v, want ErrConflict", err)
	}
	after, err := NewConfigMapStore(direct, "default", "past").Load(ctx, warn)
	if err != nil || len(after) != len(incs) {
		t.Fatalf("loaded %d incidents (%v), want %d", len(after), err, len(incs))
	}
	for _, inc := range after {
		if inc.Seq != 1 {
			t.Fatalf("incident %s has seq %d: the deposed leader's write landed after the successor loaded the ledger", inc.ID, inc.Seq)
		}
	}
	if err := successor.Save(ctx, loaded); err != nil {
		t.Errorf("the successor's own save: %v", err)
	}
}

// ledgerEpochOrders: of two copies of an incident, the one a later claim's
// writer wrote is current even when the earlier writer had made more
// saves (a higher generation): generations of two writers never tie or
// overtake each other.
func ledgerEpochOrders(t *testing.T, direct *kube.Client) {
	ctx := context.Background()
	inc := realisticIncidents(1)[0]
	for _, c := range []struct {
		shard      string
		epoch, gen uint64
		seq        int
	}{{"epochs-2-0", 1, 50, 1}, {"epochs-2-1", 2, 3, 2}, {"epochs-a-0", 0, 70, 3}} {
		inc.Seq = c.seq
		data, err := encodeForLedger(&inc)
		if err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.shard, Namespace: "default",
			Labels:      map[string]string{ledgerLabel: ledgerValue, "herald.io/ledger": "epochs"},
			Annotations: map[string]string{epochAnnotation: strconv.FormatUint(c.epoch, 10), generationAnnotation: strconv.FormatUint(c.gen, 10)}},
			Data: map[string]string{dataKey: "[" + string(data) + "]"}}
		if _, err := direct.CreateConfigMap(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	loaded, err := NewConfigMapStore(direct, "default", "epochs").Load(ctx, func(string, ...any) {})
	if err != nil || len(loaded) != 1 {
		t.Fatalf("loaded %d incidents (%v), want 1", len(loaded), err)
	}
	if loaded[0].Seq != 2 {
		t.Errorf("loaded the copy with seq %d, want 2: the copy of the newest epoch", loaded[0].Seq)
	}
}

// ledgerHandEditConflicts: an edit by hand (kubectl edit keeps the
// writer annotation) is not taken for this replica's own late write: the
// next save that writes the shard is a conflict, not a silent overwrite
// of the edit.
func ledgerHandEditConflicts(t *testing.T, direct *kube.Client) {
	ctx := context.Background()
	store := NewConfigMapStore(direct, "default", "edited")
	if err := store.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Load(ctx, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	incs := realisticIncidents(5)
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	cm, err := direct.GetConfigMap(ctx, "default", "edited-1-0")
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[dataKey] = "[]" // an operator empties the shard
	if _, err := direct.UpdateConfigMap(ctx, cm); err != nil {
		t.Fatal(err)
	}
	// A change to one incident goes to the journal: the edited shard is
	// left as it is.
	incs[0].Seq, incs[0].rev = 2, 2
	if err := store.Save(ctx, incs); err != nil {
		t.Fatalf("a save that journals a change after the edit: %v", err)
	}
	if cm, err := direct.GetConfigMap(ctx, "default", "edited-1-0"); err != nil || cm.Data[dataKey] != "[]" {
		t.Fatalf("the edited shard after a save that journals: %v %q, want the edit kept", err, cm.Data[dataKey])
	}
	// Every incident changes: the save writes the shard, and finds the
	// edit.
	for i := range incs {
		incs[i].Seq, incs[i].rev = 3, 3
	}
	if err := store.Save(ctx, incs); !errors.Is(err, ErrConflict) {
		t.Errorf("the save that writes the shard after an edit by hand: %v, want ErrConflict", err)
	}
}

// ledgerFinalWriteFenced: the last ledger write of a graceful stop runs
// after the leader's context ended, but still under its fence: when the
// hold on the Lease ended before it (the stop came late, or the fence's
// timer had not run yet), it does not leave.
func ledgerFinalWriteFenced(t *testing.T, cfg *rest.Config, direct *kube.Client) {
	fenced := rest.CopyConfig(cfg)
	fenced.Wrap(fence.Transport)
	client, err := kube.New(fenced)
	if err != nil {
		t.Fatal(err)
	}
	store := NewConfigMapStore(client, "default", "final")
	if err := store.Claim(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Load(context.Background(), func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	var until atomic.Int64
	until.Store(time.Now().Add(time.Hour).UnixNano())
	ctx, stop := context.WithCancelCause(fence.With(context.Background(), fence.New(func() time.Time { return time.Unix(0, until.Load()) }, nil)))
	tr := NewTracker(Options{})
	changed(tr, 1)
	done := make(chan error, 1)
	go func() { done <- Persist(ctx, tr, store, slog.New(slog.DiscardHandler), nil) }()
	loaded := func() int {
		incs, _ := NewConfigMapStore(direct, "default", "final").Load(context.Background(), func(string, ...any) {})
		return len(incs)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return loaded() == 1, nil
	}); err != nil {
		t.Fatal("the first write never landed")
	}
	changed(tr, 2)
	until.Store(time.Now().Add(-time.Second).UnixNano()) // the hold ended
	stop(nil)                                            // then a graceful stop
	if err := <-done; err != nil {
		t.Fatalf("Persist = %v", err)
	}
	if n := loaded(); n != 1 {
		t.Errorf("the ledger holds %d incidents: the last write of the stop left after the hold on the Lease had ended", n)
	}
}

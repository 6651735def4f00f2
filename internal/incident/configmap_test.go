package incident

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// TestConfigMapLedgerSizeBound writes 20,000 open incidents to a real API
// server: every shard stays under MaxShardBytes, everything loads back,
// and an unchanged save writes nothing.
func TestConfigMapLedgerSizeBound(t *testing.T) {
	env := testenv.New(t)
	client, _ := env.Client()
	typed, err := kube.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store := NewConfigMapStore(typed, "default", "herald-ledger")
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

	loaded, err := NewConfigMapStore(typed, "default", "herald-ledger").Load(ctx, func(msg string, args ...any) { t.Errorf("warning: %s %v", msg, args) })
	if err != nil || len(loaded) != 20000 {
		t.Fatalf("loaded %d incidents, %v", len(loaded), err)
	}
	rv := map[string]string{}
	for _, cm := range cms.Items {
		rv[cm.Name] = cm.ResourceVersion
	}
	// One incident resolves: one shard changes, the others are not written.
	incs[42].ResolvedAt = time.Now()
	incs[42].rev++ // as the tracker marks every change (touch)
	if err := store.Save(ctx, incs); err != nil {
		t.Fatal(err)
	}
	after, _ := client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: store.selector()})
	changed := 0
	for _, cm := range after.Items {
		if rv[cm.Name] != cm.ResourceVersion {
			changed++
		}
	}
	if changed != 1 {
		t.Errorf("%d shards rewritten for one changed incident, want 1", changed)
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

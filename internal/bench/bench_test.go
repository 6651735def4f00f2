package bench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestMain lets the benchmark start this test binary as its floor
// notifier and its cache notifier, as herald-bench starts itself.
func TestMain(m *testing.M) {
	RunFloorNotifierIfAsked()
	allocateIfAsked()
	os.Exit(m.Run())
}

// TestSmoke runs the whole benchmark small (250 then 500 pods with the
// Deployments, ReplicaSets, ConfigMaps, Secrets and Nodes that go with
// them, 10 and 50 patches/s for 10 s each, idle CPU over 3 s instead of
// 15), so that it cannot rot: every patch must be seen by the floor
// watch, posted by the floor and cache notifiers and notified by herald
// exactly once, and the report must have its figures.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and herald")
	}
	bin := filepath.Join(t.TempDir(), "herald")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/herald").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	report, err := Run(context.Background(), Options{
		Herald: bin, Sizes: []int{250, 500}, Rates: []float64{10, 50}, OnlyAsked: true, Cluster: true,
		Step: 10 * time.Second, Drain: 30 * time.Second, Idle: 3 * time.Second, Dir: t.TempDir(), Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	report.Table(&table)
	t.Log("\n" + table.String())
	if len(report.Sizes) != 2 {
		t.Fatalf("measured %d sizes, want 2", len(report.Sizes))
	}
	for _, s := range report.Sizes {
		if s.Sync <= 0 || s.SyncPaged <= 0 || s.BareList <= 0 || s.Memory.RSS <= 0 || s.Memory.Heap <= 0 ||
			s.APIServer.List.Allocated <= 0 || s.APIServer.StartPaged.Allocated <= 0 || s.APIServer.StartStreaming.Allocated <= 0 {
			t.Errorf("size %d: missing figures %+v", s.Pods, s)
		}
		if s.Objects == nil || *s.Objects != objectsFor(s.Pods) {
			t.Errorf("size %d: the other objects %+v, want %+v", s.Pods, s.Objects, objectsFor(s.Pods))
		}
		// herald lists pods as a watch's initial events (the streaming
		// list), not as pages of LIST: client-go's reflector does when
		// the decoder keeps the bookmark that ends them.
		if s.APIServer.StartStreaming.PodLists != 0 || s.APIServer.StartPaged.PodLists == 0 || s.APIServer.List.PodLists == 0 {
			t.Errorf("size %d: LISTs of pods: %d by herald's start, %d by its start with paged lists, %d by the bare LIST; want 0, some, some",
				s.Pods, s.APIServer.StartStreaming.PodLists, s.APIServer.StartPaged.PodLists, s.APIServer.List.PodLists)
		}
	}
	if report.RMax < 50 {
		t.Fatalf("r_max %.0f/s: the control plane cannot take the smoke run's 50/s", report.RMax)
	}
	if report.HeraldRSSAfterChurn <= 0 || report.FloorRSSAfterChurn <= 0 || report.CacheRSSAfterChurn <= 0 || report.CacheRSSAfterSync <= 0 {
		t.Errorf("RSS after the churn: herald %d, floor notifier %d, cache notifier %d (after sync %d) bytes; want all",
			report.HeraldRSSAfterChurn, report.FloorRSSAfterChurn, report.CacheRSSAfterChurn, report.CacheRSSAfterSync)
	}
	if len(report.Churn) != 2 {
		t.Fatalf("churn steps: %d, want the two asked for", len(report.Churn))
	}
	for _, c := range report.Churn {
		if !c.Floor.Exact() {
			t.Errorf("floor at %.0f/s: %+v, want every patch seen once", c.Rate, c.Floor)
		}
		if !c.Herald.Exact() {
			t.Errorf("herald at %.0f/s: %+v, want every patch notified once", c.Rate, c.Herald)
		}
		if c.Herald.Delivered != c.Herald.Offered || c.Herald.Delivered == 0 {
			t.Errorf("herald at %.0f/s delivered %d of %d", c.Rate, c.Herald.Delivered, c.Herald.Offered)
		}
		if c.Herald.CPUPer1000 <= 0 {
			t.Errorf("herald at %.0f/s: no CPU figure", c.Rate)
		}
		// The floor notifier posts every patch the floor watch saw, and
		// its CPU per notification is measured like herald's.
		if c.Floor.Notified != c.Floor.Delivered || c.Floor.CPUPer1000 <= 0 {
			t.Errorf("floor notifier at %.0f/s: posted %d of %d patches, %.2f CPU-s/1000", c.Rate, c.Floor.Notified, c.Floor.Delivered, c.Floor.CPUPer1000)
		}
		// So does the cache notifier, from its cache of whole pods.
		if !c.Cache.Exact() || c.Cache.Notified != c.Cache.Delivered || c.Cache.Delivered != c.Cache.Offered || c.Cache.CPUPer1000 <= 0 {
			t.Errorf("cache notifier at %.0f/s: posted %d of %d patches (%d offered), %.2f CPU-s/1000", c.Rate, c.Cache.Notified, c.Cache.Delivered, c.Cache.Offered, c.Cache.CPUPer1000)
		}
	}
}

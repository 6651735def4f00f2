package volumes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// nodeSummary is a kubelet's stats summary of a node of 110 pods (the
// kubelet's default maximum), each with two containers and the usual
// volumes (a claim, the ServiceAccount token, an emptyDir), in the
// shape testdata/summary.json shows.
func nodeSummary(b *testing.B) []byte {
	b.Helper()
	var raw map[string]any
	data := mustRead(b, "testdata/summary.json")
	if err := json.Unmarshal(data, &raw); err != nil {
		b.Fatal(err)
	}
	pod := raw["pods"].([]any)[0].(map[string]any)
	containers := pod["containers"].([]any)
	pod["containers"] = append(containers, containers[0])
	var pods []any
	for i := range 110 {
		p := deepCopy(b, pod)
		p["podRef"].(map[string]any)["name"] = fmt.Sprintf("postgres-%d", i)
		vols := p["volume"].([]any)
		vols[0].(map[string]any)["pvcRef"].(map[string]any)["name"] = fmt.Sprintf("pgdata-postgres-%d", i)
		pods = append(pods, p)
	}
	raw["pods"] = pods
	out, err := json.Marshal(raw)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

func deepCopy(b *testing.B, m map[string]any) map[string]any {
	data, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkParseSummary: reading one node's summary of 110 pods, the
// cost of one node in each round.
func BenchmarkParseSummary(b *testing.B) {
	data := nodeSummary(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		rs, err := parseSummary(bytes.NewReader(data), time.Now())
		if err != nil || len(rs) != 110 {
			b.Fatalf("%d readings, %v", len(rs), err)
		}
	}
}

// BenchmarkStoreMemory: the heap a claim's hour of samples takes (one a
// minute: 60), over 10,000 claims.
func BenchmarkStoreMemory(b *testing.B) {
	const claims, samples = 10_000, 60
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s := NewStore()
		t0 := time.Now()
		for j := range samples {
			for i := range claims {
				s.add("node-1", reading{claim: claimKey{"shop", fmt.Sprintf("data-%d", i)}, pod: fmt.Sprintf("db-%d", i),
					sample: sampleAt(t0.Add(time.Duration(j) * time.Minute))}, time.Minute)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/claims, "B/claim")
		runtime.KeepAlive(s)
	}
}

package bench

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestReportWithNothingDelivered: a step herald delivered nothing of
// (its percentiles NaN) is written with null percentiles; the report
// is not lost at the end of a long run.
func TestReportWithNothingDelivered(t *testing.T) {
	nan := math.NaN()
	b, err := json.Marshal(ChurnResult{Rate: 405, Herald: StepResult{Latency: Latency{P50: nan, P99: nan, P999: nan, Max: nan}}, Floor: StepResult{Latency: Latency{P50: 1, P99: 2, P999: 3, Max: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `"p50_ms":null`) || !strings.Contains(s, `"p99_ms":2`) {
		t.Errorf("got %s", s)
	}
}

// TestReportCacheNotifierKilled: a cache notifier killed at its memory
// limit before its cache synced is named so, not reported as a notifier
// that cost nothing.
func TestReportCacheNotifierKilled(t *testing.T) {
	r := &Report{Churn: []ChurnResult{{Rate: 20}}, CacheContainer: &Container{Limit: 512 << 20, Peak: 512 << 20, OOMKills: 1}}
	var out strings.Builder
	r.Table(&out)
	// Named in the churn row's column, in the RSS line, and the cgroup's line.
	if s := out.String(); strings.Count(s, "killed") < 2 || !strings.Contains(s, "killed at its memory limit before its cache synced") || !strings.Contains(s, "1 OOM kills") {
		t.Errorf("the table does not say the cache notifier was killed:\n%s", s)
	}
}

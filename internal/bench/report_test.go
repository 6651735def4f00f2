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

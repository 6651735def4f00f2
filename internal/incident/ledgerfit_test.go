package incident

import (
	"strings"
	"testing"

	"github.com/herald-k8s/herald/internal/links"
)

// TestLinksLeaveAnOversizedEntryWhole: an incident's links (up to 10 KB)
// are kept while it fits, and dropped whole, never cut into broken
// URLs, when it does not (they are filled again at its next reconcile).
func TestLinksLeaveAnOversizedEntryWhole(t *testing.T) {
	ls := []links.Link{{Name: "Logs", URL: "https://logs.example.com/?q=" + strings.Repeat("a", 1900)}}
	inc := &Incident{ID: "f-1", Fingerprint: "f", Links: ls}
	if got := fitForLedger(inc, 0); len(got.Links) != 1 || got.Links[0] != ls[0] {
		t.Errorf("step 0 changed the links: %v", got.Links)
	}
	if got := fitForLedger(inc, 1); got.Links != nil {
		t.Errorf("step 1 kept %d links", len(got.Links))
	}
	if len(inc.Links) != 1 {
		t.Error("fitting changed the incident itself")
	}
}

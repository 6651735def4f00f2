package enrich

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/redact"
)

// TestMoreLogs: More logs gives up to 100 of the crashed instance's last
// lines, redacted like the alert's own, and says why when it cannot.
func TestMoreLogs(t *testing.T) {
	var log strings.Builder
	for i := range 150 {
		fmt.Fprintf(&log, "line %d\n", i)
	}
	log.WriteString("connecting with password=hunter2secret\n")
	red, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	src := &kubeletSource{previous: log.String(), current: "starting\n"}
	e := New(Options{Source: src, Logs: true, Logger: quiet(), Redactor: red, MaxBytes: 64 << 10})
	inc := crash("a", incident.Firing).Incident
	got, err := e.MoreLogs(context.Background(), inc, 500)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Lines) != MaxMoreLines || !got.Previous || got.Lines[0] != "line 51" {
		t.Fatalf("%d lines from %q (previous %v), want the last %d of the crashed instance", len(got.Lines), got.Lines[0], got.Previous, MaxMoreLines)
	}
	last := got.Lines[len(got.Lines)-1]
	if strings.Contains(last, "hunter2secret") || !strings.Contains(last, "password=") {
		t.Errorf("not redacted: %q", last)
	}
	inc.Container = ""
	if _, err := e.MoreLogs(context.Background(), inc, 10); !errors.Is(err, ErrNoLogs) {
		t.Errorf("no container: %v", err)
	}
	off := New(Options{Source: src, Logs: false, LogsUnavailable: "not permitted (herald's RBAC lacks get pods/log)", Logger: quiet()})
	if _, err := off.MoreLogs(context.Background(), crash("a", incident.Firing).Incident, 10); err == nil || !strings.Contains(err.Error(), "not permitted") {
		t.Errorf("logs not permitted: %v", err)
	}
}

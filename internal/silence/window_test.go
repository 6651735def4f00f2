package silence

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
)

// TestMaintenanceWindow runs the tracker with a fake clock under a rule
// whose schedule holds its notifications every night 22:00–06:00 in
// Berlin: a failure at 23:00 sends nothing during the night and its
// firing at 06:00; one that is over by 03:00 sends nothing at all; another
// rule is not held; in the day, the rule fires at once.
func TestMaintenanceWindow(t *testing.T) {
	cfg, err := config.Parse("herald.yaml", []byte(`
rules:
  - name: batch
    kind: Job
    detector: job-failed
    sinks: [hook]
    schedule:
      timeZone: Europe/Berlin
      windows: [{from: "22:00", to: "06:00"}]
  - {name: other, kind: Job, detector: job-failed, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: http://127.0.0.1:1/x}}
`))
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	now := time.Date(2026, 11, 23, 23, 0, 0, 0, berlin)
	m := NewMuter("herald", slog.New(slog.NewTextHandler(io.Discard, nil)))
	m.Configure(cfg)
	tr := incident.NewTracker(incident.Options{Now: func() time.Time { return now }, Muter: m})
	failed := func(rule, job string) rules.Finding {
		return rules.Finding{Rule: rule, Reason: "JobFailed", Severity: "warning",
			Object: rules.ObjectRef{Kind: "Job", Namespace: "etl", Name: job, UID: "uid-" + job}, Title: job + " failed"}
	}
	reconcile := func(job string, fs ...rules.Finding) []incident.Notification {
		notes, _ := tr.Reconcile("Job/etl/"+job, fs)
		return append(notes, tr.ReleaseMuted(now)...)
	}
	var night []incident.Notification
	night = append(night, reconcile("nightly", failed("batch", "nightly"))...)
	night = append(night, reconcile("early", failed("batch", "early"))...)
	if other := reconcile("other", failed("other", "other")); len(other) != 1 || other[0].Transition != incident.Firing {
		t.Errorf("another rule in the window: %v, want its firing at once", other)
	}
	now = time.Date(2026, 11, 24, 3, 0, 0, 0, berlin)
	night = append(night, reconcile("early")...) // over by 03:00
	night = append(night, reconcile("nightly", failed("batch", "nightly"))...)
	now = time.Date(2026, 11, 24, 5, 59, 59, 0, berlin)
	night = append(night, tr.ReleaseMuted(now)...)
	if len(night) != 0 {
		t.Fatalf("during the window: %d notifications (%v), want none", len(night), night)
	}
	now = time.Date(2026, 11, 24, 6, 0, 0, 0, berlin)
	morning := tr.ReleaseMuted(now)
	if len(morning) != 1 || morning[0].Transition != incident.Firing || morning[0].Incident.Object.Name != "nightly" {
		t.Fatalf("at 06:00: %v, want nightly's firing only", morning)
	}
	now = time.Date(2026, 11, 24, 12, 0, 0, 0, berlin)
	if day := reconcile("noon", failed("batch", "noon")); len(day) != 1 || day[0].Transition != incident.Firing {
		t.Errorf("in the day: %v, want the firing at once", day)
	}
}

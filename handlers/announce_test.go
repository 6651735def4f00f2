package handlers

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

// TestAnnounceLogsEachNotification: a line per notification, at info,
// with what identifies it, the caller's attributes and the logger's own;
// nothing when info is off.
func TestAnnounceLogsEachNotification(t *testing.T) {
	typed, err := kube.New(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	c, err := New(Options{Watcher: watcher.New(watcher.Clients{Builtin: typed}, 0, slog.New(slog.NewTextHandler(io.Discard, nil))),
		Rules: &rules.Set{}, Incidents: incident.NewTracker(incident.Options{}),
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)).With("component", "controller")})
	if err != nil {
		t.Fatal(err)
	}
	note := incident.Notification{Incident: incident.Incident{ID: "i-1", Rule: "crash", Container: "app"},
		Transition: incident.Firing, Seq: 1, Change: "restarts 3 → 5"}
	c.announce([]incident.Notification{note, note}, slog.String("object", "shop/web"))
	lines := bytes.Split(bytes.TrimSpace(logs.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d lines for 2 notifications:\n%s", len(lines), logs.String())
	}
	var got map[string]string
	if err := json.Unmarshal(lines[0], &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"level": "INFO", "msg": "incident firing", "component": "controller", "rule": "crash",
		"container": "app", "change": "restarts 3 → 5", "id": note.ID(), "object": "shop/web"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (line %s)", k, got[k], v, lines[0])
		}
	}
	if got["time"] == "" {
		t.Errorf("no time in %s", lines[0])
	}

	logs.Reset()
	c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c.announce([]incident.Notification{note})
	if logs.Len() != 0 {
		t.Errorf("logged at --log-level warn: %s", logs.String())
	}
	// Counted whether logged or not.
	if n := testutil.ToFloat64(c.Metrics.Notifications.WithLabelValues("crash", "firing")); n != 3 {
		t.Errorf("herald_notifications_total{rule=crash,transition=firing} = %v, want 3", n)
	}
}

package stdout

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
	"github.com/herald-k8s/herald/internal/termsafe"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestHostileTextGolden: a notification with new lines, terminal escapes
// and chat markup in every field (oncalltest.Hostile), and its
// acknowledgement and silence by people so named, prints exactly
// testdata/hostile.golden.txt: each notification on its own line (the
// firing's hint, 3 log lines, missing context, what changed and the undo
// command indented below it), no line forged, no raw control character;
// as JSON, one line each.
func TestHostileTextGolden(t *testing.T) {
	firing := oncalltest.Hostile()
	digest := incident.Notification{Transition: incident.Digest, Time: firing.Time, Digest: []incident.Notification{firing}}
	send := func(format string) string {
		var buf bytes.Buffer
		s := New("out", format, "prod-eu", &buf)
		s.now = func() time.Time { return firing.Time.Add(time.Minute) }
		acked, silenced := oncalltest.HostileAcked(firing), oncalltest.HostileSilenced(firing)
		for _, n := range []incident.Notification{firing, digest, acked, silenced} {
			if err := s.Send(context.Background(), n); err != nil {
				t.Fatal(err)
			}
		}
		return buf.String()
	}
	if j := send("json"); strings.Count(j, "\n") != 4 || !json.Valid([]byte(strings.Split(j, "\n")[0])) {
		t.Errorf("JSON: not one line per notification:\n%s", j)
	}
	got := send("text")
	// firing: 1 + hint + 3 log lines + context incomplete + 2 changes +
	// undo; digest: 1 + 1; acknowledged and silenced by someone whose
	// name is HostileWho: 1 each.
	if lines := strings.Count(got, "\n"); lines != 9+2+2 {
		t.Errorf("%d lines, want 13:\n%s", lines, got)
	}
	if strings.ContainsFunc(got, func(r rune) bool { return r != '\n' && r != '\t' && termsafe.Unsafe(r) }) {
		t.Errorf("a control character reached the output:\n%q", got)
	}
	path := "testdata/hostile.golden.txt"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", path, got)
	}
}

// TestFormatGolden prints every kind of notification (the samples all
// sinks share) to testdata/messages/<kind>.golden.txt, as a terminal
// shows it.
func TestFormatGolden(t *testing.T) {
	for _, s := range oncalltest.Samples() {
		if s.SlackOnly {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			got := Format(s.Note, oncalltest.SampleCluster, s.Now) + "\n"
			path := filepath.Join("testdata", "messages", s.Name+".golden.txt")
			if *update {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs (go test -update rewrites it):\n%s", path, got)
			}
		})
	}
}

// TestChanged: a firing says what changed just before, one change a
// line, then the undo command, indented below it; a change's new lines
// and escapes stay on its line (it fails if they are let through); a
// later notification does not repeat the section, and a section that
// rules a change out offers no undo.
func TestChanged(t *testing.T) {
	n := oncalltest.Hostile()
	n.Context = nil
	n.Changes = oncalltest.HostileChanges(n.Time)
	lines := strings.Split(Format(n, "prod-eu", n.Time), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "    what changed: Rolled out 4 min before (revision 7 <!channel>") ||
		!strings.HasPrefix(lines[2], "    what changed: ConfigMap app-config <!channel>") || !strings.HasPrefix(lines[3], "    undo: kubectl rollout undo deployment/api") {
		t.Fatalf("%d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, l := range lines[1:] {
		if strings.ContainsFunc(l, termsafe.Unsafe) || !strings.Contains(l, `\u2028`) {
			t.Errorf("a control character or line separator left in %q", l)
		}
	}
	n.Transition = incident.Updated
	if got := Format(n, "prod-eu", n.Time); strings.Contains(got, "what changed") {
		t.Errorf("an update repeats the section:\n%s", got)
	}
	n.Transition = incident.Firing
	n.Changes = &incident.Changes{Undo: "kubectl rollout undo deployment/x", Lines: []string{"No change to this workload in the last 30 min"}}
	if got := Format(n, "prod-eu", n.Time); !strings.HasSuffix(got, "\n    what changed: No change to this workload in the last 30 min") {
		t.Errorf("nothing changed:\n%s", got)
	}
}

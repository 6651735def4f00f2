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
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestHostileTextGolden: a notification with new lines, terminal escapes
// and chat markup in every field (oncalltest.Hostile) prints exactly
// testdata/hostile.golden.txt: each notification on its own line (the
// firing's hint, 3 log lines and missing context indented below it), no
// line forged, no raw control character; as JSON, one line each.
func TestHostileTextGolden(t *testing.T) {
	firing := oncalltest.Hostile()
	digest := incident.Notification{Transition: incident.Digest, Time: firing.Time, Digest: []incident.Notification{firing}}
	send := func(format string) string {
		var buf bytes.Buffer
		s := New("out", format, "prod-eu", &buf)
		s.now = func() time.Time { return firing.Time.Add(time.Minute) }
		for _, n := range []incident.Notification{firing, digest} {
			if err := s.Send(context.Background(), n); err != nil {
				t.Fatal(err)
			}
		}
		return buf.String()
	}
	if j := send("json"); strings.Count(j, "\n") != 2 || !json.Valid([]byte(strings.Split(j, "\n")[0])) {
		t.Errorf("JSON: not one line per notification:\n%s", j)
	}
	got := send("text")
	// firing: 1 + hint + 3 log lines + context incomplete; digest: 1 + 1.
	if lines := strings.Count(got, "\n"); lines != 6+2 {
		t.Errorf("%d lines, want 8:\n%s", lines, got)
	}
	if strings.ContainsFunc(got, func(r rune) bool { return r != '\n' && r != '\t' && unsafeRune(r) }) {
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

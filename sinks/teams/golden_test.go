package teams

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/herald-k8s/herald/internal/oncalltest"
)

// TestCardGolden renders every kind of notification (the samples all
// sinks share) to testdata/messages/<kind>.golden.json: the whole
// message Teams gets, card and summary, which must pass the Workflows
// stand-in's checks.
func TestCardGolden(t *testing.T) {
	for _, s := range oncalltest.Samples() {
		if s.SlackOnly {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			body, err := Render(s.Note, oncalltest.SampleCluster, s.Now)
			if err != nil {
				t.Fatal(err)
			}
			if _, problems := oncalltest.CheckTeamsMessage(body); len(problems) > 0 {
				t.Fatalf("not a valid Teams message: %v", problems)
			}
			var v any
			if err := json.Unmarshal(body, &v); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // readable: the file is the design
			enc.SetIndent("", "  ")
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "messages", s.Name+".golden.json")
			if *update {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s differs (go test -update rewrites it):\n%s", path, buf.Bytes())
			}
		})
	}
}

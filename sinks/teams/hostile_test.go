package teams

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestHostileTextGolden: a notification whose every field is full of
// chat markup (oncalltest.HostileText) renders to exactly the escaped
// card of testdata/hostile.golden.json, and a digest of it too, and its
// acknowledgement and silence by people whose names are markup too; and
// however the golden file is rewritten, no text the card renders as
// Markdown (text blocks, monospace ones included, fact titles and values)
// holds a character that formats, links or mentions without its
// backslash.
func TestHostileTextGolden(t *testing.T) {
	firing := oncalltest.Hostile()
	digest := incident.Notification{Transition: incident.Digest, Time: firing.Time, Digest: []incident.Notification{firing}}
	now := firing.Time.Add(time.Minute)
	// Who acknowledged it and who asked for its silence: names anyone
	// chooses (oncalltest.HostileWho).
	acked, silenced := oncalltest.HostileAcked(firing), oncalltest.HostileSilenced(firing)
	later := acked
	later.Transition = incident.Updated
	out := map[string]any{"firing": card(firing, "prod-eu", full, now), "digest": card(digest, "prod-eu", full, now),
		"acknowledged": card(acked, "prod-eu", full, now), "updatedAfterAck": card(later, "prod-eu", full, now), "silencedBy": card(silenced, "prod-eu", full, now)}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}
	checkMarkdownText(t, buf.Bytes())
	path := "testdata/hostile.golden.json"
	if *update {
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
}

// checkMarkdownText walks a card: every text, fact title and value (not
// an action's URL) escapes what Markdown would read, and breaks every @.
func checkMarkdownText(t *testing.T, doc []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if x["type"] == "Action.OpenUrl" {
				return
			}
			for k, e := range x {
				if s, ok := e.(string); ok && (k == "text" || k == "title" || k == "value" || k == "fallbackText") {
					checkEscaped(t, s)
				} else {
					walk(e)
				}
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
}

func checkEscaped(t *testing.T, s string) {
	t.Helper()
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case strings.IndexByte("`*_~[]<>|", c) >= 0:
			t.Errorf("%q unescaped at %d of %q", c, i, s)
			return
		case c == '@' && !strings.HasPrefix(s[i+1:], "\u200b"):
			t.Errorf("a bare @ at %d of %q", i, s)
			return
		}
	}
}

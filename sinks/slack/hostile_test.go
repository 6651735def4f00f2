package slack

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
)

// TestHostileTextGolden: a notification whose every field is full of
// chat markup (oncalltest.HostileText) renders, in the blocks, the
// fallback text, the thread replies and a digest, to exactly the escaped
// output of testdata/hostile.golden.json; and however the golden file is
// rewritten, no text Slack parses holds a < or > but herald's own runbook
// link, nor a code fence the text opened or closed.
func TestHostileTextGolden(t *testing.T) {
	firing := oncalltest.Hostile()
	updated := firing
	updated.Transition, updated.Seq, updated.Change = incident.Updated, 2, ""
	silenced := firing
	silenced.Transition, silenced.Seq = incident.Silenced, 3
	now := firing.Time.Add(time.Minute)
	msg := Render(firing, "prod-eu", now)
	digest := RenderDigest([]incident.Notification{firing, updated}, "prod-eu")
	out := map[string]any{
		"firing":         map[string]any{"text": msg.Text, "blocks": msg.Blocks},
		"threadChanged":  ThreadNote(firing, now),
		"threadUpdated":  ThreadNote(updated, now),
		"threadSilenced": ThreadNote(silenced, now),
		"digest":         map[string]any{"text": digest.Text, "blocks": digest.Blocks},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the golden file shows what Slack gets, readably
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	checkSlackText(t, got)
	path := "testdata/hostile.golden.json"
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", path, got)
	}
}

var runbookLink = regexp.MustCompile(`<https://runbooks\.example\.com/[^<>|]*\|Runbook>`)

// slackDateMarkup is herald's own date markup (slackDate): digits and a
// fixed format, nothing from the cluster.
var slackDateMarkup = regexp.MustCompile(`<!date\^[0-9]+\^\{date_short_pretty\} at \{time\}\|[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2} UTC>`)

// checkSlackText walks the rendered JSON: every string Slack reads as
// mrkdwn (all but plain_text objects, which Slack does not parse) holds
// no < or > but the runbook link, and opens as many code blocks as it
// closes.
func checkSlackText(t *testing.T, doc []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if x["type"] == "plain_text" {
				return
			}
			for k, e := range x {
				walk(path+"."+k, e)
			}
		case []any:
			for _, e := range x {
				walk(path+"[]", e)
			}
		case string:
			s := slackDateMarkup.ReplaceAllString(runbookLink.ReplaceAllString(x, ""), "")
			if strings.ContainsAny(s, "<>") {
				t.Errorf("%s: markup left in %q", path, x)
			}
			if strings.Count(s, "```")%2 != 0 {
				t.Errorf("%s: a code fence the text opened or closed in %q", path, x)
			}
		}
	}
	walk("", v)
}

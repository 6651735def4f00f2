package webhook

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/herald-k8s/herald/internal/oncalltest"
	"github.com/herald-k8s/herald/sinks"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestDocumentedTemplatesHostileGolden: each documented template renders
// a notification full of chat markup in every field (oncalltest.Hostile)
// to exactly testdata/hostile-<tool>.golden.json.
func TestDocumentedTemplatesHostileGolden(t *testing.T) {
	for tool, tmpl := range documented(t) {
		t.Run(tool, func(t *testing.T) {
			b, err := CompileBody(tmpl)
			if err != nil {
				t.Fatal(err)
			}
			body, err := b.Render(sinks.NewPayload(oncalltest.Hostile()), "application/json")
			if err != nil {
				t.Fatal(err)
			}
			var doc any
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			checkSafe(t, tool, doc)
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(doc); err != nil {
				t.Fatal(err)
			}
			path := "testdata/hostile-" + tool + ".golden.json"
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
		})
	}
}

// plainText are the keys whose values a tool shows as plain text (never
// parsed for markup or mentions): left as they are.
var plainText = map[string]bool{"fallback": true, "username": true, "alias": true, "color": true}

// plainFor are a tool's own plain-text keys: Telegram's chat and parse
// mode; ntfy's topic, tags and title (only its message is Markdown).
var plainFor = map[string]map[string]bool{
	"telegram": {"chat_id": true, "parse_mode": true},
	"ntfy":     {"topic": true, "tags": true, "title": true},
}

// checkSafe holds a rendered body to the escaping the documented
// templates promise: in Google Chat's text no < or > (mentions, links) is
// left; in the Markdown tools' text every character that formats, links
// or opens a tag carries its backslash outside code blocks, and no @ can
// start a mention; everywhere, code fences pair up.
func checkSafe(t *testing.T, tool string, doc any) {
	t.Helper()
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(k, e)
			}
		case []any:
			for _, e := range x {
				walk(key, e)
			}
		case string:
			if !plainText[key] && !plainFor[tool][key] {
				if why := unsafeText(tool, x); why != "" {
					t.Errorf("%s: %s: %s in %q", tool, key, why, x)
				}
			}
		}
	}
	walk("", doc)
}

func unsafeText(tool, s string) string {
	if tool == "telegram" {
		if _, err := parseMarkdownV2(s); err != nil {
			return err.Error()
		}
		return ""
	}
	parts := strings.Split(s, "```")
	if len(parts)%2 == 0 {
		return "an unpaired code fence"
	}
	for i, part := range parts {
		inCode := i%2 == 1
		for j := 0; j < len(part); j++ {
			c := part[j]
			switch {
			case tool == "google-chat":
				if c == '<' || c == '>' {
					return "a < or >" // Google Chat mentions as <users/all>
				}
			case c == '@' && !strings.HasPrefix(part[j+1:], "\u200b") && !strings.HasPrefix(part[j+1:], "…"):
				return "a bare @"
			case inCode:
			case c == '\\':
				j++
			case strings.IndexByte("`*_~[]<>|", c) >= 0:
				return "an unescaped " + string(c)
			}
		}
	}
	return ""
}

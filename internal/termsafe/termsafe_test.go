package termsafe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestNothingActsOnTheTerminal: an Event message or title holding an OSC
// 52 clipboard write, a screen clear, an OSC 8 link, a C1 CSI, a bidi
// override and a forged line prints with every one of them visible and
// inert; tabs (and, in Text, new lines) stay.
func TestNothingActsOnTheTerminal(t *testing.T) {
	hostile := "pull failed\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07\x1b[2J\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\ \u009b31m\u202egnp.exe\u2028\ttab\r\nforged: line"
	for name, got := range map[string]string{"Line": Line(hostile), "Text": Text(hostile)} {
		for _, r := range got {
			if Unsafe(r) && !(name == "Text" && r == '\n') {
				t.Errorf("%s left %U in %q", name, r, got)
			}
		}
		if !strings.Contains(got, `\x1b]52;c;`) || !strings.Contains(got, `\u202e`) || !strings.Contains(got, "\ttab") {
			t.Errorf("%s: %q does not show what was there", name, got)
		}
	}
	if strings.Contains(Line(hostile), "\n") {
		t.Error("Line kept a new line")
	}
	if !strings.Contains(Text(hostile), "\nforged: line") {
		t.Error("Text did not keep the new line")
	}
	var out bytes.Buffer
	fmt.Fprintf(Writer{W: &out}, "  event: Warning Failed ×1: %s\n", "\x1b[2Jcleared")
	if got := out.String(); got != "  event: Warning Failed ×1: \\x1b[2Jcleared\n" {
		t.Errorf("through the Writer: %q", got)
	}
}

// TestJSONStaysValidAndInert: what encoding/json leaves raw inside
// strings (DEL, C1, bidi overrides, line separators) comes out escaped,
// and the document decodes to the same values.
func TestJSONStaysValidAndInert(t *testing.T) {
	in := map[string]string{"object": "Pod/shop/api\x7f\u009b31m\u202egnp.exe\u2028x", "plain": "tab\there\nnew line"}
	b, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out := JSON(b)
	for _, r := range string(out) {
		if Unsafe(r) && r != '\n' {
			t.Errorf("%U left raw in %s", r, out)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil || back["object"] != in["object"] || back["plain"] != in["plain"] {
		t.Errorf("decoded %q (%v), want %q", back, err, in)
	}
}

package enrich

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/herald-k8s/herald/internal/redact"
)

func TestCleanTailKeepsTheNewestLines(t *testing.T) {
	r, _ := redact.New(nil)
	var raw []string
	for i := range 50 {
		raw = append(raw, strings.Repeat("x", 100)+" line "+string(rune('A'+i%26)))
	}
	raw = append(raw, "the newest line")
	lines, cut := cleanTail([]byte(strings.Join(raw, "\n")+"\n"), 20, 1000, r)
	if !cut || lines[len(lines)-1] != "the newest line" {
		t.Fatalf("cut %v, last %q", cut, lines[len(lines)-1])
	}
	size := 0
	for _, l := range lines {
		size += len(l) + 1
	}
	// 16 bytes for the newest, 108 for each older one: 9 of them fit.
	if size > 1000 || len(lines) != 10 {
		t.Errorf("%d lines, %d bytes; want the newest that fit in 1000 bytes (10)", len(lines), size)
	}
}

// TestCleanTailHostile: what a broken program writes comes out bounded,
// valid UTF-8, without terminal escapes or control characters.
func TestCleanTailHostile(t *testing.T) {
	r, _ := redact.New(nil)
	tests := map[string]string{
		"10 MB line":   strings.Repeat("word ", 2<<20),
		"invalid UTF8": "ok \xff\xfe\xfd then \xc3",
		"ANSI":         "\x1b[1;31mred\x1b[0m \x1b]0;title\x07 \x1b[2J\x1b[Hcleared",
		"NULs":         "a\x00b\x00\x00c\r\n\x7f\x01d",
		"only newline": "\n\n\n",
	}
	for name, raw := range tests {
		t.Run(name, func(t *testing.T) {
			lines, _ := cleanTail([]byte(raw), 20, 4096, r)
			size := 0
			for _, l := range lines {
				size += len(l) + 1
				if !utf8.ValidString(l) {
					t.Errorf("invalid UTF-8: %q", l)
				}
				if strings.ContainsAny(l, "\x00\x1b\r\x7f\x01") {
					t.Errorf("control characters left: %q", l)
				}
			}
			if size > 4096 {
				t.Errorf("%d bytes, over the 4096 budget", size)
			}
			switch name {
			case "10 MB line":
				// Cut from the start, it has lost its start: only the
				// marker is left.
				if len(lines) != 1 || lines[0] != strings.TrimSpace(lineCut) {
					t.Errorf("a huge line: %q, want the marker of a cut line", lines)
				}
			case "ANSI":
				if lines[0] != "red  cleared" {
					t.Errorf("escapes: %q", lines[0])
				}
			case "NULs":
				if lines[0] != "abc" || lines[1] != "d" {
					t.Errorf("controls: %q", lines)
				}
			case "only newline":
				if len(lines) != 0 {
					t.Errorf("blank log: %q", lines)
				}
			}
		})
	}
}

// TestCleanTailDropsPartialFirstLine: when a source returns more than
// herald keeps and the cut falls inside a (long) line, the rest of that
// line goes: it has lost the key name that said a secret follows.
func TestCleanTailDropsPartialFirstLine(t *testing.T) {
	r, _ := redact.New(nil)
	const maxBytes = 4096
	limit := maxBytes * fetchFactor
	// A long line holding a password, then the panic; size bytes in all.
	logOf := func(size int) string {
		head, tail := "config password=hunter2-Pa55 user=app ", "\npanic: boom\n"
		return head + strings.Repeat("x", size-len(head)-len(tail)) + tail
	}
	raw := logOf(limit + len("config password="))
	if cut := len(raw) - limit; !strings.HasPrefix(raw[cut:], "hunter2") {
		t.Fatalf("the cut is at %q, want the secret's start", raw[cut:cut+20])
	}
	lines, truncated := cleanTail([]byte(raw), 20, maxBytes, r)
	if !truncated || len(lines) != 1 || lines[0] != "panic: boom" {
		t.Errorf("truncated %v, lines %.200q; want only the panic", truncated, lines)
	}
	// A cut at a line's start keeps that line (redacted, cut to size).
	raw = "older line\n" + logOf(limit)
	lines, _ = cleanTail([]byte(raw), 20, maxBytes, r)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "config password=<redacted> user=app xxx") || !strings.HasSuffix(lines[0], lineCut) {
		t.Errorf("lines %.200q, want the line the cut starts, redacted and cut, then the panic", lines)
	}
}

func FuzzCleanTail(f *testing.F) {
	f.Add([]byte("a\nb\x1b[31mc\x00\n"), 3, 300)
	f.Add([]byte("password=x\n-----BEGIN RSA PRIVATE KEY-----\nAAA"), 20, 4096)
	r, _ := redact.New(nil)
	f.Fuzz(func(t *testing.T, raw []byte, maxLines, maxBytes int) {
		maxLines, maxBytes = 1+abs(maxLines)%100, 256+abs(maxBytes)%8192
		lines, _ := cleanTail(raw, maxLines, maxBytes, r)
		size := 0
		for _, l := range lines {
			size += len(l) + 1
			if !utf8.ValidString(l) || strings.ContainsAny(l, "\x00\x1b") {
				t.Fatalf("bad line %q", l)
			}
		}
		if len(lines) > maxLines || size > maxBytes+len(lineCut)+1 {
			t.Fatalf("%d lines, %d bytes over %d/%d", len(lines), size, maxLines, maxBytes)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

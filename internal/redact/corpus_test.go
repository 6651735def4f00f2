package redact

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// entry is one secret-bearing log line (or a few) of testdata/secrets.txt.
type entry struct {
	line       int    // in the file
	text       string // the marks removed
	secrets    []string
	outside    string // the text outside the marks, parts joined by NUL
	head, tail string // before the first mark, after the last
}

func loadCorpus(t testing.TB) []entry {
	t.Helper()
	data, err := os.ReadFile("testdata/secrets.txt")
	if err != nil {
		t.Fatal(err)
	}
	var raw []struct {
		line int
		text string
	}
	for i, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "":
		case strings.HasPrefix(l, "|| "):
			raw[len(raw)-1].text += "\n" + strings.TrimPrefix(l, "|| ")
		default:
			raw = append(raw, struct {
				line int
				text string
			}{i + 1, l})
		}
	}
	var out []entry
	for _, r := range raw {
		e := entry{line: r.line}
		var text, outside strings.Builder
		rest := r.text
		first := true
		for {
			open := strings.Index(rest, "⟦")
			if open < 0 {
				break
			}
			end := strings.Index(rest[open:], "⟧")
			if end < 0 {
				t.Fatalf("secrets.txt:%d: a mark is not closed", r.line)
			}
			secret := rest[open+len("⟦") : open+end]
			text.WriteString(rest[:open])
			outside.WriteString(rest[:open] + "\x00")
			if first {
				e.head, first = rest[:open], false
			}
			text.WriteString(secret)
			if secret != "" {
				e.secrets = append(e.secrets, secret)
			}
			rest = rest[open+end+len("⟧"):]
		}
		if first {
			t.Fatalf("secrets.txt:%d: no secret marked", r.line)
		}
		text.WriteString(rest)
		outside.WriteString(rest)
		e.text, e.outside, e.tail = text.String(), outside.String(), rest
		out = append(out, e)
	}
	return out
}

var placeholder = regexp.MustCompile(`<redacted[^>]*>`)

// leak returns what of e's secrets r lets through: any 6 characters of a
// secret (all of a shorter one) that the entry holds nowhere outside its
// secrets. Empty: nothing.
func leak(r *Redactor, e entry) (out, leaked string) {
	out = r.Redact(e.text)
	bare := placeholder.ReplaceAllString(out, "\x00")
	for _, s := range e.secrets {
		n := min(6, len(s))
		for i := 0; i+n <= len(s); i++ {
			w := s[i : i+n]
			if strings.TrimSpace(w) == "" || strings.Contains(e.outside, w) {
				continue
			}
			if strings.Contains(bare, w) {
				return out, w
			}
		}
	}
	return out, ""
}

// TestCorpus: every secret of the corpus is gone, and the text around it
// stays (the start and end of each entry).
func TestCorpus(t *testing.T) {
	r, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	corpus := loadCorpus(t)
	if len(corpus) < 100 {
		t.Fatalf("%d entries, want at least 100", len(corpus))
	}
	secrets := 0
	for _, e := range corpus {
		secrets += len(e.secrets)
		out, leaked := leak(r, e)
		if leaked != "" {
			t.Errorf("secrets.txt:%d: %q leaks in\n%s", e.line, leaked, out)
			continue
		}
		if !strings.HasPrefix(out, e.head) || !strings.HasSuffix(out, e.tail) {
			t.Errorf("secrets.txt:%d: more than the secrets went:\n in: %s\nout: %s", e.line, e.text, out)
		}
		if again := r.Redact(out); again != out {
			t.Errorf("secrets.txt:%d: redacting twice changes the text:\n%s\n%s", e.line, out, again)
		}
	}
	t.Logf("%d entries, %d secrets", len(corpus), secrets)
}

// TestEveryRuleIsNeeded: without any one built-in rule, some entry of the
// corpus leaks — every rule is held by the corpus, and the corpus checks
// something of each.
func TestEveryRuleIsNeeded(t *testing.T) {
	corpus := loadCorpus(t)
	for i, ru := range builtIn() {
		t.Run(ru.name, func(t *testing.T) {
			r := withRules(append(builtIn()[:i:i], builtIn()[i+1:]...))
			for _, e := range corpus {
				if _, leaked := leak(r, e); leaked != "" {
					t.Logf("without %s, secrets.txt:%d leaks %q", ru.name, e.line, leaked)
					return
				}
			}
			t.Errorf("no entry of the corpus leaks without rule %s", ru.name)
		})
	}
}

// TestBenign: realistic lines with no secret are left as they are, but
// for at most 1%.
func TestBenign(t *testing.T) {
	r, _ := New(nil)
	lines := benignLines(1000)
	changed := 0
	for _, l := range lines {
		if out := r.Redact(l); out != l {
			changed++
			t.Logf("changed:\n in: %s\nout: %s", l, out)
		}
	}
	t.Logf("%d of %d benign lines changed (%.1f%%)", changed, len(lines), 100*float64(changed)/float64(len(lines)))
	if changed > len(lines)/100 {
		t.Errorf("%d of %d benign lines changed, over 1%%", changed, len(lines))
	}
	// As one text (a log tail): the same.
	joined := strings.Join(lines, "\n")
	if out := r.Redact(joined); strings.Count(out, "\n") != len(lines)-1 {
		t.Errorf("the tail's lines were merged: %d lines of %d", strings.Count(out, "\n")+1, len(lines))
	}
}

func TestExtraPatterns(t *testing.T) {
	r, err := New([]string{`customer-[0-9]+`})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Redact("order for customer-48151623 failed"); got != "order for <redacted> failed" {
		t.Errorf("extra pattern: %q", got)
	}
	if _, err := New([]string{"("}); err == nil {
		t.Error("a bad pattern was accepted")
	}
}

// TestEveryVendorFormatIsNeeded: without any one vendor format, some
// entry of the corpus leaks — each format is held by a line of its own.
func TestEveryVendorFormatIsNeeded(t *testing.T) {
	corpus := loadCorpus(t)
	all := vendorFormats()
	for i, f := range all {
		t.Run(f.name, func(t *testing.T) {
			rules := builtIn()
			rules[len(rules)-1] = vendorRule(append(all[:i:i], all[i+1:]...))
			r := withRules(rules)
			for _, e := range corpus {
				if _, leaked := leak(r, e); leaked != "" {
					t.Logf("without %s, secrets.txt:%d leaks %q", f.name, e.line, leaked)
					return
				}
			}
			t.Errorf("no entry of the corpus leaks without vendor format %s", f.name)
		})
	}
}

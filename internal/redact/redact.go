// Package redact removes secrets from text before it leaves herald.
//
// Everything herald sends comes, somewhere, from the cluster: termination
// and Event messages, log lines, templates over objects. Their authors may
// print a password, a token or a key, and herald's alerts reach channels
// many people read. A Redactor finds secrets by their markers — a key
// name (password=, clientSecret:), a header (Authorization, Cookie), a
// URL's user-info, a vendor's token format, a PEM block — and replaces the
// secret, keeping the marker, so a reader still sees what was there.
//
// What has no marker at all (a bare password in prose) cannot be found:
// docs/rules.md says so.
//
// The package imports nothing of herald: the rules (every finding) and
// the crash-context stage (log tails, events) share it.
package redact

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Placeholders. Each says what was there; all start with "<redacted" so
// that redacting again changes nothing (rules skip a value that is one).
const (
	Redacted   = "<redacted>"
	privateKey = "<redacted private key>"
	base64Blob = "<redacted base64>"
)

// span is a secret found in the text: [start, end) becomes label.
type span struct {
	start, end int
	label      string
}

// rule is one kind of secret. Triggers are lower-case literals one of
// which every text holding such a secret contains: the rule's scan runs
// only when one occurs, so a text with no marker costs one pass (to
// lower its case and look its byte pairs up in a bit set), not a regular
// expression per rule.
type rule struct {
	name     string
	triggers []string
	// minRun: the text must hold a run of at least this many base64
	// characters (0: no such need).
	minRun int
	find   func(t *text, out []span) []span
}

// text is what the rules scan: the text, the same lower-cased (ASCII
// only, so offsets agree), and what several rules read, worked out once.
type text struct {
	s, lower string
	keys     [][2]int // spans of keys holding a key word
	keysDone bool
}

// Redactor removes the secrets its rules find. It is safe for concurrent
// use.
type Redactor struct {
	rules []rule
	// byPair holds the triggers by their first two bytes; pairs is the
	// set of those pairs, a bit each.
	byPair map[uint16][]trigger
	pairs  [1 << 16 / 64]uint64
}

type trigger struct {
	text string
	rule int
}

// New makes a redactor of the built-in rules and extra Go regular
// expressions (each match is replaced whole by "<redacted>").
func New(extra []string) (*Redactor, error) {
	rules := builtIn()
	for i, e := range extra {
		re, err := regexp.Compile(e)
		if err != nil {
			return nil, fmt.Errorf("redact[%d]: %w", i, err)
		}
		rules = append(rules, rule{name: fmt.Sprintf("extra[%d]", i), find: whole(re, Redacted)})
	}
	return withRules(rules), nil
}

// withRules indexes the rules' triggers.
func withRules(rules []rule) *Redactor {
	r := &Redactor{rules: rules, byPair: map[uint16][]trigger{}}
	for i, ru := range rules {
		if len(ru.triggers) > 0 && i >= 64 {
			panic("redact: a rule with triggers past the 64th") // the mask is a uint64
		}
		for _, t := range ru.triggers {
			if len(t) < 2 || strings.ToLower(t) != t {
				panic("redact: trigger " + t + " is not lower-case or is shorter than 2 bytes")
			}
			p := uint16(t[0])<<8 | uint16(t[1])
			r.byPair[p] = append(r.byPair[p], trigger{t, i})
			r.pairs[p>>6] |= 1 << (p & 63)
		}
	}
	return r
}

// builtIn lists the rules in the order docs/rules.md describes them.
func builtIn() []rule {
	rules := []rule{
		pemRule(),
		base64Rule(),
		authorizationRule(),
		bearerRule(),
		basicRule(),
		cookieRule(),
		urlRule(),
		dsnRule(),
		keyValueRule(),
		flagRule(),
		shortFlagRule(),
		envPairRule(),
		awsSecretRule(),
		netrcRule(),
		userFlagRule(),
		spokenRule(),
	}
	return append(rules, vendorRule(vendorFormats()))
}

// Redact returns s with every secret the rules find replaced.
func (r *Redactor) Redact(s string) string {
	if s == "" {
		return s
	}
	on, run := r.triggered(s)
	var t *text // made when a rule runs: most texts need none
	var spans []span
	for i := range r.rules {
		ru := &r.rules[i]
		if ru.minRun > run || len(ru.triggers) > 0 && on&(1<<i) == 0 {
			continue
		}
		if t == nil {
			t = &text{s: s, lower: lower(s)}
		}
		spans = ru.find(t, spans)
	}
	if len(spans) == 0 {
		return s
	}
	return apply(s, spans)
}

// triggered returns the set of rules one of whose triggers s holds (in
// any case), and the longest run of base64 characters in s. It lowers
// bytes as it reads them: no copy of s is made.
func (r *Redactor) triggered(s string) (on uint64, run int) {
	cur := 0
	for i := 0; i < len(s); i++ {
		if isB64(s[i]) {
			cur++
			run = max(run, cur)
		} else {
			cur = 0
		}
		if i+1 == len(s) {
			break
		}
		p := uint16(lowerByte(s[i]))<<8 | uint16(lowerByte(s[i+1]))
		if r.pairs[p>>6]&(1<<(p&63)) == 0 {
			continue
		}
		for _, t := range r.byPair[p] {
			if on&(1<<t.rule) == 0 && hasPrefixFold(s[i:], t.text) {
				on |= 1 << t.rule
			}
		}
	}
	return on, run
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// lower is s with ASCII letters lowered: the same length, so offsets in
// it are offsets in s.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				b[j] = lowerByte(b[j])
			}
			return string(b)
		}
	}
	return s
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// apply replaces the spans (merged where they overlap) by their labels.
func apply(s string, spans []span) string {
	// By start; of spans that start together the longest first, and a
	// label that says more before the plain one.
	slices.SortStableFunc(spans, func(a, b span) int {
		if a.start != b.start {
			return a.start - b.start
		}
		if a.end != b.end {
			return b.end - a.end
		}
		switch {
		case a.label != Redacted && b.label == Redacted:
			return -1
		case a.label == Redacted && b.label != Redacted:
			return 1
		}
		return 0
	})
	var b strings.Builder
	b.Grow(len(s))
	at := 0
	for i := 0; i < len(spans); {
		sp := spans[i]
		i++
		for i < len(spans) && spans[i].start < sp.end {
			sp.end = max(sp.end, spans[i].end)
			i++
		}
		if sp.start < at { // inside what the previous span covered
			sp.start = at
		}
		b.WriteString(s[at:sp.start])
		b.WriteString(sp.label)
		at = sp.end
	}
	b.WriteString(s[at:])
	return b.String()
}

// whole makes a rule's scan that redacts every match of re.
func whole(re *regexp.Regexp, label string) func(*text, []span) []span {
	return func(t *text, out []span) []span {
		for _, m := range re.FindAllStringIndex(t.s, -1) {
			if m[1] > m[0] {
				out = append(out, span{m[0], m[1], label})
			}
		}
		return out
	}
}

// group makes a rule's scan that redacts group 1 of every match of re,
// when keep (if any) does not say the value is harmless.
func group(re *regexp.Regexp, label string, keep func(v string) bool) func(*text, []span) []span {
	return func(t *text, out []span) []span {
		s := t.s
		for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
			if m[2] < 0 || m[3] <= m[2] {
				continue
			}
			if v := s[m[2]:m[3]]; isPlaceholder(v) || keep != nil && keep(v) {
				continue
			}
			out = append(out, span{m[2], m[3], label})
		}
		return out
	}
}

// isPlaceholder: v is what a redaction left (so redacting twice is
// redacting once): "<redacted>", or "<redacted " and a label of letters, digits
// and spaces ("<redacted private key>", "<redacted GitHub token>"), at
// most maxPlaceholder bytes. "<redactedhunter2>" is not one.
func isPlaceholder(v string) bool {
	if v == Redacted {
		return true
	}
	label, ok := strings.CutPrefix(v, "<redacted ")
	if !ok || len(v) > maxPlaceholder || len(label) < 2 || label[len(label)-1] != '>' || label[0] == ' ' {
		return false
	}
	for i := 0; i < len(label)-1; i++ {
		if c := label[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == ' ') { // "base64"
			return false
		}
	}
	return true
}

// maxPlaceholder bounds a placeholder's length.
const maxPlaceholder = 64

func isB64(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/'
}

// mixed says whether v looks generated rather than written: upper and
// lower case letters and a digit or symbol (a commit hash, a digest, a
// word does not).
func mixed(v string) bool {
	var upper, lower, other bool
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case 'A' <= c && c <= 'Z':
			upper = true
		case 'a' <= c && c <= 'z':
			lower = true
		default:
			other = true
		}
	}
	return upper && lower && other
}

package sinks

import (
	"testing"
	"unicode/utf8"
)

func TestTextHelpers(t *testing.T) {
	for _, tt := range []struct {
		name, got, want string
	}{
		{"Head fits", Head("abc", 3), "abc"},
		{"Head cuts", Head("abcdef", 5), "ab…"},
		{"Head keeps characters whole", Head("üüü", 5), "ü…"},
		{"Head repairs", Head("a\xffb", 10), "a\uFFFDb"},
		{"Tail cuts", Tail("abcdef", 5), "…ef"},
		{"Tail keeps characters whole", Tail("üüü", 5), "…ü"},
		{"Truncate fits", Truncate(3, "abc"), "abc"},
		{"Truncate cuts", Truncate(3, "abcd"), "ab…"},
		{"Truncate one", Truncate(1, "ab"), "…"},
		{"Truncate zero", Truncate(0, "ab"), ""},
		{"Truncate characters", Truncate(2, "üüü"), "ü…"},
		{"Truncate repairs", Truncate(4, "a\xffb"), "a\uFFFDb"},
		{"TruncateEnd fits", TruncateEnd(3, "abc"), "abc"},
		{"TruncateEnd cuts", TruncateEnd(3, "abcd"), "…cd"},
		{"TruncateEnd characters", TruncateEnd(2, "üüü"), "…ü"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// TestTruncateBytes: at most n bytes, never half a character, the … inside
// the count; invalid UTF-8 is replaced, not passed on.
func TestTruncateBytes(t *testing.T) {
	for _, tt := range []struct {
		n        int
		in, want string
	}{
		{10, "short", "short"},
		{6, "abcdefgh", "abc…"},
		{7, "€€€", "€…"}, // 3 bytes each: a second € and … would be 9
		{5, "€€€", "…"},
		{2, "€€€", ""},
		{4096, "ok\xff", "ok\uFFFD"},
	} {
		got := TruncateBytes(tt.n, tt.in)
		if got != tt.want || len(got) > tt.n || !utf8.ValidString(got) {
			t.Errorf("TruncateBytes(%d, %q) = %q, want %q", tt.n, tt.in, got, tt.want)
		}
	}
}

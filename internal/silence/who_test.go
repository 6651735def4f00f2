package silence

import "testing"

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"slack:U0AB (ana)":                         "slack:U0AB (ana)",
		"alice\nMuted by nobody until 2099":        "alice Muted by nobody until 2099",
		"bob\u202e\u2028evil":                      "bob evil",
		"  spaced\t\tout  ":                        "spaced out",
		"0123456789012345678901234567890123456789": "0123456789…",
	} {
		max := 80
		if len(in) == 40 {
			max = 10
		}
		if got := oneLine(in, max); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
		}
	}
}

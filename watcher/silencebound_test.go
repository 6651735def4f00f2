package watcher

import (
	"strings"
	"testing"
)

// TestSilenceUntilIsBounded: a pod's herald.io/silence-until is kept in
// the cache only as long as herald's own annotations may be (a time is
// 25 bytes): a pod's author cannot make every cached pod carry 256 KB.
// Both decoders agree.
func TestSilenceUntilIsBounded(t *testing.T) {
	for _, tc := range []struct {
		value string
		kept  bool
	}{
		{"2026-11-26T08:00:00Z", true},
		{strings.Repeat("9", 256<<10), false},
	} {
		pod := crashingPod("shop-0")
		pod.Annotations = map[string]string{SilenceUntilAnnotation: tc.value}
		typed, wire := bothDecodings(t, pod)
		for name, c := range map[string]*CompactPod{"compactPod": typed, "decodeCompactPod": wire} {
			if _, kept := c.Annotations[SilenceUntilAnnotation]; kept != tc.kept {
				t.Errorf("%s: a silence-until of %d bytes kept %v, want %v", name, len(tc.value), kept, tc.kept)
			}
		}
	}
}

package main

import (
	"strings"
	"testing"
)

// TestKubeLogVerbosityCap: up to 5 is fine; above, refused unless forced,
// and forced it is a warning; below 0 never.
func TestKubeLogVerbosityCap(t *testing.T) {
	beside(t)
	for _, tc := range []struct {
		v           int
		force       bool
		warn, error bool
	}{
		{0, false, false, false}, {5, false, false, false}, {6, false, false, true}, {9, false, false, true},
		{8, true, true, false}, {-1, true, false, true},
	} {
		warning, err := checkKubeLogVerbosity(tc.v, tc.force)
		if (warning != "") != tc.warn || (err != nil) != tc.error {
			t.Errorf("%d (force %v): warning %q, error %v", tc.v, tc.force, warning, err)
		}
		if warning != "" && !strings.Contains(warning, "Secrets") {
			t.Errorf("%d: the warning does not say what leaks: %q", tc.v, warning)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateWarnsWithoutClusterName: a configuration without
// clusterName is valid (exit 0) but validate says that its messages will
// not name their cluster; with clusterName it says nothing of the kind.
func TestValidateWarnsWithoutClusterName(t *testing.T) {
	beside(t)
	const warning = "clusterName is not set: messages will not say which cluster they come from"
	const rest = "rules:\n  - {name: crash, kind: Pod, detector: crashloop, severity: critical, sinks: [out]}\nsinks: [{name: out, stdout: {}}]\n"
	for _, c := range []struct {
		name, config string
		warned       bool
	}{
		{"unset", rest, true},
		{"set", "clusterName: prod-eu\n" + rest, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "herald.yaml")
			if err := os.WriteFile(path, []byte(c.config), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"validate", "-f", path}, {"validate", "--offline", "-f", path}} {
				var stdout, stderr bytes.Buffer
				if code := runMain(context.Background(), args, &stdout, &stderr); code != 0 {
					t.Fatalf("%v: exit %d, want 0 (a warning is no error): %s", args, code, stderr.String())
				}
				if got := strings.Contains(stderr.String(), warning); got != c.warned {
					t.Errorf("%v: warned %v, want %v; stderr %q", args, got, c.warned, stderr.String())
				}
			}
		})
	}
}

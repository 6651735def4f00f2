package main

import (
	"bytes"
	"context"
	"os"
	"testing"
)

// TestTestRoute: herald test --route says, for every finding, which route
// takes it (by the team annotation of a pod's Deployment, of a
// namespace), where each sink sends it, the mentions, and route by route
// why the others did not; an unknown namespace is said, not guessed.
func TestTestRoute(t *testing.T) {
	beside(t)
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"test", "-f", "testdata/routes/config.yaml", "--object", "testdata/routes/objects.yaml", "--route"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	const golden = "testdata/routes/test-route.golden"
	if *update {
		os.WriteFile(golden, stdout.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if stdout.String() != string(want) {
		t.Errorf("output:\n%s\nwant (%s):\n%s", stdout.String(), golden, want)
	}
}

package main

import (
	"bytes"
	"context"
	"testing"
)

// TestDryRunShowsExclusions: herald test names, for each excluded
// finding, the exclusion that dropped it and what it matched.
func TestDryRunShowsExclusions(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"test", "-f", "testdata/exclude.yaml", "--object", "testdata/exclude-pods.yaml"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	want := `Pod shop/web: rule crash FIRES [critical → out]
  title: CrashLoopBackOff: Pod shop/web container app
  text:  CrashLoopBackOff: Pod shop/web container app: restarted 5 times, last exit code 2 (Error)
Pod shop/web: rule crash EXCLUDED (CrashLoopBackOff container istio-proxy): excluded by rules[0].exclude.containers "istio-proxy" (container istio-proxy)
Pod shop/db-client: rule crash EXCLUDED (CrashLoopBackOff container app): excluded by rules[0].exclude.logPattern "connection refused .* retrying" (fact lastMessage)
2 objects tested, 1 findings, 2 excluded
`
	if stdout.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", stdout.String(), want)
	}
}

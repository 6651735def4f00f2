package testenv

import (
	"context"
	"testing"
)

// New starts a control plane for one test and stops it when the test ends.
func New(t testing.TB) *Env {
	t.Helper()
	env, err := Start(context.Background(), Options{Logf: t.Logf, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting the test control plane: %v", err)
	}
	t.Cleanup(env.Stop)
	return env
}

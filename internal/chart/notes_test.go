package chart

import (
	"strings"
	"testing"
)

// checkNotes: every command the install notes (helm install's output)
// print names the namespace, and every Deployment by name — a bare
// `kubectl rollout restart deployment` restarts every Deployment of the
// current namespace — and the leader's log is read from the Lease
// holder's pod, not deploy/<name> (which may be the standby).
func checkNotes(t *testing.T, out string) {
	t.Helper()
	_, notes, ok := strings.Cut(out, "NOTES:\n")
	if !ok {
		t.Fatalf("no NOTES in:\n%s", out)
	}
	commands := 0
	for _, line := range strings.Split(notes, "\n") {
		for _, cmd := range strings.Split(line, "kubectl ")[1:] {
			commands++
			if !strings.HasPrefix(cmd, "-n ") && !strings.Contains(cmd, " -n ") {
				t.Errorf("a command without a namespace: kubectl %s", cmd)
			}
			if strings.Contains(cmd, "deployment)") || strings.HasSuffix(strings.TrimSpace(cmd), "deployment") {
				t.Errorf("a Deployment not named: kubectl %s", cmd)
			}
		}
	}
	if commands < 5 {
		t.Errorf("%d kubectl commands in the notes:\n%s", commands, notes)
	}
	if strings.Contains(notes, "logs deploy/") {
		t.Errorf("the notes read the log of deploy/…, which may be the standby:\n%s", notes)
	}
	if !strings.Contains(notes, "get lease herald -o jsonpath='{.spec.holderIdentity}' | cut -d_ -f1") {
		t.Errorf("the notes do not read the leader's log by the Lease holder:\n%s", notes)
	}
}

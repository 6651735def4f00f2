package enrich

import (
	"context"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-k8s/herald/internal/incident"
)

// kubeletSource answers as a real kubelet does: each instance's log, and
// for an instance it has removed, status 200 with its "unable to
// retrieve" line instead of the log.
type kubeletSource struct {
	previous, current string // "" : removed
	mu                sync.Mutex
	asked             []bool // Previous of each request
}

func (k *kubeletSource) Logs(_ context.Context, _, _ string, opts *corev1.PodLogOptions) ([]byte, error) {
	k.mu.Lock()
	k.asked = append(k.asked, opts.Previous)
	k.mu.Unlock()
	log := k.current
	if opts.Previous {
		log = k.previous
	}
	if log == "" {
		return []byte("unable to retrieve container logs for containerd://2d98fc4b5495\n"), nil
	}
	return []byte(log), nil
}

func (k *kubeletSource) Events(context.Context, string, string) ([]corev1.Event, error) {
	return nil, nil
}

// TestTheCrashedInstancesLog: the log attached is the crashed
// instance's, whichever that is, and never the kubelet's "unable to
// retrieve" line.
func TestTheCrashedInstancesLog(t *testing.T) {
	waiting := crash("a", incident.Firing) // CrashLoopBackOff: the crashed one is the previous
	exited := crash("b", incident.Firing)  // just exited: the crashed one is the current
	exited.Incident.Facts = map[string]string{"restartCount": "1", "exitCode": "1", "state": "terminated"}
	for _, tc := range []struct {
		name              string
		n                 incident.Notification
		previous, current string
		wantAsked         []bool
		wantLine          string
		wantPrevious      bool
		wantUnavailable   string
	}{
		{"back-off: the previous instance", waiting, "config: bad\n", "starting\n", []bool{true}, "config: bad", true, ""},
		{"just exited: the current instance", exited, "older crash\n", "config: bad\n", []bool{false}, "config: bad", false, ""},
		{"previous removed: the current instance", waiting, "", "config: bad\n", []bool{true, false}, "config: bad", false, ""},
		{"both removed: said so", waiting, "", "", []bool{true, false}, "", false, "logs: gone (the kubelet has already removed the crashed container)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &kubeletSource{previous: tc.previous, current: tc.current}
			e := New(Options{Source: src, Logs: true, Logger: quiet()})
			c := e.Gather(context.Background(), tc.n)
			if strings.Join(boolStrings(src.asked), ",") != strings.Join(boolStrings(tc.wantAsked), ",") {
				t.Errorf("asked previous=%v, want %v", src.asked, tc.wantAsked)
			}
			if c.Unavailable != tc.wantUnavailable {
				t.Errorf("unavailable %q, want %q", c.Unavailable, tc.wantUnavailable)
			}
			if tc.wantLine == "" {
				if c.Logs != nil {
					t.Errorf("logs %+v, want none", c.Logs)
				}
				return
			}
			if c.Logs == nil || strings.Join(c.Logs.Lines, "\n") != tc.wantLine || c.Logs.Previous != tc.wantPrevious {
				t.Errorf("logs %+v, want [%s] previous=%v", c.Logs, tc.wantLine, tc.wantPrevious)
			}
		})
	}
}

func boolStrings(bs []bool) []string {
	var out []string
	for _, b := range bs {
		out = append(out, map[bool]string{true: "previous", false: "current"}[b])
	}
	return out
}

package alertmanager

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
	"github.com/herald-k8s/herald/internal/testenv"
)

// TestAckedByAnnotation: an acknowledged incident is still firing (no
// end), and its alert says who took it on in acknowledged_by on every
// post from the acknowledgement on (each replaces the alert whole), a
// name of markup and line breaks as one line; before it, and for an
// incident nobody took on, there is no such annotation.
func TestAckedByAnnotation(t *testing.T) {
	s, err := New(Options{Name: "am", URLs: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	ana := &incident.Ack{By: "slack:U0ANA", Name: "ana", At: time.Now()}
	for _, c := range []struct {
		name string
		tr   incident.Transition
		ack  *incident.Ack
		want string
	}{
		{"firing", incident.Firing, nil, ""},
		{"acknowledged", incident.Acknowledged, ana, "ana (slack:U0ANA)"},
		{"updated after it", incident.Updated, ana, "ana (slack:U0ANA)"},
		{"muted after it", incident.Silenced, ana, "ana (slack:U0ANA)"},
		{"no name", incident.Acknowledged, &incident.Ack{By: "slack:U0ANA"}, "slack:U0ANA"},
		{"a name someone chose", incident.Acknowledged, &incident.Ack{By: "cli:x", Name: oncalltest.HostileWho}, "ana :white_check_mark: Resolved <!channel> <@U0> <http://x|y> 'x' @here & [31m (cli:x)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := crashLoop(time.Now())
			n.Transition, n.Incident.Ack = c.tr, c.ack
			a := s.alert(n)
			got, ok := a.Annotations["acknowledged_by"]
			if got != c.want || ok != (c.want != "") {
				t.Errorf("acknowledged_by = %q (set %v), want %q", got, ok, c.want)
			}
			if !a.EndsAt.IsZero() || strings.Contains(got, "\n") {
				t.Errorf("ends at %v; annotation %q", a.EndsAt, got)
			}
		})
	}
}

// TestAcknowledgedAgainstAlertmanager: in a real Alertmanager with a 3 s
// resolve_timeout, an acknowledged incident's alert stays active, saying
// who took it on, for two resolve_timeouts: the re-posts restate the
// acknowledgement, not the firing before it.
func TestAcknowledgedAgainstAlertmanager(t *testing.T) {
	const resolveTimeout = 3 * time.Second
	am := testenv.StartAlertmanager(t, resolveTimeout)
	sink, err := New(Options{Name: "am", URLs: []string{am.URL}, Resend: time.Second, Timeout: 5 * time.Second, UserAgent: "herald/test"})
	if err != nil {
		t.Fatal(err)
	}
	d, _, _ := run(t, sink)
	n := crashLoop(time.Now())
	acked := n
	acked.Transition, acked.Seq, acked.Time, acked.Context = incident.Acknowledged, 2, time.Now(), nil
	acked.Incident.Ack = &incident.Ack{By: "slack:U0ANA", Name: "ana", At: acked.Time}
	for _, n := range []incident.Notification{n, acked} {
		if err := d.Dispatch(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	saysWho := func() bool {
		as := alerts(t, am)
		return len(as) == 1 && as[0].Status.State == "active" && as[0].Annotations["acknowledged_by"] == "ana (slack:U0ANA)"
	}
	eventually(t, 2*time.Second, "the alert active, saying who acknowledged it", saysWho)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(2 * resolveTimeout); time.Now().Before(end); <-tick.C {
		if !saysWho() {
			t.Fatalf("the acknowledged alert is not active, or no longer says who: %+v", alerts(t, am))
		}
	}
}

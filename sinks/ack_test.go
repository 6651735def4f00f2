package sinks

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
)

// TestAcked: an open incident someone took on says who and how long ago
// (their name, else the actor), as one line of at most 80 characters
// whatever the name holds; one nobody took on, and a resolved one, say
// nothing of it; an acknowledgement's headline says it.
func TestAcked(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 20, 0, 0, time.UTC)
	at := now.Add(-3 * time.Minute)
	for _, c := range []struct {
		name string
		tr   incident.Transition
		ack  *incident.Ack
		want string
	}{
		{"by name", incident.Updated, &incident.Ack{By: "slack:U0ANA", Name: "ana", At: at}, "Acknowledged by ana · 3 min ago"},
		{"no name", incident.Repeat, &incident.Ack{By: "slack:U0ANA", At: at}, "Acknowledged by slack:U0ANA · 3 min ago"},
		{"blank name", incident.Acknowledged, &incident.Ack{By: "slack:U0ANA", Name: " \n\t", At: at}, "Acknowledged by slack:U0ANA · 3 min ago"},
		{"while muted", incident.Silenced, &incident.Ack{By: "cli:bob", Name: "bob", At: at}, "Acknowledged by bob · 3 min ago"},
		{"a forged line", incident.Firing, &incident.Ack{Name: "ana\n\r\u2028✅ Resolved\u202e `rm`", At: at}, "Acknowledged by ana ✅ Resolved 'rm' · 3 min ago"},
		{"a long name", incident.Firing, &incident.Ack{Name: strings.Repeat("é", 200), At: at}, "Acknowledged by " + strings.Repeat("é", 79) + "… · 3 min ago"},
		{"not valid UTF-8", incident.Firing, &incident.Ack{Name: "a\xffb", At: at}, "Acknowledged by a b · 3 min ago"},
		{"nobody", incident.Updated, nil, ""},
		{"resolved", incident.Resolved, &incident.Ack{Name: "ana", At: at}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := incident.Notification{Transition: c.tr, Incident: incident.Incident{Ack: c.ack}}
			if got := Acked(n, now); got != c.want {
				t.Errorf("Acked = %q, want %q", got, c.want)
			}
		})
	}
	n := incident.Notification{Transition: incident.Acknowledged, Incident: incident.Incident{Reason: "CrashLoopBackOff", Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web"}}}
	if got := Headline(n, "prod-eu", now); got != "prod-eu · shop/web: CrashLoopBackOff, acknowledged" {
		t.Errorf("Headline = %q", got)
	}
	if Changed(incident.Notification{Transition: incident.Acknowledged, Changes: rollout()}) == nil {
		t.Errorf("an acknowledgement does not show what changed, as every open notification does")
	}
}

// TestMutedSaysWho: a mute someone asked for says who, as one line
// (a Silence's createdBy is theirs to write).
func TestMutedSaysWho(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 20, 0, 0, time.UTC)
	for _, c := range []struct{ who, want string }{
		{"slack:U0AB12CD (ana)", "Muted by silence shop/x (by slack:U0AB12CD (ana)) until 2026-11-22 12:00 UTC (in 1 h 40 min)"},
		{"", "Muted by silence shop/x until 2026-11-22 12:00 UTC (in 1 h 40 min)"},
		{"alice\nMuted by nobody", "Muted by silence shop/x (by alice Muted by nobody) until 2026-11-22 12:00 UTC (in 1 h 40 min)"},
	} {
		n := incident.Notification{Transition: incident.Silenced, Incident: incident.Incident{MutedBy: "silence shop/x", MutedWho: c.who, MutedUntil: now.Add(100 * time.Minute)}}
		if got := Muted(n, now); got != c.want {
			t.Errorf("Muted by %q = %q, want %q", c.who, got, c.want)
		}
	}
	if got := MutedWho(incident.Incident{MutedWho: strings.Repeat("x", 300)}); utf8.RuneCountInString(got) != maxWho {
		t.Errorf("MutedWho of 300 characters: %d", utf8.RuneCountInString(got))
	}
}

// TestPayloadCarriesAck: the payload says who acknowledged (by, name, at
// in UTC; never the press's key) on every notification once someone has,
// and nothing before; the hand-written JSON is encoding/json's, a name of
// markup and line breaks included, and fails where it fails on a time
// JSON cannot hold.
func TestPayloadCarriesAck(t *testing.T) {
	at := time.Date(2026, 11, 22, 11, 0, 0, 5, time.FixedZone("", 3600))
	n := crashNotification()
	if p := NewPayload(n); p.Ack != nil {
		t.Fatalf("ack before anyone acknowledged: %+v", p.Ack)
	}
	n.Transition = incident.Acknowledged
	n.Incident.Ack = &incident.Ack{By: "slack:U0ANA", Name: "<!channel> \"ana\"\n\u2028\\", At: at, Key: "U0ANA/1.2/herald_ack/x"}
	p := NewPayload(n)
	want := PayloadAck{By: "slack:U0ANA", Name: n.Incident.Ack.Name, At: at.UTC()}
	if p.Transition != "acknowledged" || p.Ack == nil || *p.Ack != want {
		t.Fatalf("payload %s ack %+v, want %+v", p.Transition, p.Ack, want)
	}
	for _, p := range []Payload{p, {Ack: &PayloadAck{}}, {Ack: &PayloadAck{By: "x", Name: "y"}}} {
		got, err := p.AppendJSON(nil)
		wantJSON, wantErr := json.Marshal(p)
		if err != nil || wantErr != nil || !bytes.Equal(got, wantJSON) {
			t.Errorf("AppendJSON:\n got %s (%v)\nwant %s (%v)", got, err, wantJSON, wantErr)
		}
	}
	if b, _ := p.AppendJSON(nil); strings.Contains(string(b), "U0ANA/1.2") || !strings.Contains(string(b), `"ack":{"by":"slack:U0ANA","name":`) {
		t.Errorf("payload: %s", b)
	}
	p.Ack.At = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	_, wantErr := json.Marshal(p)
	if _, err := p.AppendJSON(nil); err == nil || wantErr == nil {
		t.Errorf("an ack in the year 10000: error %v (encoding/json: %v), want both to fail", err, wantErr)
	}
}

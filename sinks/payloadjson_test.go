package sinks

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/randfill"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
)

// awkward is what strings are made of here: everything encoding/json
// escapes (quotes, backslash, control characters, HTML, U+2028/2029),
// invalid UTF-8, and ordinary text.
var awkward = []string{"a", "Z", " ", "é", "日本", "🔥", `"`, `\`, "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f",
	"<", ">", "&", "\u2028", "\u2029", "\xff", "\xe2\x80", "\xed\xa0\x80", "restarts 5 → 25"}

func awkwardString(c randfill.Continue) string {
	var b strings.Builder
	for range c.Intn(12) {
		b.WriteString(awkward[c.Intn(len(awkward))])
	}
	return b.String()
}

var zones = []*time.Location{time.UTC, time.FixedZone("", 5*3600+30*60), time.FixedZone("", -7*3600), time.FixedZone("", 30)}

func awkwardTime(c randfill.Continue) time.Time {
	return time.Unix(c.Int63n(253402300799), c.Int63n(1e9)).In(zones[c.Intn(len(zones))])
}

// awkwardStrings is nil, empty or a few awkward strings: encoding/json
// writes nil and empty apart.
func awkwardStrings(c randfill.Continue) []string {
	switch c.Intn(4) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	out := make([]string, 1+c.Intn(3))
	for i := range out {
		out[i] = awkwardString(c)
	}
	return out
}

func awkwardChanges(c randfill.Continue) incident.Changes {
	ch := incident.Changes{Workload: awkwardString(c), Since: awkwardTime(c), At: awkwardTime(c), Undo: awkwardString(c), Lines: awkwardStrings(c)}
	for range c.Intn(4) {
		ch.Rollouts = append(ch.Rollouts, incident.Rollout{Revision: awkwardString(c), At: awkwardTime(c), By: awkwardString(c),
			Items: awkwardStrings(c), Known: c.Intn(2) == 0, ChangeCause: awkwardString(c), Tools: awkwardStrings(c)})
	}
	if c.Intn(4) == 0 {
		ch.Rollouts = []incident.Rollout{} // empty, not nil: omitted all the same
	}
	for range c.Intn(4) {
		ch.Objects = append(ch.Objects, incident.ObjectChange{Kind: awkwardString(c), Name: awkwardString(c), At: awkwardTime(c),
			Created: c.Intn(2) == 0, MetaToo: c.Intn(2) == 0, AlsoFailing: awkwardStrings(c)})
	}
	return ch
}

func awkwardPayloads(seed int64, n int) []Payload {
	f := randfill.NewWithSeed(seed).NilChance(0.25).NumElements(0, 4).MaxDepth(4).Funcs(
		func(s *string, c randfill.Continue) { *s = awkwardString(c) },
		func(t *time.Time, c randfill.Continue) { *t = awkwardTime(c) },
		// The section's rollouts and objects lie deeper than MaxDepth
		// (randfill leaves them zero): filled by hand, every field.
		func(ch **incident.Changes, c randfill.Continue) {
			if *ch = nil; c.Intn(4) > 0 {
				v := awkwardChanges(c)
				*ch = &v
			}
		},
		func(p *[]Payload, c randfill.Continue) {
			if c.Intn(4) == 0 { // digests are rare and one level deep
				*p = make([]Payload, 1+c.Intn(3))
				for i := range *p {
					c.Fill(&(*p)[i])
					(*p)[i].Digest = nil
				}
			}
		},
	)
	out := make([]Payload, n)
	for i := range out {
		f.Fill(&out[i])
	}
	return out
}

// TestAppendJSONIsEncodingJSON: the hand-written encoder writes the same
// bytes as encoding/json for payloads with every field filled at random
// from awkward strings (or left empty, nil, zero), and the same for the
// usual ones.
func TestAppendJSONIsEncodingJSON(t *testing.T) {
	payloads := append(awkwardPayloads(1, 3000), NewPayload(crashNotification()), Payload{},
		Payload{Context: &incident.Context{Logs: &incident.Logs{}}}, Payload{Context: &incident.Context{Logs: &incident.Logs{Lines: []string{}}}},
		Payload{Changes: &incident.Changes{}}, Payload{Changes: &incident.Changes{Lines: []string{}, Rollouts: []incident.Rollout{{}}, Objects: []incident.ObjectChange{{}}}})
	for i, p := range payloads {
		want, wantErr := json.Marshal(p)
		got, err := p.AppendJSON(nil)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("payload %d: error %v, encoding/json's %v", i, err, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("payload %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// TestAppendJSONTimeErrors: a time JSON cannot hold fails as it does
// with encoding/json, rather than writing something receivers reject.
func TestAppendJSONTimeErrors(t *testing.T) {
	for _, at := range []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		p := NewPayload(crashNotification())
		p.Context = &incident.Context{Events: []incident.Event{{LastSeen: at}}}
		_, wantErr := json.Marshal(p)
		if _, err := p.AppendJSON(nil); err == nil || wantErr == nil {
			t.Errorf("event at %v: error %v (encoding/json: %v), want both to fail", at, err, wantErr)
		}
		for _, c := range []incident.Changes{{Since: at}, {At: at}, {Rollouts: []incident.Rollout{{At: at}}}, {Objects: []incident.ObjectChange{{At: at}}}} {
			p := NewPayload(crashNotification())
			p.Changes = &c
			_, wantErr := json.Marshal(p)
			if _, err := p.AppendJSON(nil); err == nil || wantErr == nil {
				t.Errorf("changes %+v: error %v (encoding/json: %v), want both to fail", c, err, wantErr)
			}
		}
	}
}

func crashNotification() incident.Notification {
	at := time.Date(2026, 11, 24, 9, 30, 0, 123456789, time.UTC)
	return incident.Notification{Transition: incident.Firing, Seq: 1, Time: at, Incident: incident.Incident{
		ID: "pod-crashloop/Pod/shop/api-7d9f/app", Fingerprint: "3f2a", Rule: "pod-crashloop", Severity: "critical",
		Reason: "CrashLoopBackOff", FirstSeen: at, Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "api-7d9f", UID: "u-1"},
		Container: "app", Title: "api-7d9f is crash-looping", Text: "container app exited 137 (OOMKilled) <5 times>",
		Facts: map[string]string{"restartCount": "5", "exitCode": "137", "node": "node-1"},
	}, Context: &incident.Context{
		Logs:   &incident.Logs{Container: "app", Previous: true, Lines: []string{"panic: out of memory", "goroutine 1 [running]:"}},
		Events: []incident.Event{{Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container", Count: 5, LastSeen: at}},
		Node:   &incident.Node{Name: "node-1", Conditions: []string{"MemoryPressure"}}, Hint: "exit 137: killed, often for memory",
	}, Changes: &incident.Changes{Workload: "Deployment/api", Since: at.Add(-30 * time.Minute), At: at,
		Rollouts: []incident.Rollout{{Revision: "7", At: at.Add(-4 * time.Minute), By: "argocd", Known: true,
			Items: []string{"image app: shop/api:1.8.2 → 1.9.0", "env DB_POOL changed"}}},
		Undo:  "kubectl rollout undo deployment/api -n shop --to-revision=6",
		Lines: []string{"Rolled out 4 min before (revision 7, by argocd): image app: shop/api:1.8.2 → 1.9.0; env DB_POOL changed"},
	}}
}

// BenchmarkPayloadJSON: one crash notification's payload, by reflection
// and by hand.
func BenchmarkPayloadJSON(b *testing.B) {
	p := NewPayload(crashNotification())
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.AppendJSON(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAppendJSONAwkward: payloads whose strings need escaping
// throughout (awkwardPayloads), into one reused buffer.
func BenchmarkAppendJSONAwkward(b *testing.B) {
	payloads := awkwardPayloads(2, 64)
	b.ReportAllocs()
	var buf []byte
	var err error
	for i := 0; b.Loop(); i++ {
		if buf, err = payloads[i%len(payloads)].AppendJSON(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzAppendStringIsEncodingJSON: any string, invalid UTF-8 included, is
// written with exactly json.Marshal's bytes, after what b already holds.
func FuzzAppendStringIsEncodingJSON(f *testing.F) {
	for _, s := range awkward {
		f.Add(s)
	}
	f.Add(strings.Join(awkward, ""))
	f.Add("container app exited 137 (OOMKilled) <5 times>")
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got := appendString([]byte("x:"), s)
		if string(got[:2]) != "x:" || !bytes.Equal(got[2:], want) {
			t.Fatalf("appendString(%q):\n got %s\nwant x:%s", s, got, want)
		}
	})
}

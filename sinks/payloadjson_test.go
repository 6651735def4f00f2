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

func awkwardPayloads(seed int64, n int) []Payload {
	zones := []*time.Location{time.UTC, time.FixedZone("", 5*3600+30*60), time.FixedZone("", -7*3600), time.FixedZone("", 30)}
	f := randfill.NewWithSeed(seed).NilChance(0.25).NumElements(0, 4).MaxDepth(4).Funcs(
		func(s *string, c randfill.Continue) {
			var b strings.Builder
			for range c.Intn(12) {
				b.WriteString(awkward[c.Intn(len(awkward))])
			}
			*s = b.String()
		},
		func(t *time.Time, c randfill.Continue) {
			*t = time.Unix(c.Int63n(253402300799), c.Int63n(1e9)).In(zones[c.Intn(len(zones))])
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
		Payload{Context: &incident.Context{Logs: &incident.Logs{}}}, Payload{Context: &incident.Context{Logs: &incident.Logs{Lines: []string{}}}})
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

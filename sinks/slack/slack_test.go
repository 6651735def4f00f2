package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/sinks"
)

var update = flag.Bool("update", false, "rewrite golden files")

// refs is an in-memory RefStore.
type refs struct {
	mu sync.Mutex
	m  map[string]string
}

func (r *refs) Ref(id, sink string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[id+"/"+sink]
}

func (r *refs) SetRef(id, sink, ref string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[id+"/"+sink] = ref
}

var t0 = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

func note(tr incident.Transition, seq int, restarts string) incident.Notification {
	return incident.Notification{
		Incident: incident.Incident{
			ID: "7f8a9eef0a8223dc-mwr47vly", Fingerprint: "7f8a9eef0a8223dc", Rule: "pod-crashloop", Severity: "critical", Reason: "CrashLoopBackOff",
			Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "checkout-7d9f8b6c5-x2x9q", UID: "u1"}, Container: "app",
			Facts: map[string]string{"restartCount": restarts, "exitCode": "1", "lastReason": "Error", "lastMessage": "panic: connect to db: <timeout> & retry"},
			Title: "CrashLoopBackOff: Pod shop/checkout-7d9f8b6c5-x2x9q container app",
			Text:  "CrashLoopBackOff: Pod shop/checkout-7d9f8b6c5-x2x9q container app: restarted " + restarts + " times, last exit code 1 (Error)",
			Sinks: []string{"slack"}, FirstSeen: t0,
		},
		Transition: tr, Seq: seq, Time: t0.Add(time.Duration(seq) * time.Minute),
	}
}

// TestRenderGolden renders every kind of notification (the samples all
// sinks share) to testdata/messages/<kind>.golden.json: the blocks, the
// push text and the thread note, as Slack gets them (with buttons for the
// samples of a Slack app with Socket Mode).
func TestRenderGolden(t *testing.T) {
	for _, s := range oncalltest.Samples() {
		t.Run(s.Name, func(t *testing.T) {
			var msg Message
			thread := ""
			if s.Note.Transition == incident.Digest {
				msg = RenderStartup(s.Note, oncalltest.SampleCluster)
			} else {
				msg = RenderWith(s.Note, s.Now, RenderOptions{Cluster: oncalltest.SampleCluster, Buttons: s.Buttons})
			}
			if s.Note.Transition != incident.Firing && s.Note.Transition != incident.Digest {
				thread = ThreadNote(s.Note, s.Now) // a later change: the first message is edited, the thread told
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // readable: the file is the design
			enc.SetIndent("", "  ")
			if err := enc.Encode(map[string]any{"text": msg.Text, "blocks": msg.Blocks, "metadata": msg.Metadata, "threadNote": thread}); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "testdata/messages/"+s.Name+".golden.json", buf.Bytes())
		})
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", path, got)
	}
}

// TestMentions: the incident's Slack IDs become mentions on a firing and
// a repeat, never on the others, and a value that is not an ID never
// becomes markup.
func TestMentions(t *testing.T) {
	n := note(incident.Firing, 1, "5")
	n.Incident.Mentions = []string{"S0TEAM", "U0ALICE", "W0BOB", "!channel", "U0X|evil", "<@U1>"}
	if got := mentions(n); got != "<!subteam^S0TEAM> <@U0ALICE> <@W0BOB>" {
		t.Errorf("firing mentions %q", got)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(Render(n, "", t0).Blocks)
	if msg := buf.String(); !strings.Contains(msg, "<!subteam^S0TEAM> <@U0ALICE> <@W0BOB>") || strings.Contains(msg, "channel") || strings.Contains(msg, "evil") {
		t.Errorf("rendered blocks: %s", buf.String())
	}
	for _, tr := range []incident.Transition{incident.Updated, incident.Resolved, incident.Silenced} {
		n.Transition = tr
		if got := mentions(n); got != "" {
			t.Errorf("%s mentions %q, want none", tr, got)
		}
	}
	n.Transition = incident.Repeat
	if note := ThreadNote(n, t0); !strings.HasSuffix(note, "\n<!subteam^S0TEAM> <@U0ALICE> <@W0BOB>") {
		t.Errorf("a repeat's thread note %q does not mention (its edit of the message notifies no one)", note)
	}
}

func TestRenderStaysWithinSlackLimits(t *testing.T) {
	n := note(incident.Firing, 1, "5")
	n.Incident.Title = strings.Repeat("T", 1000)
	n.Incident.Text = strings.Repeat("x", 10000)
	n.Incident.Facts["lastMessage"] = strings.Repeat("m", 10000)
	msg := Render(n, "", t0)
	raw, _ := json.Marshal(msg.Blocks)
	var blocks []struct {
		Type   string                  `json:"type"`
		Text   *struct{ Text string }  `json:"text"`
		Fields []struct{ Text string } `json:"fields"`
	}
	json.Unmarshal(raw, &blocks)
	for _, b := range blocks {
		limit := maxSection
		if b.Type == "header" {
			limit = maxHeader
		}
		if b.Text != nil && len([]rune(b.Text.Text)) > limit {
			t.Errorf("%s block of %d characters", b.Type, len([]rune(b.Text.Text)))
		}
		if b.Text != nil && len([]rune(b.Text.Text)) == limit && !strings.HasSuffix(b.Text.Text, truncMarker) {
			t.Errorf("cut %s block without a marker", b.Type)
		}
	}
	many := make([]incident.Notification, 5000)
	for i := range many {
		many[i] = note(incident.Firing, i+1, "1")
	}
	d := RenderDigest(many, "")
	if len(d.Blocks) > maxBlocks {
		t.Errorf("digest of 5000: %d blocks", len(d.Blocks))
	}
	if ids := d.Metadata.EventPayload["ids"].([]any); len(ids) != 5000 {
		t.Errorf("digest metadata names %d notifications", len(ids))
	}
}

func TestUpdateInPlaceAndThread(t *testing.T) {
	api := newFakeSlack(t)
	store := &refs{m: map[string]string{}}
	s := New(Options{Name: "slack", Token: "xoxb-test-token", Channel: "#alerts", APIURL: api.URL, Refs: store})
	ctx := context.Background()
	for _, n := range []incident.Notification{note(incident.Firing, 1, "3"), note(incident.Updated, 2, "8"), note(incident.Resolved, 3, "8")} {
		if err := s.Send(ctx, n); err != nil {
			t.Fatalf("%s: %v", n.Transition, err)
		}
	}
	calls := api.snapshot()
	want := []struct{ method, ts, thread string }{
		{"chat.postMessage", "", ""},
		{"chat.update", "1763769600.000001", ""},
		{"chat.postMessage", "", "1763769600.000001"},
		{"chat.update", "1763769600.000001", ""},
		{"chat.postMessage", "", "1763769600.000001"},
	}
	if len(calls) != len(want) {
		t.Fatalf("%d calls, want %d: %+v", len(calls), len(want), calls)
	}
	for i, w := range want {
		c := calls[i]
		if c.Method != w.method || c.TS != w.ts || c.ThreadTS != w.thread {
			t.Errorf("call %d: %s ts=%q thread=%q, want %s ts=%q thread=%q", i, c.Method, c.TS, c.ThreadTS, w.method, w.ts, w.thread)
		}
	}
	if calls[0].Channel != "#alerts" || calls[1].Channel != "C024BE91L" {
		t.Errorf("channels: post to %q, update in %q", calls[0].Channel, calls[1].Channel)
	}
	if !strings.Contains(calls[3].Text, "shop/checkout-7d9f8b6c5-x2x9q: resolved after") || !strings.Contains(calls[4].Text, "Resolved after") {
		t.Errorf("resolved texts: %q / %q", calls[3].Text, calls[4].Text)
	}
}

// TestSilencedEditsInPlace: a silence covering an announced incident
// edits its message to say so, and says it in the thread.
func TestSilencedEditsInPlace(t *testing.T) {
	api := newFakeSlack(t)
	s := New(Options{Name: "slack", Token: "xoxb-test-token", Channel: "#alerts", APIURL: api.URL, Refs: &refs{m: map[string]string{}}})
	silenced := note(incident.Silenced, 2, "3")
	silenced.Change = "silenced until 2026-11-22 02:00 UTC (silence shop/deploy-checkout)"
	for _, n := range []incident.Notification{note(incident.Firing, 1, "3"), silenced} {
		if err := s.Send(context.Background(), n); err != nil {
			t.Fatalf("%s: %v", n.Transition, err)
		}
	}
	calls := api.snapshot()
	if len(calls) != 3 || calls[1].Method != "chat.update" || calls[2].ThreadTS == "" {
		t.Fatalf("calls %+v, want post, update, thread reply", calls)
	}
	if !strings.Contains(calls[1].Text, "CrashLoopBackOff, muted") || calls[2].Text != ":mute: Muted: silenced until 2026-11-22 02:00 UTC (silence shop/deploy-checkout)." {
		t.Errorf("edited text %q, thread %q", calls[1].Text, calls[2].Text)
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestRetryAfterIsHonoured: a 429 with Retry-After: 2 makes the dispatcher
// wait at least 2 s, then the message goes through.
func TestRetryAfterIsHonoured(t *testing.T) {
	api := newFakeSlack(t)
	api.rateLimited, api.retryAfter = 1, "2"
	s := New(Options{Name: "slack", Token: "xoxb-test-token", Channel: "#alerts", APIURL: api.URL, Refs: &refs{m: map[string]string{}}})
	d := sinks.NewDispatcher(quietLogger(), nil, sinks.LaneOptions{Sink: s, RateLimit: 1})
	delivered := make(chan time.Time, 1)
	d.OnDelivered(func(incident.Notification, string) { delivered <- time.Now() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	start := time.Now()
	if err := d.Dispatch(ctx, note(incident.Firing, 1, "3")); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-delivered:
		if waited := at.Sub(start); waited < 2*time.Second {
			t.Errorf("delivered after %s, before the 2s Retry-After", waited)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("not delivered")
	}
	if calls := api.snapshot(); len(calls) != 1 {
		t.Errorf("%d messages posted, want 1", len(calls))
	}
}

// TestStormIsRateLimitedAndComplete: 600 notifications to one channel go
// out at no more than one request per second, combined into digests, and
// every one of them is in some message.
func TestStormIsRateLimitedAndComplete(t *testing.T) {
	api := newFakeSlack(t)
	s := New(Options{Name: "slack", Token: "xoxb-test-token", Channel: "#alerts", APIURL: api.URL, Refs: &refs{m: map[string]string{}}})
	d := sinks.NewDispatcher(quietLogger(), nil, sinks.LaneOptions{Sink: s, RateLimit: 1, QueueSize: 1000})
	var mu sync.Mutex
	accepted := 0
	first, all := make(chan struct{}), make(chan struct{})
	d.OnDelivered(func(incident.Notification, string) {
		mu.Lock()
		defer mu.Unlock()
		switch accepted++; accepted {
		case 1:
			close(first)
		case 600:
			close(all)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	for i := range 600 {
		n := note(incident.Firing, 1, "1")
		n.Incident.ID = fmt.Sprintf("storm%03d-x", i)
		n.Incident.Title = fmt.Sprintf("CrashLoopBackOff: Pod shop/p-%03d", i)
		if err := d.Dispatch(ctx, n); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// The first goes out alone, as in a storm's first second;
			// the other 599 are queued while the lane waits its second.
			// (Queued while the first was being sent, their Dispatch
			// calls held the first request back on a busy machine, and
			// the next, on time, came 880 ms after it.)
			select {
			case <-first:
			case <-time.After(15 * time.Second):
				t.Fatal("the first notification was not delivered")
			}
		}
	}
	select {
	case <-all:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d of 600 delivered", accepted)
	}
	calls := api.snapshot()
	seen := map[string]bool{}
	for i, c := range calls {
		if i > 0 {
			if gap := c.At.Sub(calls[i-1].At); gap < 900*time.Millisecond {
				t.Errorf("requests %d and %d only %s apart", i-1, i, gap)
			}
		}
		for _, id := range c.Metadata.EventPayload["ids"].([]any) {
			if seen[id.(string)] {
				t.Errorf("%s sent twice", id)
			}
			seen[id.(string)] = true
		}
	}
	if len(seen) != 600 {
		t.Errorf("%d notifications represented in %d messages, want 600", len(seen), len(calls))
	}
	t.Logf("600 notifications in %d messages over %s", len(calls), calls[len(calls)-1].At.Sub(calls[0].At).Round(time.Millisecond))
}

// TestPacedStormInSlack: a workload's ten pods crash within seconds. With
// the tracker's update pacing, Slack gets one message, one edit and one
// thread note saying what changed (it was 1 message, 9 edits and 9 notes).
func TestPacedStormInSlack(t *testing.T) {
	api := newFakeSlack(t)
	clock := t0
	tracker := incident.NewTracker(incident.Options{Now: func() time.Time { return clock }})
	s := New(Options{Name: "slack", Token: "xoxb-test-token", Channel: "#alerts", APIURL: api.URL, Refs: tracker})
	send := func(notes []incident.Notification) {
		for _, n := range notes {
			if err := s.Send(context.Background(), n); err != nil {
				t.Fatal(err)
			}
		}
	}
	group := &rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "api"}
	for i := range 10 {
		pod := fmt.Sprintf("api-5d8f-%d", i)
		f := rules.Finding{Rule: "pod-crashloop", Reason: "CrashLoopBackOff", Severity: "critical", Container: "app",
			Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: pod, UID: "uid-" + pod}, Facts: map[string]string{"restartCount": "2"},
			Sinks: []string{"slack"}, GroupByWorkload: true, Group: group, GroupTotal: 10, UpdateInterval: 30 * time.Second}
		notes, _ := tracker.Reconcile("Pod/shop/"+pod, []rules.Finding{f})
		send(notes)
		clock = clock.Add(500 * time.Millisecond)
	}
	clock = t0.Add(30 * time.Second)
	send(tracker.ReleaseHeld(clock))
	calls := api.snapshot()
	if len(calls) != 3 || calls[0].Method != "chat.postMessage" || calls[1].Method != "chat.update" || calls[2].ThreadTS == "" {
		t.Fatalf("%d calls, want a post, an edit and a thread note: %+v", len(calls), calls)
	}
	if !strings.Contains(calls[2].Text, "1 → 10 of 10 pods") || !strings.Contains(string(calls[1].Blocks), "10/10 pods") {
		t.Errorf("the edit and note do not say what changed: %q / %s", calls[2].Text, calls[1].Blocks)
	}
}

package actions

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
)

// memSilences keeps Silences in memory as the API server would: a second
// create of one name fails as AlreadyExists.
type memSilences struct {
	mu   sync.Mutex
	objs map[string]*unstructured.Unstructured
}

var silenceGR = schema.GroupResource{Group: "herald.io", Resource: "silences"}

func (m *memSilences) Create(_ context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := obj.GetNamespace() + "/" + obj.GetName()
	if m.objs[key] != nil {
		return nil, apierrors.NewAlreadyExists(silenceGR, obj.GetName())
	}
	m.objs[key] = obj.DeepCopy()
	return obj, nil
}

func (m *memSilences) Get(_ context.Context, ns, name string) (*unstructured.Unstructured, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o := m.objs[ns+"/"+name]; o != nil {
		return o.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(silenceGR, name)
}

func (m *memSilences) List(_ context.Context, ns string, labels map[string]string) ([]unstructured.Unstructured, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []unstructured.Unstructured
	for _, o := range m.objs {
		if o.GetNamespace() != ns {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && o.GetLabels()[k] == v
		}
		if match {
			out = append(out, *o.DeepCopy())
		}
	}
	return out, nil
}

func (m *memSilences) Delete(_ context.Context, ns, name string, uid types.UID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.objs[ns+"/"+name]
	if o == nil {
		return apierrors.NewNotFound(silenceGR, name)
	}
	if o.GetUID() != uid {
		return apierrors.NewConflict(silenceGR, name, nil)
	}
	delete(m.objs, ns+"/"+name)
	return nil
}

// setup is a tracker with one firing incident and an Executor on it.
type setup struct {
	tracker  *incident.Tracker
	silences *memSilences
	x        *Executor
	id       string
	sent     []incident.Notification
}

func newSetup(t *testing.T, namespace string) *setup {
	s := &setup{silences: &memSilences{objs: map[string]*unstructured.Unstructured{}}}
	s.tracker = incident.NewTracker(incident.Options{})
	f := rules.Finding{Rule: "crash", Reason: "CrashLoopBackOff", Severity: "critical", Container: "app", Sinks: []string{"slack"},
		Object: rules.ObjectRef{Kind: "Pod", Namespace: namespace, Name: "web", UID: "u1"}, Facts: map[string]string{"restartCount": "3"}}
	key := "Pod/" + namespace + "/web"
	if namespace == "" {
		f.Object.Kind, key = "Node", "Node/web"
	}
	notes, _ := s.tracker.Reconcile(key, []rules.Finding{f})
	if len(notes) != 1 {
		t.Fatalf("no firing: %+v", notes)
	}
	s.id = notes[0].Incident.ID
	s.x = New(Options{Incidents: s.tracker, Silences: s.silences, Logger: slog.New(slog.DiscardHandler),
		Dispatch: func(_ context.Context, n incident.Notification) error { s.sent = append(s.sent, n); return nil }})
	return s
}

var ana = Actor{Via: "slack", ID: "U0ANA1", Name: "ana"}

// TestSilencePress: a press creates one Silence named from the press, of
// this incident's object and rule in its namespace; the same press again
// is quiet; a press on a muted incident makes no second Silence; an
// incident without a namespace is not silenced from Slack.
func TestSilencePress(t *testing.T) {
	s := newSetup(t, "shop")
	p := Press{Key: "U0ANA1/1700000000.1/herald_silence_1h", Kind: Silence1h, IncidentID: s.id, Actor: ana}
	res := s.x.Do(context.Background(), p)
	if res.Outcome != Done || len(s.silences.objs) != 1 {
		t.Fatalf("first press: %+v, %d silences", res, len(s.silences.objs))
	}
	obj := s.silences.objs["shop/"+SilenceName(p.Key)]
	if obj == nil || obj.GetLabels()[LabelIncident] != s.id || obj.GetLabels()[LabelCreatedVia] != "slack" {
		t.Fatalf("silence %v", obj)
	}
	spec := obj.Object["spec"].(map[string]any)
	if spec["createdBy"] != "slack:U0ANA1 (ana)" || !strings.Contains(spec["comment"].(string), "for 1 h") {
		t.Errorf("spec %v", spec)
	}
	if again := s.x.Do(context.Background(), p); again.Outcome != Already || !again.Quiet {
		t.Errorf("the same press again: %+v, want quiet", again)
	}

	// Another press before the mute takes effect: the first press's
	// silence is found, and none is added.
	if res := s.x.Do(context.Background(), Press{Key: "U0BOB1/1700000001.2/herald_silence_4h", Kind: Silence4h, IncidentID: s.id, Actor: ana}); res.Outcome != Already || len(s.silences.objs) != 1 {
		t.Errorf("a second press before the mute: %+v, %d silences", res, len(s.silences.objs))
	}

	// Muted now (as the muter would record it): another press is
	// refused as done, and creates nothing.
	mutedTracker := incident.NewTracker(incident.Options{Muter: muteAll{}})
	f := rules.Finding{Rule: "crash", Reason: "CrashLoopBackOff", Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web", UID: "u1"}}
	mutedTracker.Reconcile("Pod/shop/web", []rules.Finding{f})
	inc := mutedIncident(t, mutedTracker)
	x := New(Options{Incidents: mutedTracker, Silences: s.silences, Logger: slog.New(slog.DiscardHandler)})
	before := len(s.silences.objs)
	if res := x.Do(context.Background(), Press{Key: "other", Kind: Silence4h, IncidentID: inc.ID, Actor: ana}); res.Outcome != Already || res.Quiet || len(s.silences.objs) != before {
		t.Errorf("a press on a muted incident: %+v, %d silences (was %d)", res, len(s.silences.objs), before)
	}

	node := newSetup(t, "")
	if res := node.x.Do(context.Background(), Press{Key: "k", Kind: Silence1h, IncidentID: node.id, Actor: ana}); res.Outcome != Refused || len(node.silences.objs) != 0 {
		t.Errorf("a node's incident: %+v", res)
	}
}

// TestUntilResolved: the silence names the incident, so it mutes this
// occurrence only, and lasts at most silences.maxDuration.
func TestUntilResolved(t *testing.T) {
	s := newSetup(t, "shop")
	s.x.opts.MaxSilence = 48 * time.Hour
	p := Press{Key: "k", Kind: SilenceResolved, IncidentID: s.id, Actor: ana}
	if res := s.x.Do(context.Background(), p); res.Outcome != Done {
		t.Fatal(res)
	}
	spec := s.silences.objs["shop/"+SilenceName("k")].Object["spec"].(map[string]any)
	m := spec["matchers"].(map[string]any)
	start, _ := time.Parse(time.RFC3339, spec["startsAt"].(string))
	end, _ := time.Parse(time.RFC3339, spec["endsAt"].(string))
	if m["incident"] != s.id || end.Sub(start) != 48*time.Hour {
		t.Errorf("matchers %v, %s long", m, end.Sub(start))
	}
}

// TestUnsilenceEndsOnlyAButtonsSilence: Unsilence deletes the silence a
// button made, and refuses one written by hand.
func TestUnsilenceEndsOnlyAButtonsSilence(t *testing.T) {
	for _, tc := range []struct {
		name, via string
		want      Outcome
		left      int
	}{{"made from Slack", "slack", Done, 0}, {"written by hand", "", Refused, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			tracker := incident.NewTracker(incident.Options{Muter: muteAll{}})
			tracker.Reconcile("Pod/shop/web", []rules.Finding{{Rule: "crash", Reason: "CrashLoopBackOff", Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web", UID: "u1"}}})
			inc := mutedIncident(t, tracker)
			sil := &memSilences{objs: map[string]*unstructured.Unstructured{}}
			obj := &unstructured.Unstructured{Object: map[string]any{}}
			obj.SetNamespace("shop")
			obj.SetName("maint")
			if tc.via != "" {
				obj.SetLabels(map[string]string{LabelCreatedVia: tc.via, LabelIncident: inc.ID})
			}
			sil.objs["shop/maint"] = obj
			x := New(Options{Incidents: tracker, Silences: sil, Logger: slog.New(slog.DiscardHandler)})
			res := x.Do(context.Background(), Press{Key: "k", Kind: Unsilence, IncidentID: inc.ID, Actor: ana})
			if res.Outcome != tc.want || len(sil.objs) != tc.left {
				t.Errorf("%+v, %d silences left", res, len(sil.objs))
			}
		})
	}
}

// TestAcknowledgePress: recorded once and sent; the same press again is
// quiet; another person's is told who did.
func TestAcknowledgePress(t *testing.T) {
	s := newSetup(t, "shop")
	p := Press{Key: "k1", Kind: Acknowledge, IncidentID: s.id, Actor: ana}
	if res := s.x.Do(context.Background(), p); res.Outcome != Done || len(s.sent) != 1 || s.sent[0].Transition != incident.Acknowledged {
		t.Fatalf("%+v, sent %+v", res, s.sent)
	}
	if res := s.x.Do(context.Background(), p); res.Outcome != Already || !res.Quiet {
		t.Errorf("again: %+v", res)
	}
	bob := Press{Key: "k2", Kind: Acknowledge, IncidentID: s.id, Actor: Actor{Via: "slack", ID: "U0BOB1", Name: "bob"}}
	if res := s.x.Do(context.Background(), bob); res.Outcome != Already || res.Quiet || !strings.Contains(res.Say, "by ana") {
		t.Errorf("bob: %+v", res)
	}
	if len(s.sent) != 1 {
		t.Errorf("%d notifications, want 1", len(s.sent))
	}
}

// muteAll mutes every incident by one silence, as the Muter would when a
// Silence shop/maint matched.
type muteAll struct{}

func (muteAll) Mute(*incident.Incident, incident.Open, time.Time) (incident.Mute, bool) {
	return incident.Mute{By: "silence shop/maint", Until: time.Now().Add(time.Hour)}, true
}

func mutedIncident(t *testing.T, tr *incident.Tracker) incident.Incident {
	t.Helper()
	for _, n := range tr.Undelivered() {
		return n.Incident
	}
	snap, _ := tr.Snapshot()
	for _, inc := range snap {
		if inc.MutedBy != "" {
			return inc
		}
	}
	t.Fatal("no muted incident")
	return incident.Incident{}
}

// meetingSilences lets two Lists meet: each waits (a while at most) for
// another, so that two presses at once both read before either creates.
type meetingSilences struct {
	*memSilences
	arrived chan struct{}
}

func (m meetingSilences) List(ctx context.Context, ns string, labels map[string]string) ([]unstructured.Unstructured, error) {
	select {
	case m.arrived <- struct{}{}:
	case <-m.arrived:
	case <-time.After(2 * time.Second): // alone: the other press waits its turn
	}
	return m.memSilences.List(ctx, ns, labels)
}

// TestTwoPeoplePressSilenceAtOnce: two people press Silence on one
// incident at the same moment: one Silence is made, the other press is
// told it is silenced already.
func TestTwoPeoplePressSilenceAtOnce(t *testing.T) {
	s := newSetup(t, "shop")
	x := New(Options{Incidents: s.tracker, Silences: meetingSilences{s.silences, make(chan struct{})}, Logger: slog.New(slog.DiscardHandler),
		Dispatch: func(context.Context, incident.Notification) error { return nil }})
	bob := Actor{Via: "slack", ID: "U0BOB1", Name: "bob"}
	var wg sync.WaitGroup
	results := make([]Result, 2)
	for i, who := range []Actor{ana, bob} {
		wg.Go(func() {
			results[i] = x.Do(context.Background(), Press{Key: who.ID + "/1700000000.1/herald_silence_1h", Kind: Silence1h, IncidentID: s.id, Actor: who})
		})
	}
	wg.Wait()
	s.silences.mu.Lock()
	n := len(s.silences.objs)
	s.silences.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d Silences for one incident pressed twice at once: %+v", n, results)
	}
	outcomes := []Outcome{results[0].Outcome, results[1].Outcome}
	if !slices.Contains(outcomes, Done) || !slices.Contains(outcomes, Already) {
		t.Errorf("outcomes %v, want one done and one already", outcomes)
	}
}

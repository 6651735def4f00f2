package silence

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

// cached is a cache of objects by key.
type cached map[watcher.Key]runtime.Object

func (c cached) Meta(key watcher.Key) (metav1.Object, bool, error) {
	obj, ok := c[key].(metav1.Object)
	return obj, ok, nil
}

func (c cached) PodNodeName(namespace, name string) string {
	if pod, ok := c[watcher.Key{Kind: "Pod", Namespace: namespace, Name: name}].(*corev1.Pod); ok {
		return pod.Spec.NodeName
	}
	return ""
}

func (cached) NamespaceAnnotation(string, string) string { return "" }

func annotatedPod(ns, name, node, until string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{NodeName: node}}
	if until != "" {
		p.Annotations = map[string]string{Annotation: until}
	}
	return p
}

func podIncident(ns, name string) *incident.Incident {
	return &incident.Incident{ID: ns + "/" + name, Fingerprint: ns + "/" + name, Rule: "pod-crashloop", Reason: "CrashLoopBackOff", Severity: "critical",
		Object: rules.ObjectRef{Kind: "Pod", Namespace: ns, Name: name}, Members: []string{"Pod/" + ns + "/" + name}}
}

// TestAnnotationCapped: a silence-until annotation mutes at most
// silences.maxDuration (30 days) from when herald first saw its value,
// and says so; the cap holds across a restart (through the mute the
// ledger keeps) and a new value starts a new one.
func TestAnnotationCapped(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	decade := t0.AddDate(10, 0, 0).Format(time.RFC3339)
	objects := cached{
		{Kind: "Pod", Namespace: "shop", Name: "api-0"}: annotatedPod("shop", "api-0", "", decade),
		{Kind: "Pod", Namespace: "shop", Name: "api-1"}: annotatedPod("shop", "api-1", "", t0.Add(2*time.Hour).Format(time.RFC3339)),
	}
	m := NewMuter("herald", slog.New(slog.DiscardHandler))
	if _, err := m.Watch(objects); err != nil {
		t.Fatal(err)
	}
	inc := podIncident("shop", "api-0")
	wantBy := "annotation herald.io/silence-until on Pod/shop/api-0; it asks until " + decade + ", capped at 30 days"
	mute, ok := m.Mute(inc, noIncidents, t0)
	if !ok || !mute.Until.Equal(t0.Add(30*24*time.Hour)) || mute.By != wantBy {
		t.Fatalf("10 years out: muted %v by %q until %s; want %q until %s", ok, mute.By, mute.Until, wantBy, t0.Add(30*24*time.Hour))
	}
	if got := mute.String(); got != "silenced until 2026-12-23 10:00 UTC ("+wantBy+")" {
		t.Errorf("said as %q", got)
	}
	inc.MutedBy, inc.MutedUntil = mute.By, mute.Until
	if later, _ := m.Mute(inc, noIncidents, t0.Add(10*24*time.Hour)); !later.Until.Equal(mute.Until) {
		t.Errorf("10 days on: until %s; the cap must count from when herald first saw it, %s", later.Until, mute.Until)
	}
	if other, _ := m.Mute(podIncident("shop", "api-0"), noIncidents, t0.Add(10*24*time.Hour)); !other.Until.Equal(mute.Until) {
		t.Errorf("another incident of the object 10 days on: until %s, want %s", other.Until, mute.Until)
	}
	if _, ok := m.Mute(inc, noIncidents, t0.Add(30*24*time.Hour)); ok {
		t.Error("still muted 30 days on")
	}

	// A restart (a new Muter) mid-mute: the incident's recorded mute
	// keeps the end.
	restarted := NewMuter("herald", slog.New(slog.DiscardHandler))
	restarted.Watch(objects)
	if again, _ := restarted.Mute(inc, noIncidents, t0.Add(20*24*time.Hour)); !again.Until.Equal(mute.Until) || again.By != wantBy {
		t.Errorf("after a restart 20 days on: %q until %s, want the first end %s", again.By, again.Until, mute.Until)
	}

	// Within the cap: the annotation's own time, said plainly.
	if short, _ := m.Mute(podIncident("shop", "api-1"), noIncidents, t0); !short.Until.Equal(t0.Add(2*time.Hour)) ||
		short.By != "annotation herald.io/silence-until on Pod/shop/api-1" {
		t.Errorf("2 hours out: %q until %s", short.By, short.Until)
	}

	// A new value is a new annotation (renewed).
	renewed := t0.AddDate(5, 0, 0).Format(time.RFC3339)
	objects[watcher.Key{Kind: "Pod", Namespace: "shop", Name: "api-0"}] = annotatedPod("shop", "api-0", "", renewed)
	at := t0.Add(31 * 24 * time.Hour)
	if r, ok := m.Mute(podIncident("shop", "api-0"), noIncidents, at); !ok || !r.Until.Equal(at.Add(30*24*time.Hour)) {
		t.Errorf("renewed with a new value on day 31: muted %v until %s, want %s", ok, r.Until, at.Add(30*24*time.Hour))
	}

	// silences.maxDuration sets the cap, for annotations and Silences.
	cfg, err := config.Parse("herald.yaml", []byte("silences: {maxDuration: 72h}\nrules: [{name: r, kind: Pod, detector: crashloop, sinks: [h]}]\nsinks: [{name: h, webhook: {url: 'http://x'}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	short := NewMuter("herald", slog.New(slog.DiscardHandler))
	short.Configure(cfg)
	short.Watch(objects)
	if s, _ := short.Mute(podIncident("shop", "api-0"), noIncidents, t0); !s.Until.Equal(t0.Add(72*time.Hour)) || !strings.HasSuffix(s.By, "capped at 3 days") {
		t.Errorf("maxDuration 72h: %q until %s", s.By, s.Until)
	}
}

// TestAnnotatedNodeDoesNotInhibit: a NotReady node's incident mutes the
// incidents of the pods on it, unless an annotation mutes the node's
// own incident (a node's kubelet may annotate its Node): then the pods'
// alerts go out as usual. A node muted by a ClusterSilence still
// inhibits.
func TestAnnotatedNodeDoesNotInhibit(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	objects := cached{
		{Kind: "Pod", Namespace: "shop", Name: "api-0"}: annotatedPod("shop", "api-0", "n1", ""),
		{Kind: "Node", Name: "n1"}:                      &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
	}
	m := NewMuter("herald", slog.New(slog.DiscardHandler))
	m.Configure(&config.Config{})
	m.Watch(objects)
	node := &incident.Incident{ID: "node", Fingerprint: "node", Rule: "node-not-ready", Reason: "NodeNotReady", Severity: "critical",
		Object: rules.ObjectRef{Kind: "Node", Name: "n1"}}
	open := openSet{all: map[string]*incident.Incident{"node": node}, byReason: map[string]map[string]*incident.Incident{"NodeNotReady": {"node": node}}}
	pod := podIncident("shop", "api-0")
	if mute, ok := m.Mute(pod, open, now); !ok || mute.Source != "node" {
		t.Fatalf("a pod on a NotReady node: muted %v by %q; want inhibited by the node", ok, mute.By)
	}
	objects[watcher.Key{Kind: "Node", Name: "n1"}] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Annotations: map[string]string{Annotation: now.AddDate(1, 0, 0).Format(time.RFC3339)}}}
	if mute, ok := m.Mute(node, open, now); !ok || !strings.Contains(mute.By, "on Node/n1") {
		t.Errorf("the annotated node's own incident: muted %v by %q", ok, mute.By)
	}
	if mute, ok := m.Mute(pod, open, now); ok {
		t.Errorf("a pod on a NotReady node muted by its own annotation: muted by %q; want its alert to go out", mute.By)
	}
	// Once the annotation's cap ends, the node inhibits again.
	if mute, ok := m.Mute(pod, open, now.Add(31*24*time.Hour)); !ok || mute.Source != "node" {
		t.Errorf("after the node's annotation ended: muted %v by %q; want inhibited by the node", ok, mute.By)
	}
	// A node a ClusterSilence mutes (an operator's choice) still inhibits.
	objects[watcher.Key{Kind: "Node", Name: "n1"}] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	m.put(clusterSilenceObject("nodes", map[string]any{"matchers": map[string]any{"kind": "Node"}, "startsAt": now.Format(time.RFC3339),
		"endsAt": now.Add(time.Hour).Format(time.RFC3339)}))
	if mute, ok := m.Mute(node, open, now); !ok || mute.By != "clustersilence nodes" {
		t.Errorf("the node under a ClusterSilence: muted %v by %q", ok, mute.By)
	}
	node.MutedBy = "clustersilence nodes"
	if mute, ok := m.Mute(pod, open, now); !ok || mute.Source != "node" {
		t.Errorf("a pod on a NotReady node a ClusterSilence mutes: muted %v by %q; want inhibited by the node", ok, mute.By)
	}
}

// TestScopeWarnings: a Silence in herald's namespace that used to mute
// every namespace, and one whose namespace matcher excludes its own
// namespace, are logged once per spec, saying what to do.
func TestScopeWarnings(t *testing.T) {
	var logs bytes.Buffer
	m := NewMuter("herald", slog.New(slog.NewTextHandler(&logs, nil)))
	spec := func(matchers map[string]any) map[string]any {
		return map[string]any{"matchers": matchers, "endsAt": "2026-11-23T12:00:00Z"}
	}
	legacy := silenceObject("herald", "everywhere", spec(map[string]any{"rule": "pod-crashloop"}))
	m.put(legacy)
	m.put(legacy) // a status write: no second warning
	m.put(silenceObject("herald", "team-d", spec(map[string]any{"namespace": "team-d"})))
	m.put(silenceObject("herald", "own", spec(map[string]any{"namespace": "herald", "rule": "x"})))
	m.put(silenceObject("shop", "elsewhere", spec(map[string]any{"namespace": "other"})))
	m.put(silenceObject("shop", "fine", spec(map[string]any{"workload": "api"})))
	m.put(clusterSilenceObject("wide", spec(map[string]any{"rule": "x"})))
	out := logs.String()
	for _, want := range []string{
		`level=WARN msg="a Silence in herald's own namespace no longer mutes other namespaces: it mutes only incidents in herald. To mute across namespaces, recreate it as a ClusterSilence (herald silence create --all-namespaces ..., with the clustersilences permission) and delete it; to keep it for herald alone, set spec.matchers.namespace: herald" silence=herald/everywhere matchers="rule=pod-crashloop"`,
		`silence=herald/team-d matchers="namespace=team-d"`,
		`level=WARN msg="a Silence mutes nothing: it mutes only incidents in its own namespace, and its namespace matcher excludes it; to mute other namespaces, use a ClusterSilence" silence=shop/elsewhere`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %s in\n%s", want, out)
		}
	}
	if n := strings.Count(out, "level=WARN"); n != 3 {
		t.Errorf("%d warnings, want 3 (herald/everywhere once, herald/team-d, shop/elsewhere):\n%s", n, out)
	}
}

// TestUnreadableAnnotationLogsLittle: an annotation that is not a time is
// written by whoever can annotate an object. Its log line shows a short
// typo of a date, never a long value or one with words in it (a pasted
// secret); and past 10,000 distinct bad values on distinct objects, it is
// logged at most once a minute, not once per value.
func TestUnreadableAnnotationLogsLittle(t *testing.T) {
	var logs bytes.Buffer
	objects := cached{
		{Kind: "Pod", Namespace: "shop", Name: "typo"}:   annotatedPod("shop", "typo", "", "2026-11-24 08:00"),
		{Kind: "Pod", Namespace: "shop", Name: "secret"}: annotatedPod("shop", "secret", "", "password=hunter2 "+strings.Repeat("x", 256<<10)),
	}
	m := NewMuter("herald", slog.New(slog.NewTextHandler(&logs, nil)))
	if _, err := m.Watch(objects); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for range 3 {
		m.Mute(podIncident("shop", "typo"), noIncidents, now)
		m.Mute(podIncident("shop", "secret"), noIncidents, now)
	}
	if !strings.Contains(logs.String(), `value="2026-11-24 08:00"`) {
		t.Errorf("the date typo is not shown:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "hunter2") || logs.Len() > 2000 {
		t.Errorf("the long value was logged (%d bytes of log):\n%.500s", logs.Len(), logs.String())
	}
	if n := strings.Count(logs.String(), "\n"); n != 2 {
		t.Errorf("%d log lines for two bad values read three times, want 2", n)
	}

	logs.Reset()
	for i := range maxAnchors + 5000 {
		key := watcher.Key{Kind: "Pod", Namespace: "shop", Name: "p" + strconv.Itoa(i)}
		objects[key] = annotatedPod("shop", key.Name, "", "soon"+strconv.Itoa(i))
		m.Mute(podIncident("shop", key.Name), noIncidents, now)
	}
	if n := strings.Count(logs.String(), "\n"); n > maxAnchors {
		t.Errorf("%d log lines for %d bad values, want at most %d (then one a minute)", n, maxAnchors+5000, maxAnchors)
	}
}

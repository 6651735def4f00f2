package rules

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/herald-k8s/herald/internal/termsafe"
)

// TestHostileObjects: objects a cluster can hold but nobody plans for —
// a 1 MiB annotation and termination message, bidi controls, NULs, BOMs,
// emoji and invalid UTF-8 in names and messages, no status at all, a
// custom resource nested 300 levels deep — evaluate without a panic, and
// every title, text and fact stays bounded and valid UTF-8.
func TestHostileObjects(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	odd := "\u202egnp.exe\u0000\ufeff😀\xff\xfe"
	crashing := func(name, msg string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: "u1", Annotations: map[string]string{"big": huge}},
			Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: odd, Message: msg, ContainerStatuses: []corev1.ContainerStatus{{
				Name: odd, RestartCount: 9,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: msg}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "OOMKilled", Message: msg}},
			}}},
		}
	}
	pods := compile(t, `
rules:
  - {name: crash, kind: Pod, detector: crashloop, sinks: [s]}
  - {name: oom, kind: Pod, detector: oomkilled, sinks: [s]}
  - {name: failed, kind: Pod, detector: pod-failed, sinks: [s]}
  - {name: ready, kind: Pod, detector: not-ready, sinks: [s]}
  - name: cel
    kind: Pod
    condition: 'object.metadata.annotations["big"].size() > 1000'
    message: {title: '{{ .Object.metadata.annotations.big }}', text: '{{ .Object.metadata.name }} {{ .Facts }}'}
    sinks: [s]
sinks: [{name: s, stdout: {}}]
`)
	objs := map[string]*corev1.Pod{
		"huge message":  crashing("huge", huge),
		"odd unicode":   crashing("pod-"+odd, odd+odd),
		"invalid utf-8": crashing("bad\xff", "\xc3\x28\xa0\xa1"),
		"no status":     {ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "shop", UID: "u2"}},
	}
	for name, pod := range objs {
		t.Run(name, func(t *testing.T) {
			found, errs := pods.Evaluate("Pod", pod, now, nil)
			if name != "no status" && len(found) < 3 {
				t.Errorf("%d findings (errors %v); the hostile pod is still a broken pod", len(found), errs)
			}
			for _, f := range found {
				checkBounded(t, f)
			}
		})
	}

	// A custom resource nested 300 levels deep, read by CEL.
	deep := map[string]any{"leaf": "x"}
	for range 300 {
		deep = map[string]any{"child": deep}
	}
	cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": odd, "namespace": "shop", "uid": "u3"}, "spec": deep}}
	widgets := compile(t, `
rules:
  - name: deep
    kind: Widget
    apiVersion: example.com/v1
    condition: 'has(object.spec.child) && object.metadata.name != ""'
    message: {text: '{{ .Object.spec }}'}
    sinks: [s]
sinks: [{name: s, stdout: {}}]
`)
	found, errs := widgets.Evaluate("Widget.v1.example.com", cr, now, nil)
	if len(found) != 1 {
		t.Fatalf("deep custom resource: %d findings, errors %v", len(found), errs)
	}
	checkBounded(t, found[0])
}

func checkBounded(t *testing.T, f Finding) {
	t.Helper()
	if n := utf8.RuneCountInString(f.Title); n > MaxTitle {
		t.Errorf("%s: title of %d runes", f.Rule, n)
	}
	if n := utf8.RuneCountInString(f.Text); n > MaxText {
		t.Errorf("%s: text of %d runes", f.Rule, n)
	}
	for k, v := range f.Facts {
		if utf8.RuneCountInString(v) > MaxFact || !utf8.ValidString(v) {
			t.Errorf("%s: fact %s is %d runes, valid UTF-8 %v", f.Rule, k, utf8.RuneCountInString(v), utf8.ValidString(v))
		}
	}
	if _, err := json.Marshal(f); err != nil {
		t.Errorf("%s: finding does not encode: %v", f.Rule, err)
	}
}

// TestCELCostLimit: a condition that would run for minutes on a large
// object is stopped at the cost limit and reported as that rule's error;
// the other rule of the kind still gives its finding.
func TestCELCostLimit(t *testing.T) {
	set := compile(t, `
rules:
  - name: expensive
    kind: Widget
    apiVersion: example.com/v1
    condition: 'object.spec.items.all(a, object.spec.items.all(b, object.spec.items.all(c, a + b + c >= 0)))'
    sinks: [s]
  - name: cheap
    kind: Widget
    apiVersion: example.com/v1
    condition: 'object.metadata.name == "big"'
    sinks: [s]
sinks: [{name: s, stdout: {}}]
`)
	items := make([]any, 500) // 500³ steps: far past the limit
	for i := range items {
		items[i] = int64(i)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "big", "namespace": "shop", "uid": "u"}, "spec": map[string]any{"items": items}}}
	found, errs := set.Evaluate("Widget.v1.example.com", obj, now, nil)
	if len(errs) != 1 || errs[0].Rule != "expensive" || !strings.Contains(errs[0].Error(), "cost") {
		t.Fatalf("errors %v, want the expensive rule stopped at its cost limit", errs)
	}
	if len(found) != 1 || found[0].Rule != "cheap" {
		t.Fatalf("findings %+v, want the cheap rule's", found)
	}
}

// TestPreCutLeavesNoSecretFragment: a text longer than what the
// redactor reads is cut before it is redacted. When the cut falls inside
// a token, what is left of it is a shape no rule knows; and redacting the
// secrets before it shortens the text, pulling that fragment into what
// is kept. The cut word must go: no part of the token may show, in a
// fact (a termination message) or in a template's output.
func TestPreCutLeavesNoSecretFragment(t *testing.T) {
	const token = "ghp_R2d2C3poL0ngT0kenF0rT3st1ngAbcd12345"
	fragment := token[:20]
	// Secrets worth 8 KB that redact to a few hundred bytes, then the
	// token, cut after its 20th character.
	cutAcross := func(cut int) string {
		pair := "password=" + strings.Repeat("Zq9", 133) + " "
		var b strings.Builder
		for b.Len()+len(pair) <= cut-len(fragment) {
			b.WriteString(pair)
		}
		b.WriteString(strings.Repeat(" ", cut-len(fragment)-b.Len()))
		b.WriteString(token + " and more after it")
		return b.String()
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "leaky", Namespace: "shop", UID: "u1",
			Annotations: map[string]string{"note": cutAcross(4 * MaxText)}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", RestartCount: 9,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: "Error", Message: cutAcross(8 * MaxFact)}},
		}}},
	}
	set := compile(t, `
rules:
  - {name: crash, kind: Pod, detector: crashloop, sinks: [s]}
  - name: note
    kind: Pod
    condition: 'true'
    message: {text: '{{ index .Object.metadata.annotations "note" }}'}
    sinks: [s]
sinks: [{name: s, stdout: {}}]
`)
	found, errs := set.Evaluate("Pod", pod, now, nil)
	if len(found) != 2 {
		t.Fatalf("%d findings (errors %v), want the crash loop and the note", len(found), errs)
	}
	for _, f := range found {
		shown := f.Title + "\n" + f.Text
		for _, v := range f.Facts {
			shown += "\n" + v
		}
		if strings.Contains(shown, fragment) {
			t.Errorf("%s: a fragment of the token cut before redaction shows: %q", f.Rule, fragment)
		}
		if f.Rule == "crash" && !strings.Contains(shown, "password=<redacted") {
			t.Errorf("crash: the termination message did not reach the finding (the test shows nothing): %.300q", shown)
		}
	}
}

// TestFindingsCarryNoControls: a termination message and an Event-like
// condition message with an OSC 52 clipboard write, a screen clear, a C1
// CSI, a bidi override and a line separator: the finding's facts, detail,
// title and text keep the words, not the controls (new lines and tabs
// stay).
func TestFindingsCarryNoControls(t *testing.T) {
	msg := "boom\x1b]52;c;Y3VybCBldmlsfHNo\a\x1b[2J\u009b31m\u202egnp.exe\u2028next\tcol\nline two"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "evil", Namespace: "shop", UID: "u1"},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", RestartCount: 9,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: msg}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: msg}},
		}}},
	}
	set := compile(t, `
rules:
  - {name: crash, kind: Pod, detector: crashloop, sinks: [s]}
  - {name: said, kind: Pod, detector: crashloop, sinks: [s], message: {title: '{{ index .Facts "lastMessage" }}', text: '{{ .Facts }}'}}
sinks: [{name: s, stdout: {}}]
`)
	found, errs := set.Evaluate("Pod", pod, now, nil)
	if len(found) != 2 {
		t.Fatalf("%d findings (errors %v), want 2", len(found), errs)
	}
	for _, f := range found {
		all := map[string]string{"title": f.Title, "text": f.Text}
		for k, v := range f.Facts {
			all["fact "+k] = v
		}
		for where, v := range all {
			for _, r := range v {
				if r != '\n' && termsafe.Unsafe(r) {
					t.Errorf("%s: %s holds %U: %q", f.Rule, where, r, v)
					break
				}
			}
		}
		if !strings.Contains(f.Facts["lastMessage"], "gnp.exenext\tcol\nline two") {
			t.Errorf("%s: the message lost its words: %q", f.Rule, f.Facts["lastMessage"])
		}
	}
}

package rules

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-k8s/herald/config"
)

// loopingPod is a pod in namespace shop whose containers app and
// istio-proxy both crash-loop; app's last termination says msg.
func loopingPod(msg string, edit func(*corev1.Pod)) *corev1.Pod {
	looping := func(name, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, RestartCount: 4,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: msg}}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d4f9-x2x", Namespace: "shop", UID: "u-1", Labels: map[string]string{"app": "web"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			looping("app", msg), looping("istio-proxy", ""),
		}},
	}
	if edit != nil {
		edit(pod)
	}
	return pod
}

// describeExcluded renders exclusions as "by:container".
func describeExcluded(es []Excluded) string {
	var parts []string
	for _, e := range es {
		parts = append(parts, e.By+":"+e.Finding.Container)
	}
	return strings.Join(parts, ",")
}

func TestExclude(t *testing.T) {
	yes := true
	ownedBy := func(kind, name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: name, Controller: &yes, APIVersion: "apps/v1", UID: "o-1"}}
		}
	}
	tests := []struct {
		name, exclude, msg string
		edit               func(*corev1.Pod)
		kept, excluded     string
	}{
		{"names: no match", `{names: ["batch-*"]}`, "", nil, "CrashLoopBackOff/app,CrashLoopBackOff/istio-proxy", ""},
		{"names: the object's name", `{names: ["web-*"]}`, "", nil, "", "names:app,names:istio-proxy"},
		{"names: the Deployment's name, through its ReplicaSet", `{names: ["*-canary"]}`, "", func(p *corev1.Pod) {
			p.Name = "web-canary-5d4f-abcde"
			p.Labels["pod-template-hash"] = "5d4f"
			ownedBy("ReplicaSet", "web-canary-5d4f")(p)
		}, "", "names:app,names:istio-proxy"},
		{"names: the ReplicaSet is not the workload", `{names: ["*-5d4f"]}`, "", func(p *corev1.Pod) {
			p.Labels["pod-template-hash"] = "5d4f"
			ownedBy("ReplicaSet", "web-canary-5d4f")(p)
		}, "CrashLoopBackOff/app,CrashLoopBackOff/istio-proxy", ""},
		{"names: a Job's name", `{names: ["batch-*"]}`, "", ownedBy("Job", "batch-nightly"), "", "names:app,names:istio-proxy"},
		{"containers: per finding", `{containers: ["istio-*", "*-sidecar"]}`, "", nil, "CrashLoopBackOff/app", "containers:istio-proxy"},
		{"containers: no match", `{containers: ["envoy"]}`, "", nil, "CrashLoopBackOff/app,CrashLoopBackOff/istio-proxy", ""},
		{"namespaces: match", `{namespaces: ["sh?p"]}`, "", nil, "", "namespaces:app,namespaces:istio-proxy"},
		{"namespaces: no match", `{namespaces: ["sandbox-*"]}`, "", nil, "CrashLoopBackOff/app,CrashLoopBackOff/istio-proxy", ""},
		{"labels: match", `{labels: "team=experiments"}`, "", func(p *corev1.Pod) { p.Labels["team"] = "experiments" }, "", "labels:app,labels:istio-proxy"},
		{"labels: no match", `{labels: "team=experiments"}`, "", func(p *corev1.Pod) { p.Labels["team"] = "payments" }, "CrashLoopBackOff/app,CrashLoopBackOff/istio-proxy", ""},
		{"logPattern: the termination message", `{logPattern: "connection refused .* retrying"}`, "dial db: connection refused (attempt 3), retrying", nil, "CrashLoopBackOff/istio-proxy", "logPattern:app"},
		{"logPattern: no match", `{logPattern: "connection refused .* retrying"}`, "panic: nil map", nil, "CrashLoopBackOff/app,CrashLoopBackOff/istio-proxy", ""},
		// The pattern sees what the operator sees: the redacted text.
		{"logPattern: after redaction", `{logPattern: "password=hunter2"}`, "login failed password=hunter2", nil, "CrashLoopBackOff/app,CrashLoopBackOff/istio-proxy", ""},
		{"when: true", `{when: "object.metadata.annotations['herald.io/ignore'] == 'true'"}`, "", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"herald.io/ignore": "true"}
		}, "", "when:app,when:istio-proxy"},
		{"when: false", `{when: "has(object.metadata.annotations) && object.metadata.annotations['herald.io/ignore'] == 'true'"}`, "", nil, "CrashLoopBackOff/app,CrashLoopBackOff/istio-proxy", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, ruleYAML("Pod", "crashloop", ", exclude: "+tt.exclude))
			ev := set.EvaluateWithExclusions("Pod", loopingPod(tt.msg, tt.edit), now, nil)
			if len(ev.Errors) > 0 {
				t.Fatalf("errors: %v", ev.Errors)
			}
			if got := describe(ev.Findings); got != tt.kept {
				t.Errorf("kept %q, want %q", got, tt.kept)
			}
			if got := describeExcluded(ev.Excluded); got != tt.excluded {
				t.Errorf("excluded %q, want %q", got, tt.excluded)
			}
		})
	}
}

// TestExcludeSays: each exclusion names where it is configured, what
// matched, and on what, as herald test prints it.
func TestExcludeSays(t *testing.T) {
	set := compile(t, `
rules:
  - {name: a, kind: Pod, detector: crashloop, sinks: [out], exclude: {containers: ["istio-*"]}}
  - {name: b, kind: Pod, detector: crashloop, sinks: [out], exclude: {names: ["*-canary"], logPattern: "refused"}}
sinks: [{name: out, stdout: {}}]
`)
	yes := true
	pod := loopingPod("connection refused", func(p *corev1.Pod) {
		p.Labels["pod-template-hash"] = "5d4f"
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-canary-5d4f", Controller: &yes}}
	})
	ev := set.EvaluateWithExclusions("Pod", pod, now, nil)
	var got []string
	for _, e := range ev.Excluded {
		got = append(got, e.Finding.Rule+"/"+e.Finding.Container+": "+e.String())
	}
	want := []string{
		`a/istio-proxy: excluded by rules[0].exclude.containers "istio-*" (container istio-proxy)`,
		`b/app: excluded by rules[1].exclude.names "*-canary" (workload Deployment/web-canary)`,
		`b/istio-proxy: excluded by rules[1].exclude.names "*-canary" (workload Deployment/web-canary)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("exclusions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if describe(ev.Findings) != "CrashLoopBackOff/app" {
		t.Errorf("kept %s, want rule a's app", describe(ev.Findings))
	}
}

// TestExcludeWhenFailsOpen: a when expression that fails on an object
// keeps the findings (nothing is lost), is reported as the rule's error,
// and stops no other rule.
func TestExcludeWhenFailsOpen(t *testing.T) {
	set := compile(t, `
rules:
  - {name: bad, kind: Pod, detector: crashloop, sinks: [out], exclude: {when: "object.metadata.annotations['x'] == 'y'"}}
  - {name: good, kind: Pod, detector: crashloop, sinks: [out], exclude: {containers: ["istio-proxy"]}}
sinks: [{name: out, stdout: {}}]
`)
	ev := set.EvaluateWithExclusions("Pod", loopingPod("", nil), now, nil) // no annotations: the lookup fails
	if len(ev.Errors) != 1 || ev.Errors[0].Rule != "bad" || !strings.Contains(ev.Errors[0].Error(), "exclude.when: CEL") {
		t.Fatalf("errors = %v, want one of rule bad's exclude.when", ev.Errors)
	}
	var kept []string
	for _, f := range ev.Findings {
		kept = append(kept, f.Rule+"/"+f.Container)
	}
	if got := strings.Join(kept, ","); got != "bad/app,bad/istio-proxy,good/app" {
		t.Errorf("kept %s, want both of bad's findings and good's app", got)
	}
	if got := describeExcluded(ev.Excluded); got != "containers:istio-proxy" {
		t.Errorf("excluded %s", got)
	}
}

// TestExcludeCompileErrors: a bad selector and a when that does not
// compile are config errors at their place (the CEL one at its token).
func TestExcludeCompileErrors(t *testing.T) {
	cfg, err := config.Parse("x.yaml", []byte(`rules:
  - name: r
    kind: Pod
    detector: crashloop
    exclude:
      labels: "team in (a"
      when: "object.metadata.nosuch(1) == true"
    sinks: [out]
  - name: s
    kind: Pod
    detector: crashloop
    exclude: {when: "'x' + object.metadata.name"}
    sinks: [out]
sinks: [{name: out, stdout: {}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(cfg)
	var errs config.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Compile error = %v, want config.Errors", err)
	}
	want := []string{
		`x.yaml:6:15: rules[0].exclude.labels: bad label selector: `,
		`x.yaml:7:36: rules[0].exclude.when: CEL: undeclared reference to 'nosuch'`,
		`x.yaml:12:22: rules[1].exclude.when: CEL: the condition must be true or false, but it yields string`,
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), errs)
	}
	for i, e := range errs {
		if !strings.HasPrefix(e.Error(), want[i]) {
			t.Errorf("error %d:\n got  %s\n want %s…", i, e, want[i])
		}
	}
}

// TestExcludeWhenKeepsAnnotations: the cache must keep what a when reads.
func TestExcludeWhenKeepsAnnotations(t *testing.T) {
	set := compile(t, ruleYAML("Pod", "crashloop", `, exclude: {when: "object.metadata.annotations['herald.io/ignore'] == 'true'"}`))
	if !set.NeedsWholeObject("Pod") {
		t.Error("a when over the object must keep pods whole")
	}
	if keys, all := set.AnnotationsRead("Pod"); all || len(keys) != 1 || keys[0] != "herald.io/ignore" {
		t.Errorf("AnnotationsRead = %v, %v; want [herald.io/ignore]", keys, all)
	}
}

package rules

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/watcher"
)

var update = flag.Bool("update", false, "rewrite golden files")

// now is the evaluation time of every table case; the fixtures' times are
// relative to it.
var now = time.Date(2026, 11, 22, 0, 10, 0, 0, time.UTC)

func loadObject(t testing.TB, name string) runtime.Object {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata/objects", name))
	if err != nil {
		t.Fatal(err)
	}
	var head struct{ Kind string }
	if err := yaml.Unmarshal(data, &head); err != nil {
		t.Fatal(err)
	}
	objs := map[string]runtime.Object{
		"Pod": &corev1.Pod{}, "Node": &corev1.Node{}, "PersistentVolumeClaim": &corev1.PersistentVolumeClaim{},
		"Deployment": &appsv1.Deployment{}, "StatefulSet": &appsv1.StatefulSet{}, "DaemonSet": &appsv1.DaemonSet{},
		"Job": &batchv1.Job{}, "Event": &eventsv1.Event{},
		"HorizontalPodAutoscaler": &autoscalingv2.HorizontalPodAutoscaler{}, "CronJob": &batchv1.CronJob{},
		"Service": &corev1.Service{},
	}
	if head.Kind == "Certificate" { // a custom resource: unstructured, as the dynamic informer has it
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return u
	}
	obj, ok := objs[head.Kind]
	if !ok {
		t.Fatalf("%s: no type for kind %q", name, head.Kind)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return obj
}

func compile(t testing.TB, yamlText string) *Set {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	set, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func ruleYAML(kind, detector, extra string) string {
	return fmt.Sprintf("rules:\n  - {name: r, kind: %s, detector: %s, severity: critical, sinks: [out]%s}\nsinks: [{name: out, stdout: {}}]\n", kind, detector, extra)
}

// describe renders findings as "Reason/container" ("~" marks sustaining,
// "~settling" a sustaining finding that only waits out its settle time).
func describe(fs []Finding) string {
	var parts []string
	for _, f := range fs {
		s := f.Reason
		if f.Container != "" {
			s += "/" + f.Container
		}
		if f.Sustaining {
			s += "~"
		}
		if f.Settling {
			s += "settling"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

func TestDetectors(t *testing.T) {
	tests := []struct {
		kind, detector, extra, file, want string
	}{
		{"Pod", "crashloop", "", "crashloop.yaml", "CrashLoopBackOff/app"},
		{"Pod", "crashloop", "", "between-crashes.yaml", "CrashLoopBackOff/app~"},
		{"Pod", "crashloop", "", "recovered.yaml", ""},
		// Ready again 3s ago after 6 restarts: not over until it has
		// stayed up for the settle time (60s, or the rule's settle:).
		{"Pod", "crashloop", "", "ready-briefly.yaml", "CrashLoopBackOff/app~settling"},
		{"Pod", "crashloop", ", settle: 2s", "ready-briefly.yaml", ""},
		{"Pod", "crashloop", ", settle: 0s", "ready-briefly.yaml", ""},
		{"Pod", "crashloop", ", settle: 2s", "between-crashes.yaml", "CrashLoopBackOff/app~"},
		{"Pod", "crashloop", "", "restarted-once-long-ago.yaml", ""},
		{"Pod", "crashloop", "", "healthy.yaml", ""},
		{"Pod", "crashloop", "", "init-crashloop.yaml", "CrashLoopBackOff/migrate"},
		{"Pod", "crashloop", "", "init-done.yaml", ""},
		{"Pod", "crashloop", "", "deleting.yaml", ""},
		{"Pod", "crashloop", "", "image-pull.yaml", ""},
		{"Pod", "crashloop", "", "exit0.yaml", ""},
		// Crashed again, before the kubelet's CrashLoopBackOff status.
		{"Pod", "crashloop", "", "crashed-again.yaml", "CrashLoopBackOff/app"},
		{"Pod", "crashloop", "", "crashed-after-long-run.yaml", "CrashLoopBackOff/app~"}, // keeps an open incident open, opens none
		// The real kubelet's OOM loop is a crash loop too; except leaves
		// it to the oomkilled rule, and only it.
		{"Pod", "crashloop", "", "oom-crashloop.yaml", "CrashLoopBackOff/app"},
		{"Pod", "crashloop", ", except: [OOMKilled]", "oom-crashloop.yaml", ""},
		{"Pod", "crashloop", ", except: [OOMKilled]", "crashloop.yaml", "CrashLoopBackOff/app"},
		{"Pod", "crashloop", ", except: [OOMKilled]", "oomkilled-recent.yaml", ""},
		{"Pod", "oomkilled", "", "oom-crashloop.yaml", "OOMKilled/app"},
		{"Pod", "oomkilled", "", "oomkilled-recent.yaml", "OOMKilled/redis"},
		{"Pod", "oomkilled", "", "oomkilled-old.yaml", ""},
		{"Pod", "oomkilled", "", "exit137-not-oom.yaml", ""},
		{"Pod", "image-pull", "", "image-pull.yaml", "ImagePullBackOff/app"},
		{"Pod", "image-pull", "", "errimagepull.yaml", "ImagePullBackOff/app"},
		{"Pod", "image-pull", "", "healthy.yaml", ""},
		{"Pod", "container-error", "", "config-error.yaml", "CreateContainerConfigError/app"},
		{"Pod", "container-error", "", "config-key.yaml", "CreateContainerConfigError/app"},
		{"Pod", "container-error", "", "crashloop.yaml", ""},
		// ContainerCreating keeps an open incident open, opens none.
		{"Pod", "container-error", "", "creating.yaml", "CreateContainerConfigError/app~,CreateContainerError/app~,RunContainerError/app~"},
		{"Pod", "image-pull", "", "creating.yaml", "ImagePullBackOff/app~"},
		{"Pod", "pod-failed", "", "failed.yaml", "PodFailed"},
		{"Pod", "pod-failed", "", "evicted.yaml", ""},
		{"Pod", "pod-failed", "", "failed-job-pod.yaml", ""},
		{"Pod", "pod-failed", "", "succeeded-job-pod.yaml", ""},
		{"Pod", "evicted", "", "evicted.yaml", "Evicted"},
		{"Pod", "evicted", "", "failed.yaml", ""},
		{"Pod", "pending", "", "unschedulable.yaml", "PodPending"},
		{"Pod", "pending", "", "healthy.yaml", ""},
		{"Pod", "not-ready", "", "not-ready.yaml", "NotReady/app"},
		{"Pod", "not-ready", "", "healthy.yaml", ""},
		{"Pod", "not-ready", "", "terminating-rollout.yaml", ""},
		{"Pod", "restarts", "", "restarts-recent.yaml", "Restarting/app"},
		{"Pod", "restarts", "", "restarts-once.yaml", ""},
		{"Pod", "restarts", ", threshold: 1", "restarts-once.yaml", "Restarting/app"},
		{"Pod", "restarts", ", window: 30s", "restarts-recent.yaml", ""},
		{"Deployment", "rollout-stuck", "", "deploy-stuck.yaml", "ProgressDeadlineExceeded"},
		{"Deployment", "rollout-stuck", "", "deploy-ok.yaml", ""},
		{"Deployment", "unavailable", "", "deploy-stuck.yaml", "ReplicasUnavailable"},
		{"Deployment", "unavailable", "", "deploy-ok.yaml", ""},
		{"StatefulSet", "unavailable", "", "sts-unavailable.yaml", "ReplicasUnavailable"},
		{"DaemonSet", "unavailable", "", "ds-unavailable.yaml", "ReplicasUnavailable"},
		{"Job", "job-failed", "", "job-failed.yaml", "JobFailed"},
		{"Job", "job-failed", "", "job-complete.yaml", ""},
		{"Job", "cronjob-failed", "", "job-failed.yaml", "CronJobFailed"},
		{"Job", "cronjob-failed", "", "job-complete.yaml", ""},
		// Running is the state; for: (1h by default) makes it a problem.
		{"Job", "long-running", "", "job-running.yaml", "JobRunningLong"},
		{"Job", "long-running", "", "job-started.yaml", "JobRunningLong"},
		{"Job", "long-running", "", "job-complete.yaml", ""},
		{"Job", "long-running", "", "job-failed.yaml", ""},
		{"Job", "long-running", "", "job-failing.yaml", ""},
		{"Job", "long-running", "", "job-suspended.yaml", ""},
		{"Node", "node-not-ready", "", "node-notready.yaml", "NodeNotReady"},
		{"Node", "node-not-ready", "", "node-ok.yaml", ""},
		{"Node", "node-pressure", "", "node-notready.yaml", "MemoryPressure"},
		{"Node", "node-pressure", "", "node-ok.yaml", ""},
		{"PersistentVolumeClaim", "pvc-pending", "", "pvc-pending.yaml", "PVCPending"},
		{"CronJob", "missed-schedule", "", "cronjob-ran.yaml", ""},
		{"CronJob", "missed-schedule", "", "cronjob-missed.yaml", "MissedSchedule"},
		{"CronJob", "missed-schedule", "", "cronjob-never-ran.yaml", "MissedSchedule"},
		{"CronJob", "missed-schedule", "", "cronjob-suspended.yaml", ""},
		{"CronJob", "missed-schedule", "", "cronjob-deadline.yaml", ""},
		{"CronJob", "missed-schedule", "", "cronjob-timezone.yaml", ""},
		{"CronJob", "missed-schedule", "", "cronjob-forbid.yaml", "MissedSchedule"},
		{"CronJob", "missed-schedule", "", "cronjob-never-ran-zone.yaml", "MissedSchedule"},
		{"CronJob", "missed-schedule", "", "cronjob-new-no-zone.yaml", ""},
		{"HorizontalPodAutoscaler", "max-replicas", "", "hpa-at-max.yaml", "AtMaxReplicas"},
		{"HorizontalPodAutoscaler", "max-replicas", "", "hpa-at-max-under-target.yaml", ""},
		{"HorizontalPodAutoscaler", "max-replicas", "", "hpa-at-min.yaml", ""},
		// cert-manager's Certificate, read from the custom resource.
		{"Certificate", "cert-expiring", "", "cert-renewal-failing.yaml", "CertificateExpiring"},
		{"Certificate", "cert-expiring", "", "cert-expired.yaml", "CertificateExpiring"},
		{"Certificate", "cert-expiring", "", "cert-ok.yaml", ""},
		// Within a 60-day window, but its renewal is a month away: not failing.
		{"Certificate", "cert-expiring", ", window: 1440h", "cert-ok.yaml", ""},
		{"Certificate", "cert-expiring", "", "cert-issuing.yaml", ""},
		{"Certificate", "cert-not-ready", "", "cert-renewal-failing.yaml", "CertificateNotReady"},
		{"Certificate", "cert-not-ready", "", "cert-issuing.yaml", "CertificateNotReady"},
		{"Certificate", "cert-not-ready", "", "cert-ok.yaml", ""},
		{"HorizontalPodAutoscaler", "max-replicas", "", "hpa-scaling-up.yaml", ""},
		{"Event", "warning-events", "", "event-backoff.yaml", "FailedMount"},
		{"Event", "warning-events", ", threshold: 10", "event-backoff.yaml", ""},
		{"Event", "warning-events", ", reasons: [BackOff]", "event-backoff.yaml", ""},
		{"Event", "warning-events", "", "event-normal.yaml", ""},
	}
	var golden strings.Builder
	for _, tt := range tests {
		name := tt.detector + "/" + strings.TrimSuffix(tt.file, ".yaml") + tt.extra
		t.Run(name, func(t *testing.T) {
			kind, ruleKind := tt.kind, tt.kind
			if tt.kind == "Certificate" { // a custom resource's kind, as herald names it
				kind, ruleKind = certificateKind, "Certificate, apiVersion: cert-manager.io/v1"
			}
			set := compile(t, ruleYAML(ruleKind, tt.detector, tt.extra))
			got, errs := set.Evaluate(kind, loadObject(t, tt.file), now, nil)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if d := describe(got); d != tt.want {
				t.Errorf("findings %q, want %q", d, tt.want)
			}
			if pod, ok := loadObject(t, tt.file).(*corev1.Pod); ok {
				// Pods are cached compact: what the cache keeps must
				// give the same findings, facts and messages.
				c, err := watcher.Compact(pod)
				if err != nil {
					t.Fatal(err)
				}
				expanded, err := c.Pod()
				if err != nil {
					t.Fatal(err)
				}
				fromCache, _ := set.Evaluate(tt.kind, expanded, now, nil)
				if a, b := fmt.Sprintf("%+v", fromCache), fmt.Sprintf("%+v", got); a != b {
					t.Errorf("from the compact cache:\n%s\nfrom the whole pod:\n%s", a, b)
				}
			}
			for _, f := range got {
				if f.Rule != "r" || f.Severity != "critical" || f.Object.Kind == "" || f.Object.UID == "" || len(f.Sinks) != 1 {
					t.Errorf("finding lacks rule data: %+v", f)
				}
				fmt.Fprintf(&golden, "%s\n  title: %s\n  text:  %s\n", name, f.Title, f.Text)
			}
		})
	}
	checkGolden(t, "testdata/golden/default-messages.txt", golden.String())
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestForAndSinceFromObject(t *testing.T) {
	set := compile(t, ruleYAML("Pod", "pending", ""))
	got, _ := set.Evaluate("Pod", loadObject(t, "unschedulable.yaml"), now, nil)
	if len(got) != 1 || got[0].For != 5*time.Minute || !got[0].Since.Equal(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("pending finding: %+v, want for 5m since creation", got)
	}
	set = compile(t, ruleYAML("Pod", "pending", ", for: 1h"))
	got, _ = set.Evaluate("Pod", loadObject(t, "unschedulable.yaml"), now, nil)
	if got[0].For != time.Hour {
		t.Errorf("for: 1h gave %s", got[0].For)
	}
	set = compile(t, ruleYAML("Pod", "oomkilled", ""))
	got, _ = set.Evaluate("Pod", loadObject(t, "oomkilled-recent.yaml"), now, nil)
	if len(got) != 1 || got[0].RecheckAfter != 5*time.Minute || got[0].Facts["memoryLimit"] != "256Mi" {
		t.Errorf("oomkilled: %+v, want a recheck in 5m (window end) and the memory limit", got)
	}
}

func TestScope(t *testing.T) {
	set := compile(t, `
rules:
  - name: r
    kind: Pod
    detector: crashloop
    sinks: [out]
    labels: "tier in (web, api), !canary"
    namespaces: {exclude: ["kube-*"], labels: "team=shop"}
sinks: [{name: out, stdout: {}}]
`)
	pod := loadObject(t, "crashloop.yaml").(*corev1.Pod)
	nsLabels := func(ns string) (map[string]string, bool) {
		return map[string]map[string]string{"shop": {"team": "shop"}, "kube-system": {"team": "shop"}, "other": {"team": "x"}}[ns], true
	}
	pod.Labels = map[string]string{"tier": "web"}
	if !set.InScope("Pod", pod, nsLabels) {
		t.Error("tier=web in namespace shop should be in scope")
	}
	for name, change := range map[string]func(p *corev1.Pod){
		"excluded namespace":        func(p *corev1.Pod) { p.Namespace = "kube-system" },
		"namespace labels mismatch": func(p *corev1.Pod) { p.Namespace = "other" },
		"object labels mismatch":    func(p *corev1.Pod) { p.Labels = map[string]string{"tier": "db"} },
		"negated label present":     func(p *corev1.Pod) { p.Labels["canary"] = "true" },
	} {
		p := pod.DeepCopy()
		change(p)
		if set.InScope("Pod", p, nsLabels) {
			t.Errorf("%s: in scope", name)
		}
		if got, _ := set.Evaluate("Pod", p, now, nsLabels); len(got) != 0 {
			t.Errorf("%s: evaluated anyway: %v", name, got)
		}
	}
	if set.InScope("Node", pod, nsLabels) {
		t.Error("no rule watches Node")
	}
}

func TestCompileErrors(t *testing.T) {
	cfg, err := config.Parse("c.yaml", []byte(`rules:
  - {name: a, kind: Gizmo, detector: x, sinks: [o]}
  - {name: b, kind: Pod, detector: oops, sinks: [o]}
  - {name: c, kind: Pod, condition: 'object.status.phase == 3 +', sinks: [o]}
  - name: d
    kind: Pod
    condition: |
      has(object.status) &&
        object.status.phase.size() + "x"
    sinks: [o]
  - {name: e, kind: Pod, condition: 'size(object)', sinks: [o], labels: "a in (b"}
  - {name: f, kind: Widget, apiVersion: "example.com/v1", condition: "true", sinks: [o], message: {title: "{{ .Name "}}
  - {name: g, kind: Pod, condition: 'object.metadata.name', sinks: [o]}
  - {name: h, kind: Pod, detector: crashloop, sinks: [o], message: {title: "{{ .Pod }} crashed", text: "{{ .Facts.exitCode }} {{ index .Object.metadata.labels \"team\" }}"}}
  - {name: i, kind: Pod, condition: 'object.metadata.labels["team"] == "shop"', sinks: [o]}
sinks: [{name: o, stdout: {}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(cfg)
	want := []string{
		`c.yaml:2:21: rules[0].kind: kind Gizmo is not built in: set apiVersion (group/version) for a custom resource`,
		`c.yaml:3:36: rules[1].detector: unknown detector "oops" for kind Pod; available: container-error, crashloop, evicted, image-pull, not-ready, oomkilled, pending, pod-failed, restarts`,
		`c.yaml:4:64: rules[2].condition: CEL: Syntax error: mismatched input '<EOF>' expecting`,
		`c.yaml:9:36: rules[3].condition: CEL: found no matching overload for '_+_' applied to '(int, string)'`,
		`c.yaml:11:38: rules[4].condition: CEL: the condition must be true or false, but it yields`,
		`c.yaml:11:73: rules[4].labels: bad label selector:`,
		`c.yaml:12:107: rules[5].message.title: template: title:1: unclosed action`,
		// Both fail on every object at run time: said at validate. (A
		// fact or label a bare object lacks is no error: real ones have
		// them.)
		`c.yaml:13:37: rules[6].condition: CEL: the condition must be true or false, but on a Pod it yields a string`,
		`c.yaml:14:76: rules[7].message.title: template: title:1:3: executing "title" at <.Pod>: can't evaluate field Pod in type rules.TemplateData`,
	}
	got := strings.Split(err.Error(), "\n")
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(got), len(want), err)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d:\n got  %s\n want %s…", i, got[i], want[i])
		}
	}
}

// TestCrashLoopSettleRecheck: a container settling after a crash loop is
// looked at again exactly when its settle time ends, counted from its own
// startedAt (so a restart of herald does not restart the clock).
func TestCrashLoopSettleRecheck(t *testing.T) {
	set := compile(t, ruleYAML("Pod", "crashloop", ""))
	got, _ := set.Evaluate("Pod", loadObject(t, "ready-briefly.yaml"), now, nil)
	if len(got) != 1 || got[0].RecheckAfter != 57*time.Second || !got[0].Settling {
		t.Fatalf("findings %+v, want one settling finding rechecked after 57s", got)
	}
}

// TestRunbookURL: a rule's runbook link is a template over the finding.
func TestRunbookURL(t *testing.T) {
	set := compile(t, ruleYAML("Pod", "crashloop", `, runbookURL: "https://runbooks.example.com/{{ .Reason | lower }}?ns={{ .Namespace }}"`))
	got, _ := set.Evaluate("Pod", loadObject(t, "crashloop.yaml"), now, nil)
	if len(got) != 1 || got[0].RunbookURL != "https://runbooks.example.com/crashloopbackoff?ns=shop" {
		t.Fatalf("findings %+v", got)
	}
}

package rules

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/herald-k8s/herald/config"
)

func loadPod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata/pods", name))
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(data, &pod); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &pod
}

func compile(t *testing.T, yamlText string) *Set {
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

const crashRule = `
rules:
  - {name: pod-crashloop, kind: Pod, detector: crashloop, severity: critical, sinks: [out], namespaces: {exclude: ["kube-*"]}}
sinks:
  - {name: out, stdout: {}}
`

func TestCrashLoopDetector(t *testing.T) {
	set := compile(t, crashRule)
	type want struct {
		container  string
		sustaining bool
	}
	tests := []struct {
		pod  string
		want []want
	}{
		{"crashloop.yaml", []want{{"app", false}}},
		{"between-crashes.yaml", []want{{"app", true}}},
		{"recovered.yaml", nil},
		{"healthy.yaml", nil},
		{"init-crashloop.yaml", []want{{"migrate", false}}},
		{"init-done.yaml", nil},
		{"deleting.yaml", nil},
		{"image-pull.yaml", nil},
	}
	for _, tt := range tests {
		t.Run(tt.pod, func(t *testing.T) {
			got, err := set.Evaluate("Pod", loadPod(t, tt.pod))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d findings %+v, want %d", len(got), got, len(tt.want))
			}
			for i, f := range got {
				if f.Container != tt.want[i].container || f.Sustaining != tt.want[i].sustaining {
					t.Errorf("finding %d: container %q sustaining %v, want %+v", i, f.Container, f.Sustaining, tt.want[i])
				}
				if f.Rule != "pod-crashloop" || f.Reason != "CrashLoopBackOff" || f.Severity != "critical" || f.Object.Kind != "Pod" || f.Object.UID == "" {
					t.Errorf("finding %d lacks rule data: %+v", i, f)
				}
			}
		})
	}
}

func TestCrashLoopMessage(t *testing.T) {
	set := compile(t, crashRule)
	got, err := set.Evaluate("Pod", loadPod(t, "crashloop.yaml"))
	if err != nil || len(got) != 1 {
		t.Fatalf("Evaluate = %v, %v", got, err)
	}
	f := got[0]
	if want := "CrashLoopBackOff: Pod shop/web container app"; f.Title != want {
		t.Errorf("title %q, want %q", f.Title, want)
	}
	if want := "CrashLoopBackOff: Pod shop/web container app: restarted 5 times, last exit code 2 (Error)"; f.Text != want {
		t.Errorf("text %q, want %q", f.Text, want)
	}
	if f.Facts["lastMessage"] != "panic: boom" || f.Facts["restartCount"] != "5" {
		t.Errorf("facts %v", f.Facts)
	}
}

func TestNamespaceScope(t *testing.T) {
	set := compile(t, crashRule)
	pod := loadPod(t, "crashloop.yaml")
	if !set.InScope("Pod", pod) {
		t.Error("shop should be in scope")
	}
	pod.Namespace = "kube-system"
	if set.InScope("Pod", pod) {
		t.Error("kube-system is excluded by kube-*")
	}
	if got, _ := set.Evaluate("Pod", pod); len(got) != 0 {
		t.Errorf("excluded namespace still evaluated: %v", got)
	}
	if set.InScope("Node", pod) {
		t.Error("no rule watches Node")
	}
}

func TestCompileErrors(t *testing.T) {
	cfg, err := config.Parse("c.yaml", []byte("rules:\n  - {name: a, kind: Gizmo, detector: x, sinks: [o]}\n  - {name: b, kind: Pod, detector: oops, sinks: [o]}\nsinks: [{name: o, stdout: {}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(cfg)
	want := "c.yaml:2:21: rules[0].kind: unsupported kind \"Gizmo\"; supported: Pod\n" +
		"c.yaml:3:36: rules[1].detector: unknown detector \"oops\" for kind Pod; available: crashloop"
	if err == nil || err.Error() != want {
		t.Errorf("Compile error:\n%v\nwant\n%s", err, want)
	}
}

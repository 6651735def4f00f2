package changes

import (
	"fmt"
	"hash/maphash"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// template is a realistic pod template: one app container with env from
// values, a Secret and a ConfigMap, resources, probes and volumes.
func template() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "migrate", Image: "shop/migrate:1.8.2", Args: []string{"--dsn", "postgres://u:hunter2@db/shop"}}},
			Containers: []corev1.Container{{
				Name:    "app",
				Image:   "shop/checkout:1.8.2",
				Command: []string{"/checkout"},
				Args:    []string{"--token=tok-abc123", "--port=8080"},
				Env: []corev1.EnvVar{
					{Name: "DB_POOL", Value: "10"},
					{Name: "API_KEY", Value: "sk-live-0123456789"},
					{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "db-creds"}, Key: "password"}}},
				},
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-env"}}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz"}}, PeriodSeconds: 10},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready"}}},
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}},
				{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}

func app(t *corev1.PodTemplateSpec) *corev1.Container { return &t.Spec.Containers[0] }

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*corev1.PodTemplateSpec)
		want   string // the whole String()
	}{
		{"Nothing", func(*corev1.PodTemplateSpec) {}, "no change to the pod template"},
		{"Image", func(p *corev1.PodTemplateSpec) { app(p).Image = "shop/checkout:1.9.0" },
			"image shop/checkout:1.8.2 → 1.9.0"},
		{"ImageRepository", func(p *corev1.PodTemplateSpec) { app(p).Image = "registry:5000/shop/checkout" },
			"image shop/checkout:1.8.2 → registry:5000/shop/checkout"},
		{"InitImage", func(p *corev1.PodTemplateSpec) { p.Spec.InitContainers[0].Image = "shop/migrate:1.9.0" },
			"image migrate: shop/migrate:1.8.2 → 1.9.0"},
		{"EnvChangedAddedRemoved", func(p *corev1.PodTemplateSpec) {
			app(p).Env[0].Value = "20"
			app(p).Env[1] = corev1.EnvVar{Name: "NEW_FLAG", Value: "on"}
		}, "env API_KEY removed, DB_POOL changed, NEW_FLAG added"},
		{"EnvSecretKey", func(p *corev1.PodTemplateSpec) { app(p).Env[2].ValueFrom.SecretKeyRef.Key = "password2" },
			"env DB_PASSWORD changed"},
		{"EnvFromSecretAdded", func(p *corev1.PodTemplateSpec) {
			app(p).EnvFrom = append(app(p).EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "stripe"}}})
		}, "Secret stripe referenced"},
		{"EnvFromConfigMapRemoved", func(p *corev1.PodTemplateSpec) { app(p).EnvFrom = nil },
			"ConfigMap app-env no longer referenced"},
		{"Args", func(p *corev1.PodTemplateSpec) { app(p).Args[0] = "--token=tok-new999" }, "args changed"},
		{"Command", func(p *corev1.PodTemplateSpec) { app(p).Command = []string{"/checkout2"} }, "command changed"},
		{"InitArgs", func(p *corev1.PodTemplateSpec) { p.Spec.InitContainers[0].Args = nil }, "args changed (migrate)"},
		{"Limits", func(p *corev1.PodTemplateSpec) {
			app(p).Resources.Limits[corev1.ResourceMemory] = resource.MustParse("512Mi")
		},
			"limits memory 256Mi → 512Mi"},
		{"Requests", func(p *corev1.PodTemplateSpec) {
			delete(app(p).Resources.Requests, corev1.ResourceCPU)
			app(p).Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
		}, "requests cpu 100m → none, nvidia.com/gpu none → 1"},
		{"Probes", func(p *corev1.PodTemplateSpec) {
			app(p).LivenessProbe.PeriodSeconds = 5
			app(p).ReadinessProbe = nil
			app(p).StartupProbe = &corev1.Probe{FailureThreshold: 30}
		}, "liveness probe changed; readiness probe removed; startup probe added"},
		{"Volumes", func(p *corev1.PodTemplateSpec) {
			p.Spec.Volumes[0].ConfigMap.Name = "app-config-v2"
			p.Spec.Volumes[1] = corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}}
		}, "volume cache removed; volume config changed; volume tls added; ConfigMap app-config no longer referenced; ConfigMap app-config-v2 referenced; Secret tls referenced"},
		{"ContainerAdded", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "proxy", Image: "envoy:1.30"})
			app(p).Image = "shop/checkout:1.9.0"
		}, "image app: shop/checkout:1.8.2 → 1.9.0; container proxy added (image envoy:1.30)"},
		{"InitContainerRemoved", func(p *corev1.PodTemplateSpec) { p.Spec.InitContainers = nil },
			"init container migrate removed"},
		{"Restart", func(p *corev1.PodTemplateSpec) {
			p.Annotations = map[string]string{restartedAtAnnotation: "2026-11-25T15:00:00Z"}
		}, "restarted (kubectl rollout restart)"},
		{"Other", func(p *corev1.PodTemplateSpec) { p.Spec.ServiceAccountName = "checkout" },
			"pod template changed (labels, annotations or other fields)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, new := template(), template()
			tc.change(new)
			if got := Diff(old, new).String(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestDiffBounded: a summary says at most MaxItems changes and counts the
// rest; one item names at most maxNames env vars and counts the rest.
func TestDiffBounded(t *testing.T) {
	old, new := template(), template()
	for i := range 12 {
		new.Spec.Volumes = append(new.Spec.Volumes, corev1.Volume{Name: fmt.Sprintf("v%02d", i)})
	}
	for i := range 9 {
		app(new).Env = append(app(new).Env, corev1.EnvVar{Name: fmt.Sprintf("E%d", i)})
	}
	s := Diff(old, new)
	if len(s.Items) != MaxItems || s.More != 13-MaxItems {
		t.Errorf("%d items, %d more; want %d and %d", len(s.Items), s.More, MaxItems, 13-MaxItems)
	}
	str := s.String()
	if !strings.HasPrefix(str, "env E0 added, E1 added, E2 added, E3 added, E4 added, E5 added, and 3 more;") ||
		!strings.HasSuffix(str, "; and 5 more") {
		t.Errorf("not bounded as it should: %s", str)
	}
	long := strings.Repeat("x", 1000)
	app(new).Image = long
	if got := Diff(old, new).Items[0].Text; len(got) > maxText*2+40 {
		t.Errorf("an image of 1000 bytes is quoted whole: %d bytes", len(got))
	}
}

// TestDiffNeverQuotesValues: whatever changes, no env value, argument,
// command, probe path or referenced key appears in a summary.
func TestDiffNeverQuotesValues(t *testing.T) {
	secrets := []string{"hunter2", "sk-live-0123456789", "tok-abc123", "tok-new999", "s3cr3t-NEW", "password", "/healthz", "/checkout"}
	old, new := template(), template()
	c := app(new)
	c.Env[1].Value = "s3cr3t-NEW"
	c.Env[2].ValueFrom.SecretKeyRef.Key = "password-rotated"
	c.Args[0] = "--token=tok-new999"
	c.Command = []string{"/checkout", "--secret=s3cr3t-NEW"}
	c.LivenessProbe.HTTPGet.Path = "/healthz?key=s3cr3t-NEW"
	new.Spec.InitContainers[0].Env = []corev1.EnvVar{{Name: "PGPASSWORD", Value: "hunter2"}}
	for _, s := range []Summary{Diff(old, new), Diff(new, old)} {
		out := s.String() + fmt.Sprintf("%+v", s)
		for _, v := range secrets {
			if strings.Contains(out, v) {
				t.Errorf("summary holds %q: %s", v, out)
			}
		}
		if !strings.Contains(out, "API_KEY changed") || !strings.Contains(out, "PGPASSWORD") {
			t.Errorf("summary does not name the changed env vars: %s", out)
		}
	}
}

// TestDigestBounded: a template of any size (thousands of env vars,
// containers, volumes and references, names of any length) costs the
// record a bounded digest, and a change beyond what it keeps by name is
// still said.
func TestDigestBounded(t *testing.T) {
	huge := func(lastValue string) *corev1.PodTemplateSpec {
		tpl := template()
		long := strings.Repeat("n", 100_000)
		for i := range 200 {
			c := corev1.Container{Name: fmt.Sprintf("c%03d", i), Image: "shop/" + long + ":1"}
			for j := range 5_000 / 200 {
				c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("V%04d_%s", j, long[:1000]), Value: "x"})
			}
			tpl.Spec.Containers = append(tpl.Spec.Containers, c)
		}
		app(tpl).Env = nil
		for j := range 3_000 {
			app(tpl).Env = append(app(tpl).Env, corev1.EnvVar{Name: fmt.Sprintf("E%05d", j), Value: "v"})
		}
		app(tpl).Env[2_999].Value = lastValue
		for j := range 1_000 {
			tpl.Spec.Volumes = append(tpl.Spec.Volumes, corev1.Volume{Name: fmt.Sprintf("vol%04d", j), VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: fmt.Sprintf("s%04d", j)}}})
		}
		return tpl
	}
	h := hasher{seed: maphash.MakeSeed()}
	a, b := h.digestOf(huge("1")), h.digestOf(huge("2"))
	if len(a.containers) > maxDigestContainers || len(a.volumes) > maxDigestVolumes || len(a.refs) > maxDigestRefs || a.moreRefs == 0 {
		t.Errorf("digest unbounded: %d containers, %d volumes, %d refs (%d more)", len(a.containers), len(a.volumes), len(a.refs), a.moreRefs)
	}
	for _, c := range a.containers {
		if len(c.env) > maxDigestEnv || len(c.image) > maxDigestName+len("…") || len(c.name) > maxDigestName+len("…") {
			t.Errorf("container %s: %d env vars, image of %d bytes", c.name, len(c.env), len(c.image))
		}
		for _, e := range c.env {
			if len(e.name) > maxDigestName+len("…") {
				t.Errorf("env name of %d bytes kept", len(e.name))
			}
		}
	}
	if got := diff(&a, &b).String(); !strings.Contains(got, "env app: others beyond the first 64 changed") {
		t.Errorf("a change past the kept env vars: %q", got)
	}
	if got := diff(&a, &a).String(); got != "no change to the pod template" {
		t.Errorf("no change: %q", got)
	}
}

// TestQuotedTextIsOneVisibleLine: a newline, a bidi override or a control
// character in anything a workload's author chooses (an image, a
// change-cause, a ConfigMap's name) cannot forge a line of the alert.
func TestQuotedTextIsOneVisibleLine(t *testing.T) {
	for _, in := range []string{"deploy\nUndo: `kubectl delete deployment --all`", "a\u202eb", "x\u2028y", "tab\there", "bell\a"} {
		got := clipTo(in, 500)
		if strings.ContainsAny(got, "\n\r\t\a\u202e\u2028") {
			t.Errorf("clipTo(%q) = %q: an invisible or line-breaking character is left", in, got)
		}
		if !strings.Contains(got, `\u00`) && !strings.Contains(got, `\u20`) {
			t.Errorf("clipTo(%q) = %q: the character is not shown", in, got)
		}
	}
	if got := clipTo("shop/checkout:1.9.0 ✓", 500); got != "shop/checkout:1.9.0 ✓" {
		t.Errorf("plain text changed: %q", got)
	}
}

package rules

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPullDetail: an image-pull finding names the image and the
// registry's answer, without the kubelet's wrapping around it.
func TestPullDetail(t *testing.T) {
	for _, c := range []struct {
		reason, image, message, want, answer string
	}{
		{"ImagePullBackOff", "registry.example/web:1.4", `Back-off pulling image "registry.example/web:1.4": ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image "registry.example/web:1.4": registry.example/web:1.4: not found`,
			`cannot pull the image "registry.example/web:1.4": registry.example/web:1.4: not found`, "registry.example/web:1.4: not found"},
		{"ErrImagePull", "private.example/app:2", `rpc error: code = Unknown desc = failed to pull and unpack image "private.example/app:2": failed to resolve reference "private.example/app:2": pull access denied, repository does not exist or may require authorization`,
			`cannot pull the image "private.example/app:2": failed to resolve reference "private.example/app:2": pull access denied, repository does not exist or may require authorization`, `failed to resolve reference "private.example/app:2": pull access denied, repository does not exist or may require authorization`},
		{"ImagePullBackOff", "web:nope", `Back-off pulling image "web:nope"`, `cannot pull the image "web:nope" (ImagePullBackOff)`, ""},
		{"ErrImagePull", "", "manifest unknown", "cannot pull the image: manifest unknown", "manifest unknown"},
		{"InvalidImageName", "Web:UPPER", `Failed to apply default image tag "Web:UPPER": couldn't parse image name`, `invalid image name "Web:UPPER": Failed to apply default image tag "Web:UPPER": couldn't parse image name`, `Failed to apply default image tag "Web:UPPER": couldn't parse image name`},
	} {
		got, facts := pullDetail(c.reason, c.image, c.message)
		if got != c.want || facts["pullError"] != c.answer {
			t.Errorf("pullDetail(%q, %q):\n got %q, pullError %q\nwant %q, pullError %q", c.reason, c.message, got, facts["pullError"], c.want, c.answer)
		}
	}
}

// TestConfigDetail: a CreateContainerConfigError names the Secret or
// ConfigMap, and the key, that the container's configuration misses.
func TestConfigDetail(t *testing.T) {
	for _, c := range []struct {
		message, want string
		facts         map[string]string
	}{
		{`secret "db" not found`, "Secret shop/db not found", map[string]string{"missingKind": "Secret", "missingName": "db"}},
		{`configmap "settings" not found`, "ConfigMap shop/settings not found", map[string]string{"missingKind": "ConfigMap", "missingName": "settings"}},
		{`couldn't find key password in Secret shop/db`, "key password not found in Secret shop/db", map[string]string{"missingKind": "Secret", "missingName": "db", "missingKey": "password"}},
		{`couldn't find key LEVEL in ConfigMap shop/settings`, "key LEVEL not found in ConfigMap shop/settings", map[string]string{"missingKind": "ConfigMap", "missingName": "settings", "missingKey": "LEVEL"}},
		{`container has runAsNonRoot and image will run as root`, "", nil},
	} {
		got, facts := configDetail("shop", c.message)
		if got != c.want || !maps.Equal(facts, c.facts) {
			t.Errorf("configDetail(%q) = %q %v, want %q %v", c.message, got, facts, c.want, c.facts)
		}
	}
}

// TestPullWaitIsTimedByThePod: a container waiting on its image carries
// the time its pod's conditions say the wait began — ContainersReady
// turning false, but not before the init containers finished; for an
// init container, Initialized turning false — so a for: on it does not
// start again when herald restarts or fails over.
func TestPullWaitIsTimedByThePod(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	cond := func(typ corev1.PodConditionType, status corev1.ConditionStatus, at time.Time) corev1.PodCondition {
		return corev1.PodCondition{Type: typ, Status: status, LastTransitionTime: metav1.NewTime(at)}
	}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}
	pod := func(conds ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
			Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "migrate"}}, Containers: []corev1.Container{{Name: "app"}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: conds,
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "web:nope", State: waiting}}}}
	}
	for _, tc := range []struct {
		what  string
		pod   *corev1.Pod
		since time.Time
	}{
		{"containers down since t0, init done before", pod(cond(corev1.PodInitialized, corev1.ConditionTrue, t0.Add(-time.Minute)), cond(corev1.ContainersReady, corev1.ConditionFalse, t0)), t0},
		{"init done after the containers went down", pod(cond(corev1.PodInitialized, corev1.ConditionTrue, t0.Add(time.Minute)), cond(corev1.ContainersReady, corev1.ConditionFalse, t0)), t0.Add(time.Minute)},
		{"no conditions", pod(), time.Time{}},
	} {
		d, err := detectImagePull(tc.pod, Params{}, t0)
		if err != nil || len(d) != 1 {
			t.Fatalf("%s: %v %+v", tc.what, err, d)
		}
		if !d[0].Since.Equal(tc.since) {
			t.Errorf("%s: since %s, want %s", tc.what, d[0].Since, tc.since)
		}
	}
	initPod := pod(cond(corev1.PodInitialized, corev1.ConditionFalse, t0), cond(corev1.ContainersReady, corev1.ConditionFalse, t0.Add(-time.Hour)))
	initPod.Status.ContainerStatuses = nil
	initPod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "migrate", Image: "migrate:nope", State: waiting}}
	if d, _ := detectImagePull(initPod, Params{}, t0); len(d) != 1 || !d[0].Since.Equal(t0) {
		t.Errorf("an init container waiting on its image: %+v, want since %s (Initialized turning false)", d, t0)
	}
}

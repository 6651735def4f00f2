package rules

import (
	"maps"
	"testing"
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

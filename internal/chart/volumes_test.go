package chart

import (
	"strings"
	"testing"
)

// TestVolumeStatsGrantOnlyWhenEnabled: nodes/proxy (get, nothing else)
// only with volumeStats.enabled, which adds the volume-filling rule; a
// volume-filling rule of extraRules without it is refused, saying why.
func TestVolumeStatsGrantOnlyWhenEnabled(t *testing.T) {
	if heraldMay(t, "", "nodes/proxy", "get") {
		t.Error("herald may get nodes/proxy by default")
	}
	on := []string{"--set", "volumeStats.enabled=true"}
	if !heraldMay(t, "", "nodes/proxy", "get", on...) || !heraldMay(t, "", "persistentvolumeclaims", "watch", on...) || !heraldMay(t, "", "nodes", "list", on...) {
		t.Error("volumeStats.enabled: herald may not read the kubelets' stats, the claims or the nodes")
	}
	for _, verb := range []string{"create", "update", "patch", "delete", "list"} {
		if heraldMay(t, "", "nodes/proxy", verb, on...) {
			t.Errorf("herald may %s nodes/proxy: get is all it needs", verb)
		}
	}
	out, err := helm(t, "template", "herald", chartDir, "--kube-version", "1.36.0", "--set-json", `extraRules=[{"name":"disk","kind":"PersistentVolumeClaim","detector":"volume-filling"}]`)
	if err == nil || !strings.Contains(out, "rule disk uses volume-filling, which reads the kubelets' volume stats through nodes/proxy") || !strings.Contains(out, "set volumeStats.enabled=true") {
		t.Errorf("a volume-filling rule without volumeStats.enabled: err %v, output:\n%s", err, out)
	}
}

// TestVolumeStatsValuesRefused: a critical threshold below the warning
// one stops the install with the values' names, not a crash-looping pod.
func TestVolumeStatsValuesRefused(t *testing.T) {
	out, err := helm(t, "template", "herald", chartDir, "--kube-version", "1.36.0", "--set", "volumeStats.enabled=true", "--set", "volumeStats.threshold=95")
	if err == nil || !strings.Contains(out, "volumeStats.critical (90) is below volumeStats.threshold (95)") {
		t.Errorf("critical below threshold: err %v, output:\n%s", err, out)
	}
}

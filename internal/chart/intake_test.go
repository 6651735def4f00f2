package chart

import (
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// intakeArgs turn the Alertmanager receiver on, over TLS with a client
// CA.
var intakeArgs = []string{
	"--set", "intake.alertmanager.enabled=true",
	"--set", "intake.alertmanager.tls.existingSecret=herald-intake-tls",
	"--set", "intake.alertmanager.tls.clientCA=true",
	"--set", "networkPolicy.enabled=true",
}

// TestIntakeValues: intake.alertmanager.enabled gives herald's
// configuration a receiver that reads its token and certificates from
// the mounted Secrets (read-only, the token's key alone), a port and a
// Service for it, a way in through the NetworkPolicy, and a change to
// the receiver rolls the pods (herald reads it at start only).
func TestIntakeValues(t *testing.T) {
	var cm corev1.ConfigMap
	rendered(t, "ConfigMap", "herald", &cm, intakeArgs...)
	var cfg struct {
		Intake struct {
			Alertmanager struct {
				Listen string
				Token  struct{ File string }
				TLS    struct {
					CertFile     string `yaml:"certFile"`
					KeyFile      string `yaml:"keyFile"`
					ClientCAFile string `yaml:"clientCAFile"`
				} `yaml:"tls"`
			}
		}
	}
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &cfg); err != nil {
		t.Fatal(err)
	}
	am := cfg.Intake.Alertmanager
	if am.Listen != ":9094" || am.Token.File != "/var/run/secrets/herald/intake/token" ||
		am.TLS.CertFile != "/var/run/secrets/herald/intake-tls/tls.crt" || am.TLS.KeyFile != "/var/run/secrets/herald/intake-tls/tls.key" ||
		am.TLS.ClientCAFile != "/var/run/secrets/herald/intake-tls/ca.crt" {
		t.Errorf("the receiver's configuration: %+v", am)
	}

	var d appsv1.Deployment
	rendered(t, "Deployment", "herald", &d, intakeArgs...)
	c := d.Spec.Template.Spec.Containers[0]
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "intake" && p.ContainerPort == 9094 }) {
		t.Errorf("no intake port 9094: %+v", c.Ports)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	if v := volumes["intake-token"]; v.Secret == nil || v.Secret.SecretName != "herald-intake" ||
		!slices.Equal(v.Secret.Items, []corev1.KeyToPath{{Key: "token", Path: "token"}}) {
		t.Errorf("the token's volume: %+v", v)
	}
	if v := volumes["intake-tls"]; v.Secret == nil || v.Secret.SecretName != "herald-intake-tls" {
		t.Errorf("the certificate's volume: %+v", v)
	}
	for name, path := range map[string]string{"intake-token": "/var/run/secrets/herald/intake", "intake-tls": "/var/run/secrets/herald/intake-tls"} {
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == name && m.MountPath == path && m.ReadOnly }) {
			t.Errorf("%s is not mounted read-only at %s: %+v", name, path, c.VolumeMounts)
		}
	}

	var svc corev1.Service
	rendered(t, "Service", "herald-intake", &svc, intakeArgs...)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9094 || svc.Spec.Ports[0].TargetPort.String() != "intake" ||
		svc.Spec.Selector["app.kubernetes.io/name"] != "herald" {
		t.Errorf("the intake Service: %+v", svc.Spec)
	}
	var np networkingv1.NetworkPolicy
	rendered(t, "NetworkPolicy", "herald", &np, intakeArgs...)
	if !slices.ContainsFunc(np.Spec.Ingress, func(r networkingv1.NetworkPolicyIngressRule) bool {
		return len(r.Ports) == 1 && r.Ports[0].Port.IntValue() == 9094
	}) {
		t.Errorf("the NetworkPolicy lets nothing in on 9094: %+v", np.Spec.Ingress)
	}

	// Off, none of it.
	out, err := helm(t, "template", "herald", chartDir, "--kube-version", "1.36.0")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"herald-intake", "intake:", "9094"} {
		if strings.Contains(out, s) {
			t.Errorf("the receiver off, the chart still renders %q", s)
		}
	}

	// A CA of its own for Alertmanager's certificate: its ca.crt alone,
	// mounted apart from herald's certificate.
	own := append(slices.Clone(intakeArgs[:4]), "--set", "intake.alertmanager.tls.clientCASecret=alertmanager-client-ca")
	rendered(t, "ConfigMap", "herald", &cm, own...)
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &cfg); err != nil {
		t.Fatal(err)
	}
	if f := cfg.Intake.Alertmanager.TLS.ClientCAFile; f != "/var/run/secrets/herald/intake-client-ca/ca.crt" {
		t.Errorf("clientCASecret: the client CA file is %q", f)
	}
	var d2 appsv1.Deployment
	rendered(t, "Deployment", "herald", &d2, own...)
	if !slices.ContainsFunc(d2.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == "intake-client-ca" && v.Secret != nil && v.Secret.SecretName == "alertmanager-client-ca" &&
			slices.Equal(v.Secret.Items, []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}})
	}) || !slices.ContainsFunc(d2.Spec.Template.Spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "intake-client-ca" && m.MountPath == "/var/run/secrets/herald/intake-client-ca" && m.ReadOnly
	}) {
		t.Errorf("clientCASecret: its ca.crt is not mounted alone and read-only: %+v", d2.Spec.Template.Spec.Volumes)
	}

	checksum := func(args ...string) string { return podAnnotation(t, "checksum/intake", args...) }
	on := checksum(intakeArgs...)
	if on == "" || checksum() != "" {
		t.Errorf("checksum/intake: %q with the receiver, %q without; want one only with", on, checksum())
	}
	mapped := append(slices.Clone(intakeArgs), "--set-json", `intake.alertmanager.settings={"objects":[{"alertname":"QueueStuck","kind":"Deployment","nameLabel":"app"}]}`)
	if checksum(mapped...) == on {
		t.Error("a new alert mapping leaves the pod template as it was: herald would refuse it at reload and keep the old ones")
	}
}

// TestIntakeRefused: what the templates refuse, and what they say.
func TestIntakeRefused(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		// The schema's refusal names the value.
		{[]string{"--set", "intake.alertmanager.existingSecret="}, "at '/intake/alertmanager/existingSecret': '' does not match pattern"},
		{[]string{"--set-json", `config.intake={"alertmanager":{"listen":":9095","token":{"file":"/t"}}}`}, "give the receiver in one place"},
		{[]string{"--set", "intake.alertmanager.tls.clientCASecret=ca"}, "clientCASecret needs intake.alertmanager.tls.existingSecret"},
		{[]string{"--set", "intake.alertmanager.tls.existingSecret=tls", "--set", "intake.alertmanager.tls.clientCASecret=ca", "--set", "intake.alertmanager.tls.clientCA=true"}, "give the client CA in one place"},
		{[]string{"--set-json", `secrets=[{"name":"intake-tls","existingSecret":"x"}]`}, "the name intake-tls is the Alertmanager receiver's mount"},
	} {
		out, err := helm(t, append([]string{"template", "herald", chartDir, "--kube-version", "1.36.0", "--set", "intake.alertmanager.enabled=true"}, tt.args...)...)
		if err == nil || !strings.Contains(out, tt.want) {
			t.Errorf("%v: err %v, output:\n%s\nwant it to say %q", tt.args, err, out, tt.want)
		}
	}
}

package chart

import (
	"bytes"
	"errors"
	"io"
	"net/netip"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// renderKind renders the chart with args and decodes its objects of kind
// into out (a pointer to a slice of the typed object).
func networkPolicies(t *testing.T, args ...string) []networkingv1.NetworkPolicy {
	t.Helper()
	out, err := helm(t, append([]string{"template", "herald", chartDir, "-n", "herald", "--kube-version", "1.36.0"}, args...)...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var nps []networkingv1.NetworkPolicy
	for _, doc := range strings.Split(out, "\n---") {
		if !strings.Contains(doc, "kind: NetworkPolicy") {
			continue
		}
		var np networkingv1.NetworkPolicy
		if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(doc)), 4096).Decode(&np); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		nps = append(nps, np)
	}
	return nps
}

// allows reports whether the egress rules let a packet to addr:port out.
func allows(np networkingv1.NetworkPolicy, addr netip.Addr, port int32) bool {
	for _, rule := range np.Spec.Egress {
		portOK := len(rule.Ports) == 0
		for _, p := range rule.Ports {
			portOK = portOK || p.Port != nil && p.Port.IntVal == port
		}
		if !portOK {
			continue
		}
		for _, peer := range rule.To {
			if peer.IPBlock == nil {
				continue
			}
			if pfx := netip.MustParsePrefix(peer.IPBlock.CIDR); !pfx.Contains(addr) {
				continue
			}
			excepted := false
			for _, e := range peer.IPBlock.Except {
				excepted = excepted || netip.MustParsePrefix(e).Contains(addr)
			}
			if !excepted {
				return true
			}
		}
	}
	return false
}

// TestEgressPolicy: with networkPolicy.egress on, herald may reach DNS,
// the API server and its sinks on the ports their URLs name, nothing
// else, and never a link-local or cloud metadata address, on any port.
func TestEgressPolicy(t *testing.T) {
	sinks := `config.sinks=[{"name":"slack","slack":{"token":{"file":"/x"},"channel":"#a"}},` +
		`{"name":"hook","webhook":{"url":"https://hooks.example.com:8443/x"}},{"name":"secret-url","webhook":{"urlFrom":{"file":"/y"}}},` +
		`{"name":"bus","nats":{"url":"nats://nats.messaging:4222, tls://nats-2:4443"}},{"name":"am","alertmanager":{"urls":["http://am.monitoring:9093"]}}]`
	nps := networkPolicies(t, "--set", "networkPolicy.egress.enabled=true", "--set-json", sinks)
	if len(nps) != 1 || !slices.Contains(nps[0].Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || slices.Contains(nps[0].Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Fatalf("want one NetworkPolicy for egress only: %+v", nps)
	}
	np := nps[0]
	public := netip.MustParseAddr("203.0.113.7")
	for _, port := range []int32{443, 6443, 8443, 4222, 4443, 9093} {
		if !allows(np, public, port) {
			t.Errorf("egress to port %d (the API server or a sink) is not allowed", port)
		}
	}
	for _, port := range []int32{22, 80, 5432, 8080} {
		if allows(np, public, port) {
			t.Errorf("egress to port %d, which no sink uses, is allowed", port)
		}
	}
	for _, metadata := range []string{"169.254.169.254", "169.254.170.2", "fd00:ec2::254", "fe80::1"} {
		for _, port := range []int32{53, 80, 443, 6443, 8443, 4222, 9093} {
			if allows(np, netip.MustParseAddr(metadata), port) {
				t.Errorf("egress to %s:%d (link-local, cloud metadata) is allowed", metadata, port)
			}
		}
	}
	dns := np.Spec.Egress[0]
	if len(dns.To) == 0 || dns.To[0].NamespaceSelector == nil || dns.To[0].PodSelector.MatchLabels["k8s-app"] != "kube-dns" || dns.Ports[0].Port.IntVal != 53 {
		t.Errorf("no DNS rule first: %+v", dns)
	}

	// Narrowed: the API server only at its endpoint; a CIDR of every
	// address still leaves link-local out.
	np = networkPolicies(t, "--set", "networkPolicy.egress.enabled=true", "--set-json", sinks,
		"--set-json", `networkPolicy.egress.apiServerCIDRs=["10.0.0.10/32"]`, "--set-json", `networkPolicy.egress.sinkCIDRs=["0.0.0.0/0"]`)[0]
	if allows(np, public, 6443) || !allows(np, netip.MustParseAddr("10.0.0.10"), 6443) {
		t.Error("apiServerCIDRs does not narrow the API server rule")
	}
	if allows(np, netip.MustParseAddr("169.254.169.254"), 443) || !allows(np, public, 8443) {
		t.Error("sinkCIDRs 0.0.0.0/0 lets metadata through, or the sinks not")
	}
	// The examples turn it on.
	if nps := networkPolicies(t, "-f", "../../examples/chart/values.yaml"); len(nps) != 1 || len(nps[0].Spec.PolicyTypes) != 2 {
		t.Errorf("examples/chart/values.yaml: want a NetworkPolicy for ingress and egress, got %+v", nps)
	}
}

// TestMetricsIngressFrom: networkPolicy.metricsFrom says who may scrape
// the metrics port (the examples: Prometheus' namespace only); without
// it, the port is open to any peer, and nothing else is.
func TestMetricsIngressFrom(t *testing.T) {
	np := networkPolicies(t, "-f", "../../examples/chart/values.yaml")[0]
	if len(np.Spec.Ingress) != 1 {
		t.Fatalf("ingress rules %+v, want one", np.Spec.Ingress)
	}
	in := np.Spec.Ingress[0]
	if len(in.From) != 2 || in.From[0].NamespaceSelector == nil || in.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" {
		t.Errorf("examples/chart/values.yaml: metrics ingress from %+v, want the monitoring namespace and helm test's pod", in.From)
	}
	// helm test's pod asks /readyz: it must stay allowed.
	if test := in.From[len(in.From)-1]; test.PodSelector == nil || test.NamespaceSelector != nil || test.PodSelector.MatchLabels["app.kubernetes.io/name"] != "herald-test" {
		t.Errorf("helm test's pod is not among who may reach the metrics port: %+v", in.From)
	}
	if len(in.Ports) != 1 || in.Ports[0].Port.IntVal != 8080 {
		t.Errorf("ingress ports %+v, want the metrics port only", in.Ports)
	}
	open := networkPolicies(t, "--set", "networkPolicy.enabled=true")[0]
	if len(open.Spec.Ingress) != 1 || len(open.Spec.Ingress[0].From) != 0 {
		t.Errorf("without metricsFrom: %+v, want the metrics port from any peer", open.Spec.Ingress)
	}
}

// TestSecretsNeedExplicitAccess: a rule on Secrets, or an extra RBAC rule
// that would grant them, fails the render unless allowSecretsAccess is
// true; only then does the ClusterRole grant Secrets.
func TestSecretsNeedExplicitAccess(t *testing.T) {
	rule := `config.rules=[{"name":"tls-expiry","kind":"Secret","condition":"true","sinks":["slack"]}]`
	base := []string{"template", "herald", chartDir, "--kube-version", "1.36.0"}
	out, err := helm(t, append(base, "--set-json", rule)...)
	if err == nil || !strings.Contains(out, "rule tls-expiry watches Secrets") || !strings.Contains(out, "allowSecretsAccess=true") {
		t.Errorf("a Secret rule without allowSecretsAccess: err %v\n%s", err, out)
	}
	for _, extra := range []string{`[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}]`, `[{"apiGroups":["*"],"resources":["*"],"verbs":["list"]}]`} {
		out, err = helm(t, append(base, "--set-json", "rbac.extraRules="+extra)...)
		if err == nil || !strings.Contains(out, "rbac.extraRules grants Secrets") {
			t.Errorf("extraRules %s: err %v\n%s", extra, err, out)
		}
	}
	out, err = helm(t, append(base, "--set-json", rule, "--set", "allowSecretsAccess=true")...)
	if err != nil || !strings.Contains(out, `resources: ["secrets"]`) {
		t.Errorf("allowSecretsAccess=true: err %v; the ClusterRole must grant secrets:\n%s", err, out)
	}
}

// TestKubeLogVerbosityCapped: above 5 only with forceKubeLogVerbosity,
// which also passes herald's flag.
func TestKubeLogVerbosityCapped(t *testing.T) {
	base := []string{"template", "herald", chartDir, "--kube-version", "1.36.0"}
	if out, err := helm(t, append(base, "--set", "kubeLogVerbosity=5")...); err != nil || strings.Contains(out, "--force-kube-log-verbosity") {
		t.Errorf("5: err %v", err)
	}
	if out, err := helm(t, append(base, "--set", "kubeLogVerbosity=8")...); err == nil || !strings.Contains(out, "forceKubeLogVerbosity=true") {
		t.Errorf("8 unforced: err %v\n%s", err, out)
	}
	out, err := helm(t, append(base, "--set", "kubeLogVerbosity=8", "--set", "forceKubeLogVerbosity=true")...)
	if err != nil || !strings.Contains(out, "--kube-log-verbosity=8\n            - --force-kube-log-verbosity") {
		t.Errorf("8 forced: err %v\n%s", err, out)
	}
}

// TestImageDigest: image.digest pins the image (repository@digest, the
// tag left out); a malformed digest is refused.
func TestImageDigest(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	base := []string{"template", "herald", chartDir, "--kube-version", "1.36.0"}
	out, err := helm(t, append(base, "--set", "image.digest="+digest, "--set", "image.tag=moving")...)
	if err != nil || !strings.Contains(out, `image: "ghcr.io/herald-k8s/herald@`+digest+`"`) || strings.Contains(out, ":moving") {
		t.Errorf("digest: err %v\n%s", err, out)
	}
	for _, bad := range []string{"sha256:abc", "latest", "sha256:" + strings.Repeat("G", 64)} {
		if out, err := helm(t, append(base, "--set", "image.digest="+bad)...); err == nil {
			t.Errorf("digest %q accepted:\n%s", bad, out)
		}
	}
}

// TestEgressPolicyReachesDestinations: the named destinations routes may
// choose (config/routes.go) are reachable too: a URL's port, 443 for one
// read from a Secret.
func TestEgressPolicyReachesDestinations(t *testing.T) {
	sinks := `config.sinks=[{"name":"slack","slack":{"token":{"file":"/x"},"channel":"#a"}},` +
		`{"name":"hook","webhook":{"url":"https://hooks.example.com/x","destinations":{"payments":{"url":"https://pay.example.com:9443/x"}}}},` +
		`{"name":"teams","teams":{"url":"https://teams.example.com/x","destinations":{"search":{"urlFrom":{"file":"/z"}}}}}]`
	nps := networkPolicies(t, "--set", "networkPolicy.egress.enabled=true", "--set-json", sinks, "--set", "networkPolicy.egress.apiServerPorts={6443}")
	if len(nps) != 1 {
		t.Fatalf("want one NetworkPolicy: %+v", nps)
	}
	public := netip.MustParseAddr("203.0.113.7")
	if !allows(nps[0], public, 9443) {
		t.Error("egress to the webhook destination's port 9443 is not allowed")
	}
	if !allows(nps[0], public, 443) {
		t.Error("egress to 443 (Slack, and the Teams destination read from a Secret) is not allowed")
	}
	if allows(nps[0], public, 8443) {
		t.Error("egress to port 8443, which nothing uses, is allowed")
	}
}

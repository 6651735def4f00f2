package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

var certificateGVR = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}

// installCertificateCRD creates a CRD of cert-manager's Certificate (the
// group, version and names cert-manager serves; its schema left open:
// herald reads spec and status as cert-manager writes them) and waits
// until it is served.
func installCertificateCRD(t *testing.T, dyn dynamic.Interface) {
	installCRD(t, dyn, certificateGVR, "Certificate")
}

// certificate is a Certificate as cert-manager leaves it: its spec, and
// a status with notAfter and a Ready condition.
func certificate(name string, notAfter time.Time, ready, reason, message string, since time.Time) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec": map[string]any{"secretName": name, "dnsNames": []any{name + ".example.com"},
			"issuerRef": map[string]any{"name": "letsencrypt-prod", "kind": "ClusterIssuer"}},
		"status": map[string]any{
			"notAfter": notAfter.UTC().Format(time.RFC3339),
			"conditions": []any{map[string]any{"type": "Ready", "status": ready, "reason": reason, "message": message,
				"lastTransitionTime": since.UTC().Format(time.RFC3339)}},
		},
	}}
}

// TestCertificates: herald started before cert-manager's CRD says once
// that its Certificate rules wait, and nothing more while it is absent;
// once the CRD is served it watches Certificates without a restart. A
// certificate that enters its 14 days at a given second is notified then
// (nothing about it changes then: herald's own wake-up sees it), and one
// whose renewal has failed for 20 min is notified at once (its for: of
// 10 min counts from the condition), with cert-manager's reason.
func TestCertificates(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	recv := newReceiver(t)
	h := startedHerald(t, env, fmt.Sprintf(`
rules:
  - {name: cert-expiring, kind: Certificate, apiVersion: cert-manager.io/v1, detector: cert-expiring, sinks: [hook]}
  - {name: cert-not-ready, kind: Certificate, apiVersion: cert-manager.io/v1, detector: cert-not-ready, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, recv.URL))
	defer h.stop()
	said := func() int { return strings.Count(h.logs.String(), "cannot watch kind yet") }
	if n := said(); n != 1 || !strings.Contains(h.logs.String(), `level=WARN msg="cannot watch kind yet`) {
		t.Fatalf("the missing CRD was said %d times at start, want once, as a warning:\n%s", n, h.logs.String())
	}

	installCertificateCRD(t, dyn)
	// herald looks for kinds it could not watch every 30 s.
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 45*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(h.logs.String(), `msg="now watching kind" kind=Certificate.v1.cert-manager.io`), nil
	})
	if err != nil {
		t.Fatalf("Certificates not watched once the CRD was served:\n%s", h.logs.String())
	}
	if n := said(); n != 1 {
		t.Errorf("the missing CRD was said %d times, want once (no error loop)", n)
	}

	certs := dyn.Resource(certificateGVR).Namespace("default")
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	enters := now.Add(4 * time.Second) // notAfter − 14 days: whole seconds, as the API stores it
	if _, err := certs.Create(ctx, certificate("shop", enters.Add(14*24*time.Hour), "True", "Ready", "Certificate is up to date and has not expired", now.Add(-60*24*time.Hour)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := certs.Create(ctx, certificate("api", now.Add(20*24*time.Hour), "False", "Failed", "The certificate request has failed to complete and will be retried: ACME order failed: 429 rateLimited", now.Add(-20*time.Minute)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	failed := recv.next(t, 10*time.Second)
	if failed.Transition != "firing" || failed.Incident.Reason != "CertificateNotReady" || failed.Object.Name != "api" || failed.Facts["reason"] != "Failed" || !strings.Contains(failed.Text, "429 rateLimited") {
		t.Fatalf("first %s %s for %s (%s), want CertificateNotReady for api with cert-manager's reason", failed.Incident.Reason, failed.Transition, failed.Object.Name, failed.Text)
	}
	expiring := recv.next(t, time.Until(enters)+10*time.Second)
	if expiring.Transition != "firing" || expiring.Incident.Reason != "CertificateExpiring" || expiring.Object.Name != "shop" {
		t.Fatalf("then %s %s for %s (%s), want CertificateExpiring for shop", expiring.Incident.Reason, expiring.Transition, expiring.Object.Name, expiring.Text)
	}
	if at := time.Now(); at.Before(enters) {
		t.Fatalf("shop notified at %s, before it entered its 14 days (%s)", at.Format(time.StampMilli), enters.Format(time.StampMilli))
	}
	t.Logf("entered its window at %s, notified %s later: %s", enters.Format(time.StampMilli), time.Since(enters).Round(time.Millisecond), expiring.Text)
	if !strings.Contains(expiring.Text, "expires in 13 days") || !strings.Contains(expiring.Text, "shop.example.com") || !strings.Contains(expiring.Text, "ClusterIssuer letsencrypt-prod") {
		t.Errorf("the expiring message says %q", expiring.Text)
	}
}

package rules

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestCertExpiringWakes: a certificate 14 days and an hour from its end
// is quiet, and asks to be looked at again when the hour has passed —
// nothing about the Certificate changes then — and at that time fires,
// from when it entered the window.
func TestCertExpiringWakes(t *testing.T) {
	u := loadObject(t, "cert-ok.yaml").(*unstructured.Unstructured)
	notAfter := now.Add(14*24*time.Hour + time.Hour)
	if err := unstructured.SetNestedField(u.Object, notAfter.Format(time.RFC3339), "status", "notAfter"); err != nil {
		t.Fatal(err)
	}
	p := Params{Window: 14 * 24 * time.Hour}
	if got, _ := detectCertExpiring(u, p, now); len(got) != 0 {
		t.Fatalf("an hour before the window: %+v", got)
	}
	if wake := certWake(u, p, now); wake != time.Hour+time.Second {
		t.Errorf("wake in %s, want 1h (and a second)", wake)
	}
	later := now.Add(time.Hour + time.Second)
	got, _ := detectCertExpiring(u, p, later)
	if len(got) != 1 || !got[0].Since.Equal(now.Add(time.Hour)) || got[0].Facts["expiresIn"] != "13 days" || got[0].Facts["issuer"] != "Issuer internal-ca" {
		t.Fatalf("in the window: %+v", got)
	}
	if wake := certWake(u, p, later); wake != 0 {
		t.Errorf("in the window, wake %s: the detection holds by itself", wake)
	}
}

// TestCertificateShapes: what the detectors make of Certificates that
// are not what they expect: deleted, without status, with a notAfter
// that is not a time, or not a custom resource at all.
func TestCertificateShapes(t *testing.T) {
	u := loadObject(t, "cert-renewal-failing.yaml").(*unstructured.Unstructured)
	if got, _ := detectCertNotReady(u, Params{}, now); len(got) != 1 || got[0].Facts["reason"] != "Failed" || !strings.Contains(got[0].Detail, "1 more") {
		t.Errorf("not ready: %+v", got)
	}
	// As the cache keeps it: the first three names and how many.
	_ = unstructured.SetNestedStringSlice(u.Object, []string{"a.example.com", "b.example.com", "c.example.com"}, "spec", "dnsNames")
	_ = unstructured.SetNestedField(u.Object, int64(10), "spec", "dnsNamesTotal")
	if got, _ := detectCertNotReady(u, Params{}, now); len(got) != 1 || !strings.Contains(got[0].Detail, "c.example.com, 7 more") {
		t.Errorf("a cached Certificate of ten names: %+v", got)
	}
	u.SetDeletionTimestamp(&metav1.Time{Time: now})
	if got, _ := detectCertNotReady(u, Params{}, now); len(got) != 0 {
		t.Errorf("a Certificate being deleted: %+v", got)
	}
	bare := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": map[string]any{"name": "x"}}}
	for _, d := range []Detector{detectCertExpiring, detectCertNotReady} {
		if got, err := d(bare, Params{Window: time.Hour}, now); len(got) != 0 || err != nil {
			t.Errorf("no status: %+v, %v", got, err)
		}
	}
	_ = unstructured.SetNestedField(bare.Object, "soon", "status", "notAfter")
	if got, err := detectCertExpiring(bare, Params{Window: time.Hour}, now); len(got) != 0 || err != nil {
		t.Errorf("a notAfter that is not a time: %+v, %v", got, err)
	}
	if _, err := detectCertExpiring(&corev1.Pod{}, Params{}, now); err == nil {
		t.Error("a Pod was read as a Certificate")
	}
}

// TestShortLivedCertificates: a certificate of a week (an internal CA's)
// is always within 14 days of its end; it counts as expiring only once
// its renewal is an hour overdue, and herald looks again then.
func TestShortLivedCertificates(t *testing.T) {
	u := loadObject(t, "cert-ok.yaml").(*unstructured.Unstructured)
	set := func(field string, at time.Time) {
		if err := unstructured.SetNestedField(u.Object, at.Format(time.RFC3339), "status", field); err != nil {
			t.Fatal(err)
		}
	}
	set("notAfter", now.Add(5*24*time.Hour))
	set("renewalTime", now.Add(3*24*time.Hour)) // renewed with 2 days to go
	p := Params{Window: 14 * 24 * time.Hour}
	if got, _ := detectCertExpiring(u, p, now); len(got) != 0 {
		t.Errorf("a week's certificate before its renewal time: %+v", got)
	}
	if wake := certWake(u, p, now); wake != 3*24*time.Hour+time.Hour+time.Second {
		t.Errorf("wake in %s, want at the renewal time and an hour", wake)
	}
	later := now.Add(3*24*time.Hour + time.Hour + time.Second)
	if got, _ := detectCertExpiring(u, p, later); len(got) != 1 || !strings.Contains(got[0].Detail, "its renewal was due") {
		t.Errorf("an hour past its renewal time: %+v", got)
	}
}

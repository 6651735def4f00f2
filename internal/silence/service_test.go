package silence

import (
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
)

// TestPodsExplainTheirServicesEmptyEndpoints: a Service with no ready
// endpoint is muted while an incident of a workload it sends to is open —
// its pods' crash loop, or the workload's unavailability — and not by an
// incident of another workload, nor when it names none.
func TestPodsExplainTheirServicesEmptyEndpoints(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-5d8f-x2k4", Labels: map[string]string{"pod-template-hash": "5d8f"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-5d8f", Controller: ptr.To(true)}}}}
	objects := cached{{Kind: "Pod", Namespace: "shop", Name: "web-5d8f-x2k4"}: pod}
	m := NewMuter("herald", slog.New(slog.DiscardHandler))
	m.Configure(&config.Config{})
	m.Watch(objects)
	crash := podIncident("shop", "web-5d8f-x2k4")
	unavailable := &incident.Incident{ID: "u", Fingerprint: "u", Rule: "deployment-unavailable", Reason: "ReplicasUnavailable",
		Object: rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "web"}}
	service := func(workloads string) *incident.Incident {
		return &incident.Incident{ID: "s", Fingerprint: "s", Rule: "service-no-endpoints", Reason: "NoReadyEndpoints",
			Object: rules.ObjectRef{Kind: "Service", Namespace: "shop", Name: "web"}, Facts: map[string]string{WorkloadsFact: workloads}}
	}
	openOf := func(incs ...*incident.Incident) openSet {
		o := openSet{all: map[string]*incident.Incident{}, byReason: map[string]map[string]*incident.Incident{}}
		for _, inc := range incs {
			o.all[inc.ID] = inc
			if o.byReason[inc.Reason] == nil {
				o.byReason[inc.Reason] = map[string]*incident.Incident{}
			}
			o.byReason[inc.Reason][inc.ID] = inc
		}
		return o
	}
	if mute, ok := m.Mute(service("Deployment/web"), openOf(crash), now); !ok || mute.Source != crash.Fingerprint {
		t.Errorf("with its pods crash-looping: muted %v by %q; want inhibited by the crash loop", ok, mute.By)
	}
	if mute, ok := m.Mute(service("Deployment/web"), openOf(unavailable), now); !ok || mute.Source != "u" {
		t.Errorf("with its Deployment unavailable: muted %v by %q; want inhibited by it", ok, mute.By)
	}
	if mute, ok := m.Mute(service("Deployment/api"), openOf(crash, unavailable), now); ok {
		t.Errorf("a Service of another workload muted by %q", mute.By)
	}
	if mute, ok := m.Mute(service(""), openOf(crash, unavailable), now); ok {
		t.Errorf("a Service that selects no workload muted by %q", mute.By)
	}
	// A pod incident that does not keep pods unready explains nothing.
	restarts := podIncident("shop", "web-5d8f-x2k4")
	restarts.Reason, restarts.Rule = "Restarting", "pod-restarts"
	if mute, ok := m.Mute(service("Deployment/web"), openOf(restarts), now); ok {
		t.Errorf("muted by a restart count's incident %q", mute.By)
	}
}

// TestOneObjectsLouderAlertSpeaks: the built-in inhibitions where one
// incident of an object says what another of the same object says, and
// more — a certificate near its end that also fails to renew (the
// expiring alert carries cert-manager's reason), a claim almost full
// that was filling up (the critical alert) — mute the other on that
// object only.
func TestOneObjectsLouderAlertSpeaks(t *testing.T) {
	for _, tt := range []struct {
		name, kind, source, target string
	}{
		{"an expiring certificate explains its not being ready", "Certificate", "CertificateExpiring", "CertificateNotReady"},
		{"a volume almost full explains its filling up", "PersistentVolumeClaim", "VolumeAlmostFull", "VolumeFillingUp"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
			m := NewMuter("herald", slog.New(slog.DiscardHandler))
			m.Configure(&config.Config{})
			m.Watch(cached{})
			of := func(id, reason, name string) *incident.Incident {
				return &incident.Incident{ID: id, Fingerprint: id, Rule: "r-" + id, Reason: reason,
					Object: rules.ObjectRef{Kind: tt.kind, Namespace: "shop", Name: name}}
			}
			source := of("s", tt.source, "one")
			open := openSet{all: map[string]*incident.Incident{"s": source}, byReason: map[string]map[string]*incident.Incident{tt.source: {"s": source}}}
			if mute, ok := m.Mute(of("t", tt.target, "one"), open, now); !ok || mute.Source != "s" {
				t.Errorf("%s while %s: muted %v by %q", tt.target, tt.source, ok, mute.By)
			}
			if mute, ok := m.Mute(of("o", tt.target, "another"), open, now); ok {
				t.Errorf("another %s muted by %q", tt.kind, mute.By)
			}
		})
	}
}

package rules

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// certificateKind is cert-manager's Certificate as herald names the kind
// (KindID): rules watch it with kind: Certificate, apiVersion:
// cert-manager.io/v1. Read from the custom resource itself: no Secret
// (and no key) is read.
const certificateKind = "Certificate.v1.cert-manager.io"

// maxCertSaid bounds what a Certificate's alert repeats of its spec: DNS
// names are as many as its author wrote.
const maxCertSaid = 3

// certificate is what the detectors read of a Certificate.
type certificate struct {
	notAfter, renewal       time.Time
	ready                   string // the Ready condition: True, False, Unknown, "" (none)
	readyReason, readyMsg   string
	readySince              time.Time
	secret, issuer, dnsSaid string
}

func readCertificate(obj runtime.Object, detector string) (*certificate, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("%s detector got %T", detector, obj)
	}
	if u.GetDeletionTimestamp() != nil {
		return nil, nil
	}
	c := &certificate{}
	c.notAfter, _ = timeField(u, "status", "notAfter")
	c.renewal, _ = timeField(u, "status", "renewalTime")
	c.secret, _, _ = unstructured.NestedString(u.Object, "spec", "secretName")
	name, _, _ := unstructured.NestedString(u.Object, "spec", "issuerRef", "name")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "issuerRef", "kind")
	if name != "" {
		c.issuer = strings.TrimSpace(kind + " " + name)
	}
	names, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "dnsNames")
	total := int64(len(names))
	if t, ok, _ := unstructured.NestedInt64(u.Object, "spec", "dnsNamesTotal"); ok && t > total {
		total = t // the cache keeps the first few (watcher/keep.go)
	}
	names = names[:min(len(names), maxCertSaid)]
	if total > int64(len(names)) {
		names = append(names, fmt.Sprintf("%d more", total-int64(len(names))))
	}
	c.dnsSaid = strings.Join(names, ", ")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, raw := range conds {
		m, ok := raw.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		c.ready, _ = m["status"].(string)
		c.readyReason, _ = m["reason"].(string)
		c.readyMsg, _ = m["message"].(string)
		if s, ok := m["lastTransitionTime"].(string); ok {
			c.readySince, _ = time.Parse(time.RFC3339, s)
		}
	}
	return c, nil
}

func timeField(u *unstructured.Unstructured, fields ...string) (time.Time, bool) {
	s, ok, _ := unstructured.NestedString(u.Object, fields...)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

func (c *certificate) facts() map[string]string {
	f := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			f[k] = v
		}
	}
	set("secretName", c.secret)
	set("issuer", c.issuer)
	set("dnsNames", c.dnsSaid)
	if !c.notAfter.IsZero() {
		f["notAfter"] = c.notAfter.UTC().Format(time.RFC3339)
	}
	if !c.renewal.IsZero() {
		f["renewalTime"] = c.renewal.UTC().Format(time.RFC3339)
	}
	return f
}

// renewalGrace is how long past its renewal time a certificate may go
// unrenewed before it counts as failing: cert-manager renews within
// seconds to minutes.
const renewalGrace = time.Hour

// expiringFrom is when a certificate starts to count as expiring: when
// its notAfter is within the window, and its renewal is overdue — a
// certificate of a week (an internal CA's) is always within 14 days of
// its end, and is renewed well before it.
func (c *certificate) expiringFrom(window time.Duration) time.Time {
	from := c.notAfter.Add(-window)
	if !c.renewal.IsZero() && c.renewal.Add(renewalGrace).After(from) && c.renewal.Add(renewalGrace).Before(c.notAfter) {
		from = c.renewal.Add(renewalGrace)
	}
	return from
}

// detectCertExpiring fires while a Certificate's status.notAfter is
// within the rule's window (14 days by default) — or past — and its
// renewal is overdue: cert-manager renews at two thirds of a
// certificate's life (status.renewalTime), so one this close to its end
// is one whose renewal has been failing. It ends when a renewed
// certificate moves notAfter out of the window.
func detectCertExpiring(obj runtime.Object, p Params, now time.Time) ([]Detection, error) {
	c, err := readCertificate(obj, "cert-expiring")
	if c == nil || err != nil || c.notAfter.IsZero() {
		return nil, err
	}
	from := c.expiringFrom(p.Window)
	if now.Before(from) {
		return nil, nil
	}
	left := c.notAfter.Sub(now)
	var detail string
	if left > 0 {
		detail = fmt.Sprintf("the certificate expires in %s (%s)", days(left), c.notAfter.UTC().Format("2006-01-02 15:04 MST"))
	} else {
		detail = fmt.Sprintf("the certificate expired %s ago (%s)", days(-left), c.notAfter.UTC().Format("2006-01-02 15:04 MST"))
	}
	if !c.renewal.IsZero() && c.renewal.Before(now) {
		detail += fmt.Sprintf("; its renewal was due %s", c.renewal.UTC().Format("2006-01-02 15:04 MST"))
	}
	if c.ready == "False" {
		detail += fmt.Sprintf("; not Ready (%s): %s", c.readyReason, c.readyMsg)
	}
	detail += c.serves()
	facts := c.facts()
	facts["expiresIn"] = days(max(left, 0))
	return []Detection{{Reason: "CertificateExpiring", Since: from, Facts: facts, Detail: detail}}, nil
}

// certWake is how long until a Certificate's notAfter enters the window:
// the object does not change when it does.
func certWake(obj runtime.Object, p Params, now time.Time) time.Duration {
	c, err := readCertificate(obj, "cert-expiring")
	if c == nil || err != nil || c.notAfter.IsZero() {
		return 0
	}
	if from := c.expiringFrom(p.Window); from.After(now) {
		return from.Sub(now) + time.Second
	}
	return 0
}

// detectCertNotReady fires while a Certificate's Ready condition is
// False: cert-manager cannot issue or renew it (an issuer refused, a
// challenge fails, the Secret cannot be written), with its reason and
// message. A first issuance is Ready=False for a while too: the rule's
// for: (10m by default) counts from the condition's time.
func detectCertNotReady(obj runtime.Object, _ Params, _ time.Time) ([]Detection, error) {
	c, err := readCertificate(obj, "cert-not-ready")
	if c == nil || err != nil || c.ready != "False" {
		return nil, err
	}
	facts := c.facts()
	facts["reason"], facts["message"] = c.readyReason, c.readyMsg
	detail := fmt.Sprintf("the certificate is not Ready (%s): %s", c.readyReason, c.readyMsg)
	if !c.notAfter.IsZero() {
		detail += fmt.Sprintf("; the current one is valid until %s", c.notAfter.UTC().Format("2006-01-02 15:04 MST"))
	}
	detail += c.serves()
	return []Detection{{Reason: "CertificateNotReady", Since: c.readySince, Facts: facts, Detail: detail}}, nil
}

// serves says what the certificate is for: its DNS names, its issuer.
func (c *certificate) serves() string {
	var parts []string
	if c.dnsSaid != "" {
		parts = append(parts, "for "+c.dnsSaid)
	}
	if c.issuer != "" {
		parts = append(parts, "issued by "+c.issuer)
	}
	if c.secret != "" {
		parts = append(parts, "Secret "+c.secret)
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

// days says a duration in days (or hours, under two days).
func days(d time.Duration) string {
	if d < 48*time.Hour {
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

package intake

import (
	"encoding/json"
	"fmt"
	"regexp"
	"time"
)

// Message is Alertmanager's webhook payload, version 4 (the only version
// Alertmanager has sent since 0.8): one group of alerts.
type Message struct {
	Version  string  `json:"version"`
	GroupKey string  `json:"groupKey"`
	Status   string  `json:"status"`
	Receiver string  `json:"receiver"`
	Alerts   []Alert `json:"alerts"`
	// TruncatedAlerts is how many alerts Alertmanager left out
	// (webhook_configs.max_alerts).
	TruncatedAlerts int    `json:"truncatedAlerts"`
	ExternalURL     string `json:"externalURL"`
}

// Alert is one alert of a Message.
type Alert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// Bounds of what one message may hold. Alertmanager's groups are far
// smaller; beyond these a message is refused rather than half-taken.
const (
	maxAlerts      = 1000
	maxLabels      = 128
	maxAnnotations = 64
	maxLabelValue  = 4 << 10
	// maxAnnotationValue bounds an annotation's value: the summary and
	// description are kept while the alert fires.
	maxAnnotationValue = 16 << 10
)

var (
	// labelName is Prometheus' label name syntax.
	labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	// fingerprintRE is Alertmanager's fingerprint: 64 bits in hex.
	fingerprintRE = regexp.MustCompile(`^[0-9a-f]{16}$`)
)

// refusal is a request refused: the status to answer, a reason for the
// metric (one of a fixed few) and a text for the sender's log.
type refusal struct {
	status int
	reason string
	text   string
}

func (r *refusal) Error() string { return r.text }

func refuse(status int, reason, format string, args ...any) *refusal {
	return &refusal{status: status, reason: reason, text: fmt.Sprintf(format, args...)}
}

// decode reads a message and checks what herald relies on: the version,
// each alert's status, fingerprint and labels. Fields it does not know
// are ignored (a later Alertmanager may add some); what it knows must be
// well formed.
func decode(body []byte) (*Message, *refusal) {
	var m Message
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, refuse(400, "malformed", "the body is not a webhook message in JSON: %v", err)
	}
	if m.Version != "4" {
		return nil, refuse(400, "version", "webhook message version %q is not supported; herald reads version 4", m.Version)
	}
	if m.Status != "firing" && m.Status != "resolved" {
		return nil, refuse(400, "schema", "status must be firing or resolved, got %q", m.Status)
	}
	if len(m.Alerts) > maxAlerts {
		return nil, refuse(400, "schema", "%d alerts in one message; at most %d (set max_alerts in the webhook_config)", len(m.Alerts), maxAlerts)
	}
	for i, a := range m.Alerts {
		if err := checkAlert(a); err != "" {
			return nil, refuse(400, "schema", "alerts[%d]: %s", i, err)
		}
	}
	return &m, nil
}

func checkAlert(a Alert) string {
	switch {
	case a.Status != "firing" && a.Status != "resolved":
		return fmt.Sprintf("status must be firing or resolved, got %q", a.Status)
	case !fingerprintRE.MatchString(a.Fingerprint):
		return "fingerprint must be 16 hex digits (Alertmanager's)"
	case a.Labels["alertname"] == "":
		return "labels need alertname"
	case len(a.Labels) > maxLabels:
		return fmt.Sprintf("%d labels; at most %d", len(a.Labels), maxLabels)
	case len(a.Annotations) > maxAnnotations:
		return fmt.Sprintf("%d annotations; at most %d", len(a.Annotations), maxAnnotations)
	}
	for k, v := range a.Labels {
		if !labelName.MatchString(k) {
			return "a label name is not a Prometheus label name"
		}
		if len(v) > maxLabelValue {
			return fmt.Sprintf("label %s is longer than %d bytes", k, maxLabelValue)
		}
	}
	for k, v := range a.Annotations {
		if !labelName.MatchString(k) {
			return "an annotation name is not a Prometheus label name"
		}
		if len(v) > maxAnnotationValue {
			return fmt.Sprintf("annotation %s is longer than %d bytes", k, maxAnnotationValue)
		}
	}
	return ""
}

package changes

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	redactpkg "github.com/herald-k8s/herald/internal/redact"
)

// What the record reads of a workload besides its pod template: who wrote
// the spec last, the revision, and the annotations deployment tools leave.
// All of it is written by whoever can edit the workload, so every string
// kept is bounded.

const (
	revisionAnnotation    = "deployment.kubernetes.io/revision"
	changeCauseAnnotation = "kubernetes.io/change-cause"
	maxManager            = 64
	maxChangeCause        = 256
	maxToolValue          = 128
	maxToolKeys           = 4
)

// toolPrefixes are the annotation and label prefixes of the deployment
// tools whose tracking a message can quote: Argo CD, Flux's kustomize and
// helm controllers.
var toolPrefixes = []string{"argocd.argoproj.io/", "kustomize.toolkit.fluxcd.io/", "helm.toolkit.fluxcd.io/"}

// workloadView is what observe reads of one workload object.
type workloadView struct {
	kind       string
	meta       metav1.Object
	template   *corev1.PodTemplateSpec
	revision   string // Deployment: the annotation; StatefulSet: status.updateRevision
	generation int64
}

// view reads a workload; ok is false for anything else.
func view(obj any) (v workloadView, ok bool) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return workloadView{"Deployment", o, &o.Spec.Template, o.Annotations[revisionAnnotation], o.Generation}, true
	case *appsv1.StatefulSet:
		return workloadView{"StatefulSet", o, &o.Spec.Template, o.Status.UpdateRevision, o.Generation}, true
	case *appsv1.DaemonSet:
		// A DaemonSet's status names no revision; its generation counts
		// spec changes.
		return workloadView{"DaemonSet", o, &o.Spec.Template, "", o.Generation}, true
	}
	return workloadView{}, false
}

// specWriter is the manager of the newest managed-fields entry that owns
// part of the spec (not through a subresource: scale and status writers
// do not roll pods out), and when it wrote. Entries list every field a
// manager owns and the time of its last write, so this is "who last wrote
// the spec", not proof that it changed the template.
func specWriter(m metav1.Object) (manager string, at time.Time) {
	for _, e := range m.GetManagedFields() {
		if e.Subresource != "" || e.FieldsV1 == nil || e.Time == nil || !e.Time.After(at) {
			continue
		}
		if ownsSpec(e.FieldsV1.Raw) {
			manager, at = e.Manager, e.Time.Time
		}
	}
	return clipTo(manager, maxManager), at
}

// ownsSpec reports whether a field set owns part of f:spec at its top
// level (a label named "spec" is f:metadata's business).
func ownsSpec(raw []byte) bool {
	if !strings.Contains(string(raw), `"f:spec"`) {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return false
	}
	_, ok := top["f:spec"]
	return ok
}

// tools lists the deployment tools' annotations and labels, "key=value",
// sorted, bounded. Their values are written by whoever can edit the
// workload (a repository URL with its credentials, a token in a tracking
// annotation): each is redacted as a change-cause is (nil: values are
// left out).
func tools(m metav1.Object, redact func(string) string) []string {
	var out []string
	for _, kv := range []map[string]string{m.GetAnnotations(), m.GetLabels()} {
		for k, v := range kv {
			for _, p := range toolPrefixes {
				if strings.HasPrefix(k, p) {
					value := "…"
					if redact != nil {
						value = clipTo(redact(redactpkg.Bound(v, 8*maxToolValue)), maxToolValue)
					}
					out = append(out, clipTo(k, 96)+"="+value)
					break
				}
			}
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > maxToolKeys {
		out = append(out[:maxToolKeys:maxToolKeys], "and "+strconv.Itoa(len(out)-maxToolKeys)+" more")
	}
	return out
}

// clipTo bounds s to n bytes, on a UTF-8 boundary, and makes it one
// visible line: every string herald quotes from a workload, a ConfigMap
// or an annotation passes here, and a newline, a bidi override or a
// control character in it could otherwise forge a line of the alert (a
// fake "Undo:" command) or hide what it says.
func clipTo(s string, n int) string {
	s = visible(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// visible writes control, format (bidi) and line-separating characters
// as \uXXXX escapes, which read as what they are.
func visible(s string) string {
	clean := true
	for _, r := range s {
		if hidden(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hidden(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError ||
		unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

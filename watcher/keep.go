package watcher

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// What the cache keeps of objects other than compact pods. Whoever can
// edit an object can grow it to what the API allows (256 KB of
// annotations, as much again in a pod template's, a pod spec of any
// size), and herald caches every object of the kinds its rules watch: so
// it keeps only what its rules read. Annotations: herald's own
// (herald.io/…, which it reads: silence-until, slack-channel) and those a
// rule names; every one only when a rule reads them in a way herald cannot
// follow (internal/rules, annotations.go). Fields: when no rule reads the
// object whole (no CEL condition, no template over .Object), what no
// detector reads goes too: workloads' pod templates, nodes' image lists.

// Keep says what of one kind's objects the cache keeps.
type Keep struct {
	// Whole: a rule reads the object as a whole (CEL, templates); only
	// annotations are filtered. Otherwise fields no detector reads are
	// dropped as well.
	Whole bool
	// Annotations are the keys rules name, kept besides herald's own;
	// AllAnnotations keeps every one.
	Annotations    []string
	AllAnnotations bool
}

// KeepAll is what the cache keeps without KeepWhen: everything but
// managed fields, kubectl's last-applied copy and Secret values.
var KeepAll = Keep{Whole: true, AllAnnotations: true}

// Covers reports whether a cache made under k holds everything one made
// under n would: if not, a kind's informer must list again.
func (k Keep) Covers(n Keep) bool {
	if n.Whole && !k.Whole {
		return false
	}
	if k.AllAnnotations {
		return true
	}
	if n.AllAnnotations {
		return false
	}
	for _, a := range n.Annotations {
		if !slices.Contains(k.Annotations, a) {
			return false
		}
	}
	return true
}

// KeepWhen makes informers keep what keep(kind) says. It must come
// before any informer is made: one made earlier would cache whole
// objects for the life of the process, which is an error.
func (w *Watcher) KeepWhen(keep func(kind string) Keep) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.kinds) > 0 {
		return fmt.Errorf("informers for %s were made before what the cache keeps was set: they would cache whole objects", strings.Join(slices.Sorted(maps.Keys(w.kinds)), ", "))
	}
	w.keep = keep
	return nil
}

// Keeps returns what kind's informer was made to keep (false: none yet).
func (w *Watcher) Keeps(kind string) (Keep, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	kw, ok := w.kinds[kind]
	if !ok {
		return Keep{}, false
	}
	return kw.keep, true
}

// keepFor is what a new informer of kind keeps; w.mu must be held.
func (w *Watcher) keepFor(kind string) Keep {
	if w.keep == nil {
		return KeepAll
	}
	return w.keep(kind)
}

// Herald's own annotations are kept whatever the rules read, within
// bounds: a value longer than maxOwnAnnotation is none of herald's, and at
// most maxOwnAnnotations are kept (the first by key).
const (
	ownPrefix         = "herald.io/"
	maxOwnAnnotation  = 1 << 10
	maxOwnAnnotations = 16
)

// transform is the informer transform for Keep k: StripUnread, then what
// k drops.
func (k Keep) transform(obj any) (any, error) {
	obj, err := StripUnread(obj)
	if err != nil {
		return obj, err
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	m.SetAnnotations(k.annotations(m.GetAnnotations()))
	if tmpl := podTemplate(obj); tmpl != nil {
		if k.Whole {
			tmpl.Annotations = k.annotations(tmpl.Annotations)
		} else {
			*tmpl = corev1.PodTemplateSpec{}
		}
	}
	if !k.Whole {
		dropUnread(obj)
	}
	return obj, nil
}

// annotations returns the annotations of ann k keeps (nil if none).
func (k Keep) annotations(ann map[string]string) map[string]string {
	if k.AllAnnotations || len(ann) == 0 {
		return ann
	}
	var own []string
	out := map[string]string{}
	for key, v := range ann {
		switch {
		case strings.HasPrefix(key, ownPrefix) && len(v) <= maxOwnAnnotation:
			own = append(own, key)
		case slices.Contains(k.Annotations, key):
			out[key] = v
		}
	}
	sort.Strings(own)
	for _, key := range own[:min(len(own), maxOwnAnnotations)] {
		out[key] = ann[key]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// podTemplate is the pod template a workload carries (nil: none).
func podTemplate(obj any) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	case *appsv1.ReplicaSet:
		return &o.Spec.Template
	case *batchv1.Job:
		return &o.Spec.Template
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template
	}
	return nil
}

// dropUnread drops fields besides pod templates that no detector reads.
func dropUnread(obj any) {
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		o.Spec.VolumeClaimTemplates = nil
	case *corev1.Node:
		o.Status.Images = nil
	case *unstructured.Unstructured:
		if gvk := o.GroupVersionKind(); gvk.Group == "cert-manager.io" && gvk.Kind == "Certificate" {
			keepCertificate(o)
		}
	}
}

// maxCertNames bounds the DNS names a cached Certificate keeps: its
// alert says three and how many more.
const maxCertNames = 3

// keepCertificate keeps of a cert-manager Certificate what the
// certificate detectors read — its Secret's name, its issuer, its first
// DNS names and their count, its validity, renewal time and Ready
// condition — and drops the rest of its spec, which its author may make
// as large as the API allows and which holds literal keystore passwords
// (spec.keystores).
func keepCertificate(u *unstructured.Unstructured) {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	kept := map[string]any{}
	for _, k := range []string{"secretName", "issuerRef"} {
		if v, ok := spec[k]; ok {
			kept[k] = v
		}
	}
	if names, ok := spec["dnsNames"].([]any); ok {
		kept["dnsNames"] = names[:min(len(names), maxCertNames)]
		kept["dnsNamesTotal"] = int64(len(names))
	}
	keptStatus := map[string]any{}
	for _, k := range []string{"notBefore", "notAfter", "renewalTime"} {
		if v, ok := status[k]; ok {
			keptStatus[k] = v
		}
	}
	if conds, ok := status["conditions"].([]any); ok {
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
				keptStatus["conditions"] = []any{m}
			}
		}
	}
	u.Object = map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": u.Object["metadata"], "spec": kept, "status": keptStatus}
}

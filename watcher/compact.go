package watcher

import (
	"fmt"
	goruntime "runtime"
	"sync"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// CompactPod is how a pod is cached when no rule of the Pod kind needs
// the whole object (no CEL condition, no .Object in a template). Pods are
// most of a cluster's objects, and a decoded corev1.Pod of a real
// workload costs ~18 KB of heap; this keeps what the built-in detectors,
// scope filters and workload index read — ~1 KB.
//
// The metadata the event handlers and indexes read stays as fields (its
// repetitive strings interned across pods); the spec and status, trimmed
// to what the detectors read, are kept as protobuf and decoded only when
// a worker reconciles the pod (Watcher.Get does that), a few µs. The
// trimmed spec (containers' names, images, memory limits) is the same
// for every replica of a workload, so it is kept once for all of them;
// the node name, which differs, is kept apart.
type CompactPod struct {
	metav1.ObjectMeta
	nodeName string
	spec     *sharedSpec // the trimmed PodSpec but its node name
	status   []byte      // protobuf of the trimmed PodStatus; never modified
}

// sharedSpec is the encoding of a trimmed PodSpec, shared by the cached
// pods that have it; never modified. Only the encoding is kept: a decoded
// spec is many times its size, and a new leader reconciles every pod.
type sharedSpec struct {
	raw []byte
	// decoded is the spec last decoded, until the next collection:
	// expanded pods copy it (sharing its slices), so nothing holds it
	// once they are made. A crash storm in one workload decodes its spec
	// about once per collection rather than once per pod and reconcile,
	// and nothing stays in memory for it.
	mu      sync.Mutex
	decoded weak.Pointer[corev1.PodSpec]
}

// decode returns the spec decoded; it must not be modified, as other
// reconciles may be reading it.
func (s *sharedSpec) decode() (*corev1.PodSpec, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if spec := s.decoded.Value(); spec != nil {
		return spec, nil
	}
	spec := &corev1.PodSpec{}
	if err := spec.Unmarshal(s.raw); err != nil {
		return nil, err
	}
	s.decoded = weak.Make(spec)
	return spec, nil
}

// GetObjectKind is empty, as for every object of a typed informer.
func (c *CompactPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the metadata; the encoded spec and status are
// immutable and shared.
func (c *CompactPod) DeepCopyObject() runtime.Object {
	out := &CompactPod{nodeName: c.nodeName, spec: c.spec, status: c.status}
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// Pod decodes the cached pod into a corev1.Pod. Like every object a
// cache hands out it must not be modified: its metadata's maps and slices
// are the cache's, its spec's slices are shared with the other pods of
// its workload (sharedSpec.decode); the status is decoded anew.
func (c *CompactPod) Pod() (*corev1.Pod, error) {
	pod := &corev1.Pod{ObjectMeta: c.ObjectMeta}
	spec, err := c.spec.decode()
	if err != nil {
		return nil, fmt.Errorf("decoding cached pod %s/%s: %w", c.Namespace, c.Name, err)
	}
	pod.Spec = *spec
	pod.Spec.NodeName = c.nodeName
	if err := pod.Status.Unmarshal(c.status); err != nil {
		return nil, fmt.Errorf("decoding cached pod %s/%s: %w", c.Namespace, c.Name, err)
	}
	return pod, nil
}

// Compact returns the compact form of pod that a cache holds (with its own
// interner), for tests and benchmarks that check what is kept.
func Compact(pod *corev1.Pod) (*CompactPod, error) { return compactPod(pod, newInterner(1024)) }

// compactPod keeps of pod what the built-in pod detectors read: names,
// images and memory limits of containers (oomkilled reports the limit),
// init containers' restart policy (sidecars), the phase, reason, message,
// conditions, start time and container states.
func compactPod(pod *corev1.Pod, in *interner) (*CompactPod, error) {
	c := &CompactPod{ObjectMeta: metav1.ObjectMeta{
		Name:              pod.Name,
		Namespace:         in.get(pod.Namespace),
		UID:               pod.UID,
		ResourceVersion:   pod.ResourceVersion,
		Generation:        pod.Generation,
		CreationTimestamp: pod.CreationTimestamp,
		DeletionTimestamp: pod.DeletionTimestamp,
	}}
	if len(pod.Labels) > 0 {
		c.Labels = make(map[string]string, len(pod.Labels))
		for k, v := range pod.Labels {
			c.Labels[in.get(k)] = in.get(v)
		}
	}
	if v := pod.Annotations[SilenceUntilAnnotation]; v != "" && len(v) <= maxOwnAnnotation { // bounded as herald's own annotations are (keep.go)
		c.Annotations = map[string]string{SilenceUntilAnnotation: v}
	}
	if v := pod.Annotations[TeamAnnotation]; v != "" && len(v) <= maxTeam {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[TeamAnnotation] = in.get(v) // a team owns many pods: one copy
	}
	for _, o := range pod.OwnerReferences {
		o.APIVersion, o.Kind, o.Name, o.UID = in.get(o.APIVersion), in.get(o.Kind), in.get(o.Name), in.uid(o.UID)
		c.OwnerReferences = append(c.OwnerReferences, o)
	}
	c.nodeName = in.get(pod.Spec.NodeName)
	spec := corev1.PodSpec{Containers: trimContainers(pod.Spec.Containers), InitContainers: trimContainers(pod.Spec.InitContainers)}
	s := pod.Status
	status := corev1.PodStatus{Phase: s.Phase, Reason: s.Reason, Message: s.Message, StartTime: s.StartTime,
		ContainerStatuses: trimStatuses(s.ContainerStatuses), InitContainerStatuses: trimStatuses(s.InitContainerStatuses)}
	for _, cond := range s.Conditions {
		status.Conditions = append(status.Conditions, corev1.PodCondition{Type: cond.Type, Status: cond.Status,
			Reason: cond.Reason, Message: cond.Message, LastTransitionTime: cond.LastTransitionTime})
	}
	raw, err := spec.Marshal()
	if err != nil {
		return nil, err
	}
	c.spec = in.spec(raw)
	if c.status, err = status.Marshal(); err != nil {
		return nil, err
	}
	return c, nil
}

func trimContainers(cs []corev1.Container) []corev1.Container {
	var out []corev1.Container
	for _, c := range cs {
		t := corev1.Container{Name: c.Name, Image: c.Image, RestartPolicy: c.RestartPolicy}
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			t.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: q}
		}
		out = append(out, t)
	}
	return out
}

func trimStatuses(cs []corev1.ContainerStatus) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, c := range cs {
		out = append(out, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: c.Ready, Started: c.Started,
			RestartCount: c.RestartCount, State: trimState(c.State), LastTerminationState: trimState(c.LastTerminationState)})
	}
	return out
}

// trimState drops the container ID, the one per-run string in a state.
func trimState(s corev1.ContainerState) corev1.ContainerState {
	if s.Terminated != nil {
		t := *s.Terminated
		t.ContainerID = ""
		s.Terminated = &t
	}
	return s
}

// interner shares the memory of strings that repeat across cached
// objects (namespaces, label keys and values, owner names). It stops
// adding new strings at its limit, so values that never repeat (a label
// holding the pod's own name) cannot grow it without bound.
type interner struct {
	mu    sync.Mutex
	m     map[string]string
	limit int
	// specs holds each trimmed pod spec some cached pod has; an entry
	// goes when the last pod holding it does, so there is no limit to
	// reach: the pods bound it.
	specs map[string]weak.Pointer[sharedSpec]
}

func newInterner(limit int) *interner {
	return &interner{m: map[string]string{}, limit: limit, specs: map[string]weak.Pointer[sharedSpec]{}}
}

// spec returns the shared spec whose encoding is raw.
func (in *interner) spec(raw []byte) *sharedSpec {
	in.mu.Lock()
	defer in.mu.Unlock()
	if s := in.specs[string(raw)].Value(); s != nil {
		return s
	}
	key := string(raw)
	s := &sharedSpec{raw: []byte(key)}
	in.specs[key] = weak.Make(s)
	goruntime.AddCleanup(s, in.forgetSpec, key)
	return s
}

// forgetSpec drops the entry of a spec no cached pod holds any more
// (unless one with the same encoding took its place).
func (in *interner) forgetSpec(raw string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if wp, ok := in.specs[raw]; ok && wp.Value() == nil {
		delete(in.specs, raw)
	}
}

func (in *interner) get(s string) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.m[s]; ok {
		return v
	}
	if len(in.m) < in.limit {
		in.m[s] = s
	}
	return s
}

// getBytes is get for a string still in its encoding's bytes: a string
// already held costs no allocation.
func (in *interner) getBytes(b []byte) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.m[string(b)]; ok {
		return v
	}
	s := string(b)
	if len(in.m) < in.limit {
		in.m[s] = s
	}
	return s
}

func (in *interner) uid(u types.UID) types.UID { return types.UID(in.get(string(u))) }

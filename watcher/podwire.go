package watcher

// Pods decoded from the API server's protobuf straight into CompactPod.
// Decoding a whole corev1.Pod (its managedFields, volumes, environment,
// probes…) only to keep a tenth of it and encode that tenth again was the
// largest share of herald's CPU per notification (issue #17): every
// watch event of a crash-looping pod paid for it. decodeCompactPod walks
// the encoding instead, copies the kept fields of the spec and status
// without decoding them, and decodes only the metadata the event
// handlers read. Each kept field's wire type is checked where it is met
// (and a memory limit parsed), so that what is cached expands: an
// encoding the generated code would refuse fails here, naming the
// field, not when a worker reads the pod. compactPod (from a decoded
// Pod) stays for what arrives as JSON; TestDecodedAsCompacted holds the
// two to the same result.

import (
	"bytes"
	"fmt"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The fields of a Pod.
const (
	podMetadata protowire.Number = 1
	podSpec     protowire.Number = 2
	podStatus   protowire.Number = 3
)

// The field of a PodSpec kept apart from its trimmed copy.
const specNodeName protowire.Number = 10

// The fields of an ObjectMeta that decodeCompactMeta reads.
const (
	metaName              protowire.Number = 1
	metaNamespace         protowire.Number = 3
	metaUID               protowire.Number = 5
	metaResourceVersion   protowire.Number = 6
	metaGeneration        protowire.Number = 7
	metaCreationTimestamp protowire.Number = 8
	metaDeletionTimestamp protowire.Number = 9
	metaLabels            protowire.Number = 11
	metaAnnotations       protowire.Number = 12
	metaOwnerReferences   protowire.Number = 13
)

// What is kept of a pod, with numbers and wire types from
// k8s.io/api/core/v1/generated.proto and
// k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto. The spec and
// status are trimmed copies; the metadata is decoded (decodeCompactMeta,
// which checks its fields against keepMeta).
var (
	keepPod = messageOf[corev1.Pod](
		messageField(podMetadata, "ObjectMeta", keepMeta),
		messageField(podSpec, "Spec", keepSpec),
		messageField(podStatus, "Status", keepStatus))

	keepMeta = messageOf[metav1.ObjectMeta](
		stringField(metaName, "Name"),
		stringField(metaNamespace, "Namespace"),
		stringField(metaUID, "UID"),
		stringField(metaResourceVersion, "ResourceVersion"),
		varintField(metaGeneration, "Generation"),
		// These three are decoded by their generated Unmarshal, which
		// checks them.
		messageField(metaCreationTimestamp, "CreationTimestamp", nil),
		messageField(metaDeletionTimestamp, "DeletionTimestamp", nil),
		messageField(metaOwnerReferences, "OwnerReferences", nil),
		messageField(metaLabels, "Labels", keepStringEntry),
		messageField(metaAnnotations, "Annotations", keepStringEntry))
	keepStringEntry = mapEntries("", stringField(entryKey, "key"), stringField(entryValue, "value"))

	// PodSpec: containers, initContainers, nodeName.
	keepSpec = messageOf[corev1.PodSpec](
		messageField(2, "Containers", keepContainer),
		messageField(20, "InitContainers", keepContainer),
		stringField(specNodeName, "NodeName"))
	// The trimmed copy of a PodSpec a cached pod shares with the other
	// replicas of its workload: keepSpec but the node name, which
	// differs between them (decodeCompactPod reads it apart).
	keepSharedSpec = messageOf[corev1.PodSpec](
		messageField(2, "Containers", keepContainer),
		messageField(20, "InitContainers", keepContainer))
	// What the detectors read of a container: name, image, resources
	// (of which the memory limit only), restartPolicy (sidecars).
	keepContainer = messageOf[corev1.Container](
		stringField(1, "Name"),
		stringField(2, "Image"),
		messageField(8, "Resources", keepResources),
		stringField(24, "RestartPolicy"))
	keepResources   = messageOf[corev1.ResourceRequirements](messageField(1, "Limits", keepMemoryLimit))
	keepMemoryLimit = mapEntries(string(corev1.ResourceMemory),
		stringField(entryKey, "key"), messageField(entryValue, "value", keepQuantity))
	// Quantity's one field (quantity_proto.go), which must parse.
	keepQuantity = messageOf[resource.Quantity](
		protoField{num: 1, wire: wireBytes, name: "string", valid: validQuantity}).keptWhole()

	// PodStatus: phase, conditions, message, reason, startTime,
	// containerStatuses, initContainerStatuses.
	keepStatus = messageOf[corev1.PodStatus](
		stringField(1, "Phase"),
		messageField(2, "Conditions", keepCondition),
		stringField(3, "Message"),
		stringField(4, "Reason"),
		messageField(7, "StartTime", keepTime),
		messageField(8, "ContainerStatuses", keepContainerStatus),
		messageField(10, "InitContainerStatuses", keepContainerStatus))
	// PodCondition: type, status, lastTransitionTime, reason, message.
	keepCondition = messageOf[corev1.PodCondition](
		stringField(1, "Type"),
		stringField(2, "Status"),
		messageField(4, "LastTransitionTime", keepTime),
		stringField(5, "Reason"),
		stringField(6, "Message"))
	// ContainerStatus: name, state, lastState, ready, restartCount,
	// image, started.
	keepContainerStatus = messageOf[corev1.ContainerStatus](
		stringField(1, "Name"),
		messageField(2, "State", keepState),
		messageField(3, "LastTerminationState", keepState),
		varintField(4, "Ready"),
		varintField(5, "RestartCount"),
		stringField(6, "Image"),
		varintField(9, "Started"))
	keepState = messageOf[corev1.ContainerState](
		messageField(1, "Waiting", keepWaiting),
		messageField(2, "Running", keepRunning),
		messageField(3, "Terminated", keepTerminated))
	keepWaiting = messageOf[corev1.ContainerStateWaiting](stringField(1, "Reason"), stringField(2, "Message"))
	keepRunning = messageOf[corev1.ContainerStateRunning](messageField(1, "StartedAt", keepTime))
	// ContainerStateTerminated without its containerID (7), the one
	// per-run string of a state.
	keepTerminated = messageOf[corev1.ContainerStateTerminated](
		varintField(1, "ExitCode"),
		varintField(2, "Signal"),
		stringField(3, "Reason"),
		stringField(4, "Message"),
		messageField(5, "StartedAt", keepTime),
		messageField(6, "FinishedAt", keepTime))
	// A metav1.Time is encoded as a metav1.Timestamp.
	keepTime = messageOf[metav1.Timestamp](varintField(1, "Seconds"), varintField(2, "Nanos")).keptWhole()
)

func validQuantity(b []byte) error {
	_, err := resource.ParseQuantity(string(b))
	return err
}

// decodeCompactPod decodes a protobuf-encoded Pod (the message, without
// the "k8s\x00" envelope) into the CompactPod that compactPod makes of it.
// A message field met twice is merged into the first, as the generated
// Unmarshal does: the metadata is decoded into the same ObjectMeta, and
// the trimmed copies are concatenated, which decodes as their merge.
func decodeCompactPod(raw []byte, in *interner) (*CompactPod, error) {
	c := &CompactPod{}
	// The metadata first, so that errors name the pod.
	for msg := raw; len(msg) > 0; {
		f, rest, err := nextField(msg)
		if err != nil {
			return nil, fmt.Errorf("decoding a pod: %w", err)
		}
		msg = rest
		k := keepPod.field(f.num)
		if k == nil {
			continue
		}
		if err := k.check(f); err != nil {
			return nil, fmt.Errorf("decoding a pod: %w", err)
		}
		if f.num == podMetadata {
			if err := decodeCompactMeta(&c.ObjectMeta, f.val, in); err != nil {
				return nil, fmt.Errorf("decoding a pod: %w", inField(k.name, err))
			}
		}
	}
	if err := decodeNodeName(c, raw, in); err != nil {
		return nil, fmt.Errorf("decoding pod %s/%s: %w", c.Namespace, c.Name, err)
	}
	// The trimmed messages are written to a scratch buffer; the status
	// is kept in an allocation of its exact size (the cache holds it for
	// the pod's life), the spec shared with the pods that have the same.
	scratch := trimScratch.Get().(*[]byte)
	defer trimScratch.Put(scratch)
	buf, err := appendPodField((*scratch)[:0], raw, podSpec, keepSharedSpec)
	if err != nil {
		return nil, fmt.Errorf("decoding pod %s/%s: %w", c.Namespace, c.Name, err)
	}
	n := len(buf)
	if buf, err = appendPodField(buf, raw, podStatus, keepStatus); err != nil {
		return nil, fmt.Errorf("decoding pod %s/%s: %w", c.Namespace, c.Name, err)
	}
	*scratch = buf
	c.spec, c.status = in.spec(buf[:n]), bytes.Clone(buf[n:])
	return c, nil
}

// decodeNodeName reads the node name of pod's spec, which
// decodeCompactPod has walked already (the last one met, in the last
// spec that has one, as the generated Unmarshal has it).
func decodeNodeName(c *CompactPod, pod []byte, in *interner) error {
	spec := keepPod.field(podSpec)
	for len(pod) > 0 {
		f, rest, err := nextField(pod)
		if err != nil {
			return err
		}
		pod = rest
		if f.num != podSpec {
			continue
		}
		for msg := f.val; len(msg) > 0; {
			g, rest, err := nextField(msg)
			if err != nil {
				return inField(spec.name, err)
			}
			msg = rest
			if g.num != specNodeName {
				continue
			}
			k := keepSpec.field(g.num)
			if err := k.check(g); err != nil {
				return inField(spec.name, err)
			}
			c.nodeName = in.getBytes(g.val)
		}
	}
	return nil
}

var trimScratch = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// appendPodField appends the copy of each occurrence of field num of pod
// (whose encoding decodeCompactPod has walked already) trimmed to what t
// keeps.
func appendPodField(out, pod []byte, num protowire.Number, t *trim) ([]byte, error) {
	k := keepPod.field(num)
	for len(pod) > 0 {
		f, rest, err := nextField(pod)
		if err != nil {
			return nil, err
		}
		pod = rest
		if f.num == num {
			if out, err = appendTrimmed(out, f.val, t); err != nil {
				return nil, inField(k.name, err)
			}
		}
	}
	return out, nil
}

// decodeCompactMeta decodes what compactPod keeps of an ObjectMeta.
func decodeCompactMeta(m *metav1.ObjectMeta, msg []byte, in *interner) error {
	for len(msg) > 0 {
		f, rest, err := nextField(msg)
		if err != nil {
			return err
		}
		msg = rest
		k := keepMeta.field(f.num)
		if k == nil {
			continue
		}
		if err := k.check(f); err != nil {
			return err
		}
		switch f.num {
		case metaName:
			m.Name = string(f.val)
		case metaNamespace:
			m.Namespace = in.getBytes(f.val)
		case metaUID:
			m.UID = types.UID(f.val)
		case metaResourceVersion:
			m.ResourceVersion = string(f.val)
		case metaGeneration:
			v, _ := protowire.ConsumeVarint(f.val)
			m.Generation = int64(v)
		case metaCreationTimestamp:
			if err := m.CreationTimestamp.Unmarshal(f.val); err != nil {
				return inField(k.name, err)
			}
		case metaDeletionTimestamp:
			t := &metav1.Time{}
			if err := t.Unmarshal(f.val); err != nil {
				return inField(k.name, err)
			}
			m.DeletionTimestamp = t
		case metaLabels:
			key, val, err := mapEntry(f.val)
			if err != nil {
				return inField(k.name, err)
			}
			if m.Labels == nil {
				m.Labels = map[string]string{}
			}
			m.Labels[in.getBytes(key)] = in.getBytes(val)
		case metaAnnotations:
			key, val, err := mapEntry(f.val)
			if err != nil {
				return inField(k.name, err)
			}
			switch string(key) {
			case SilenceUntilAnnotation, metav1.InitialEventsAnnotationKey:
				// The second marks the bookmark that ends a watch's
				// initial events (a streaming list); the informer reads
				// it before the object reaches a cache. An empty value
				// (the last one counts) is no annotation, as compactPod
				// has it; nor is a silence-until longer than any of
				// herald's (a time is 25 bytes; a pod's author chose it).
				switch {
				case len(val) > 0 && (string(key) != SilenceUntilAnnotation || len(val) <= maxOwnAnnotation):
					if m.Annotations == nil {
						m.Annotations = map[string]string{}
					}
					m.Annotations[string(key)] = string(val)
				case m.Annotations != nil:
					delete(m.Annotations, string(key))
				}
			case TeamAnnotation:
				switch {
				case len(val) > 0 && len(val) <= maxTeam:
					if m.Annotations == nil {
						m.Annotations = map[string]string{}
					}
					m.Annotations[TeamAnnotation] = in.getBytes(val)
				case m.Annotations != nil:
					delete(m.Annotations, TeamAnnotation)
				}
			}
		case metaOwnerReferences:
			var o metav1.OwnerReference
			if err := o.Unmarshal(f.val); err != nil {
				return inField(k.name, err)
			}
			o.APIVersion, o.Kind, o.Name, o.UID = in.get(o.APIVersion), in.get(o.Kind), in.get(o.Name), in.uid(o.UID)
			m.OwnerReferences = append(m.OwnerReferences, o)
		}
	}
	return nil
}

// mapEntry returns the key and value of an entry of a map<string,
// string>.
func mapEntry(msg []byte) (key, val []byte, err error) {
	for len(msg) > 0 {
		f, rest, err := nextField(msg)
		if err != nil {
			return nil, nil, err
		}
		msg = rest
		k := keepStringEntry.field(f.num)
		if k == nil {
			continue
		}
		if err := k.check(f); err != nil {
			return nil, nil, err
		}
		if f.num == entryKey {
			key = f.val
		} else {
			val = f.val
		}
	}
	return key, val, nil
}

package watcher

// Pods decoded from the API server's protobuf straight into CompactPod.
// Decoding a whole corev1.Pod (its managedFields, volumes, environment,
// probes…) only to keep a tenth of it and encode that tenth again was the
// largest share of herald's CPU per notification (issue #17): every
// watch event of a crash-looping pod paid for it. decodeCompactPod walks
// the encoding instead, copies the kept fields of the spec and status
// without decoding them, and decodes only the metadata the event
// handlers read. compactPod (from a decoded Pod) stays for what arrives
// as JSON; TestDecodedAsCompacted holds the two to the same result.

import (
	"bytes"
	"fmt"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Field numbers from k8s.io/api/core/v1/generated.proto and
// k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto.
var (
	// What the detectors read of a container: name, image, resources
	// (of which the memory limit only), restartPolicy (sidecars).
	keepContainer = &trim{fields: map[protowire.Number]*trim{1: nil, 2: nil, 24: nil,
		8: {fields: map[protowire.Number]*trim{1: {onlyKey: "memory"}}}}}
	// PodSpec: containers, initContainers, nodeName.
	keepSpec = &trim{fields: map[protowire.Number]*trim{2: keepContainer, 20: keepContainer, 10: nil}}

	// ContainerStateTerminated without its containerID (7), the one
	// per-run string of a state.
	keepTerminated = &trim{fields: map[protowire.Number]*trim{1: nil, 2: nil, 3: nil, 4: nil, 5: nil, 6: nil}}
	keepState      = &trim{fields: map[protowire.Number]*trim{1: nil, 2: nil, 3: keepTerminated}}
	// ContainerStatus: name, state, lastState, ready, restartCount,
	// image, started.
	keepContainerStatus = &trim{fields: map[protowire.Number]*trim{1: nil, 2: keepState, 3: keepState, 4: nil, 5: nil, 6: nil, 9: nil}}
	// PodCondition: type, status, lastTransitionTime, reason, message.
	keepCondition = &trim{fields: map[protowire.Number]*trim{1: nil, 2: nil, 4: nil, 5: nil, 6: nil}}
	// PodStatus: phase, conditions, message, reason, startTime,
	// containerStatuses, initContainerStatuses.
	keepStatus = &trim{fields: map[protowire.Number]*trim{1: nil, 2: keepCondition, 3: nil, 4: nil, 7: nil,
		8: keepContainerStatus, 10: keepContainerStatus}}
)

// decodeCompactPod decodes a protobuf-encoded Pod (the message, without
// the "k8s\x00" envelope) into the CompactPod that compactPod makes of it.
func decodeCompactPod(raw []byte, in *interner) (*CompactPod, error) {
	c := &CompactPod{}
	var meta, spec, status []byte
	for msg := raw; len(msg) > 0; {
		f, rest, err := nextField(msg)
		if err != nil {
			return nil, fmt.Errorf("decoding a pod: %w", err)
		}
		msg = rest
		switch f.num {
		case 1:
			meta = f.val
		case 2:
			spec = f.val
		case 3:
			status = f.val
		}
	}
	if err := decodeCompactMeta(&c.ObjectMeta, meta, in); err != nil {
		return nil, fmt.Errorf("decoding a pod's metadata: %w", err)
	}
	// The trimmed messages are written to a scratch buffer and kept in
	// one allocation of their exact size: the cache holds them for the
	// pod's life.
	scratch := trimScratch.Get().(*[]byte)
	defer trimScratch.Put(scratch)
	buf, err := appendTrimmed((*scratch)[:0], spec, keepSpec)
	if err != nil {
		return nil, fmt.Errorf("decoding pod %s/%s: spec: %w", c.Namespace, c.Name, err)
	}
	n := len(buf)
	if buf, err = appendTrimmed(buf, status, keepStatus); err != nil {
		return nil, fmt.Errorf("decoding pod %s/%s: status: %w", c.Namespace, c.Name, err)
	}
	*scratch = buf
	kept := bytes.Clone(buf)
	c.spec, c.status = kept[:n:n], kept[n:]
	return c, nil
}

var trimScratch = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// decodeCompactMeta decodes what compactPod keeps of an ObjectMeta.
func decodeCompactMeta(m *metav1.ObjectMeta, msg []byte, in *interner) error {
	for len(msg) > 0 {
		f, rest, err := nextField(msg)
		if err != nil {
			return err
		}
		msg = rest
		switch f.num {
		case 1, 3, 5, 6, 8, 9, 11, 12, 13:
			if f.wire != protowire.BytesType {
				return fmt.Errorf("field %d is not length-delimited", f.num)
			}
		case 7:
			if f.wire != protowire.VarintType {
				return fmt.Errorf("field 7 (generation) is not a varint")
			}
		}
		switch f.num {
		case 1:
			m.Name = string(f.val)
		case 3:
			m.Namespace = in.getBytes(f.val)
		case 5:
			m.UID = types.UID(f.val)
		case 6:
			m.ResourceVersion = string(f.val)
		case 7:
			v, _ := protowire.ConsumeVarint(f.val)
			m.Generation = int64(v)
		case 8:
			if err := m.CreationTimestamp.Unmarshal(f.val); err != nil {
				return fmt.Errorf("creationTimestamp: %w", err)
			}
		case 9:
			t := &metav1.Time{}
			if err := t.Unmarshal(f.val); err != nil {
				return fmt.Errorf("deletionTimestamp: %w", err)
			}
			m.DeletionTimestamp = t
		case 11:
			k, v, err := mapEntry(f.val)
			if err != nil {
				return fmt.Errorf("labels: %w", err)
			}
			if m.Labels == nil {
				m.Labels = map[string]string{}
			}
			m.Labels[in.getBytes(k)] = in.getBytes(v)
		case 12:
			k, v, err := mapEntry(f.val)
			if err != nil {
				return fmt.Errorf("annotations: %w", err)
			}
			switch string(k) {
			case SilenceUntilAnnotation, metav1.InitialEventsAnnotationKey:
				// The second marks the bookmark that ends a watch's
				// initial events (a streaming list); the informer reads
				// it before the object reaches a cache.
				if len(v) > 0 {
					if m.Annotations == nil {
						m.Annotations = map[string]string{}
					}
					m.Annotations[string(k)] = string(v)
				}
			}
		case 13:
			var o metav1.OwnerReference
			if err := o.Unmarshal(f.val); err != nil {
				return fmt.Errorf("ownerReferences: %w", err)
			}
			o.APIVersion, o.Kind, o.Name, o.UID = in.get(o.APIVersion), in.get(o.Kind), in.get(o.Name), in.uid(o.UID)
			m.OwnerReferences = append(m.OwnerReferences, o)
		}
	}
	return nil
}

// mapEntry returns the key (field 1) and value (field 2) of an entry of
// a map<string, string>.
func mapEntry(msg []byte) (key, val []byte, err error) {
	for len(msg) > 0 {
		f, rest, err := nextField(msg)
		if err != nil {
			return nil, nil, err
		}
		msg = rest
		if f.wire != protowire.BytesType {
			return nil, nil, fmt.Errorf("map entry field %d is not length-delimited", f.num)
		}
		switch f.num {
		case 1:
			key = f.val
		case 2:
			val = f.val
		}
	}
	return key, val, nil
}

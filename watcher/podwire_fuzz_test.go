package watcher

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzDecodeCompactPod holds decodeCompactPod to the typed decode
// (corev1.Pod.Unmarshal, then compactPod) on any input:
//
//   - it never panics, and what it decodes expands (CompactPod.Pod);
//   - where the typed decode succeeds too, the two agree;
//   - where the typed decode fails, the failure lies in what
//     decodeCompactPod skips unread, the fields it does not keep: the pod
//     reduced to the fields kept (keepPod) decodes typed, and agrees;
//   - whatever the typed decode takes, encoded again as an API server
//     encodes it, decodes, and agrees.
//
// decodeCompactPod may refuse an input the typed decode takes (it is
// stricter on overlong varints, unmatched groups and wire types in map
// entries), so the last point is the converse that holds.
func FuzzDecodeCompactPod(f *testing.F) {
	for _, raw := range fuzzSeeds(f) {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var typed corev1.Pod
		typedErr := typed.Unmarshal(raw)
		if typedErr == nil {
			if canon, err := typed.Marshal(); err == nil {
				got, err := decodeCompactPod(canon, newInterner(1024))
				if err != nil {
					t.Fatalf("the typed pod, encoded again: %v", err)
				}
				if err := compactionDiff(got, typedCompaction(t, &typed)); err != nil {
					t.Fatalf("the typed pod, encoded again: %v", err)
				}
			}
		}
		// decodeCompactPod keeps nothing of its input: a watch reads the
		// next event into the same memory (internal/kube's
		// watchEventDecoder). So the input is overwritten before the
		// result is checked.
		input := bytes.Clone(raw)
		got, err := decodeCompactPod(input, newInterner(1024))
		for i := range input {
			input[i] = 0xff
		}
		if err != nil {
			return
		}
		if _, err := got.Pod(); err != nil {
			t.Fatalf("decoded, does not expand: %v", err)
		}
		want := &typed
		if typedErr != nil {
			kept, err := appendTrimmed(nil, raw, keepPod)
			if err != nil {
				t.Fatalf("decoded, but the kept fields do not trim: %v", err)
			}
			want = &corev1.Pod{}
			if err := want.Unmarshal(kept); err != nil {
				t.Fatalf("decoded where the typed decode fails (%v), and fails on the fields kept: %v", typedErr, err)
			}
		}
		if err := compactionDiff(got, typedCompaction(t, want)); err != nil {
			t.Fatalf("typed decode error %v: %v", typedErr, err)
		}
	})
}

// typedCompaction is what decodeCompactPod should make of pod:
// compactPod's, with the annotation that ends a watch's initial events
// (the reflector reads it off the decoded object; compactPod never sees
// it).
func typedCompaction(t *testing.T, pod *corev1.Pod) *CompactPod {
	c, err := compactPod(pod, newInterner(1024))
	if err != nil {
		t.Fatalf("compactPod: %v", err)
	}
	if v := pod.Annotations[metav1.InitialEventsAnnotationKey]; v != "" {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[metav1.InitialEventsAnnotationKey] = v
	}
	return c
}

// fuzzSeeds are real pods encoded, and encodings made to disagree with
// the generated proto where decodeCompactPod could go wrong.
func fuzzSeeds(f *testing.F) [][]byte {
	marshal := func(pod *corev1.Pod) []byte {
		raw, err := pod.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		return raw
	}
	tag := protowire.AppendTag
	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(tag(nil, num, protowire.BytesType), s)
	}
	msg := func(num protowire.Number, fields ...[]byte) []byte {
		var b []byte
		for _, f := range fields {
			b = append(b, f...)
		}
		return protowire.AppendBytes(tag(nil, num, protowire.BytesType), b)
	}
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(tag(nil, num, protowire.VarintType), v)
	}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	limit := func(fields ...[]byte) []byte { // a pod with one container's limits entry
		return msg(2, msg(2, str(1, "app"), msg(8, msg(1, fields...))))
	}
	realistic, crashing := marshal(realisticPod()), marshal(crashingPod("shop-0"))
	withInitialEvents := crashingPod("shop-1")
	withInitialEvents.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}

	seeds := [][]byte{realistic, crashing, marshal(withInitialEvents)}
	for _, pod := range randomPods(7, 8) {
		seeds = append(seeds, marshal(pod))
	}
	return append(seeds,
		// Every field twice: the generated Unmarshal merges them.
		cat(realistic, crashing),
		realistic[:len(realistic)/2],
		// The silence annotation, then again empty: the last counts.
		cat(crashing, msg(1, msg(12, str(1, SilenceUntilAnnotation), str(2, "2030-01-01T00:00:00Z"))),
			msg(1, msg(12, str(1, SilenceUntilAnnotation), str(2, "")))),
		// A restart count as a string, a name as a varint.
		cat(crashing, msg(3, msg(8, str(1, "app"), str(5, "7")))),
		cat(crashing, msg(2, msg(2, varint(1, 7)))),
		// Memory limits: one that does not parse, one keyed twice
		// (the last key counts), a cpu limit that does not parse.
		limit(str(1, "memory"), msg(2, str(1, "lots"))),
		limit(str(1, "memory"), str(1, "cpu"), msg(2, str(1, "1Gi"))),
		limit(str(1, "cpu"), msg(2, str(1, "lots"))),
		// A start time holding only a field Timestamp does not have.
		msg(3, msg(7, varint(3, 1))),
		// A field not kept, of the wrong wire type: the typed decode
		// fails, decodeCompactPod skips it.
		cat(crashing, msg(2, varint(1, 3))),
		cat(crashing, msg(1, str(10, "30"))),
		// A second spec with another node name (the last one counts),
		// and one with the node name as a varint (both decodings refuse
		// it).
		cat(crashing, msg(2, str(10, "node-b"))),
		cat(crashing, msg(2, varint(10, 1))),
	)
}

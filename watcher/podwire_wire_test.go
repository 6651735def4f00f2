package watcher

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// keptPaths lists every field the tables below t keep, each as the path
// of fields from t down to it.
func keptPaths(t *trim, above []*protoField) [][]*protoField {
	var paths [][]*protoField
	for i := range t.fields {
		k := &t.fields[i]
		path := append(slices.Clone(above), k)
		paths = append(paths, path)
		if k.sub != nil {
			paths = append(paths, keptPaths(k.sub, path)...)
		}
	}
	return paths
}

// podWith encodes a pod holding leaf (a field's encoding) at path, every
// field above it a message, and the key an entry needs to be kept.
func podWith(path []*protoField, leaf []byte) []byte { return podWithKey(path, leaf, "") }

// podWithKey is podWith with key, if not "", as the key of map entries.
func podWithKey(path []*protoField, leaf []byte, key string) []byte {
	msg := leaf
	for i := len(path) - 2; i >= 0; i-- {
		above := path[i]
		if only := above.sub.onlyKey; only != "" && path[i+1].num != entryKey {
			if key != "" {
				only = key
			}
			msg = append(protowire.AppendString(protowire.AppendTag(nil, entryKey, protowire.BytesType), only), msg...)
		}
		msg = protowire.AppendBytes(protowire.AppendTag(nil, above.num, protowire.BytesType), msg)
	}
	return msg
}

func pathName(path []*protoField) string {
	names := make([]string, len(path))
	for i, k := range path {
		names[i] = k.name
	}
	return strings.Join(names, ".")
}

// TestWrongWireTypeFails: for every field kept, a pod holding it with
// another wire type than the generated proto's fails to decode with an
// error naming the field (by its Go name, from the pod down), where it
// would otherwise be cached and fail when a worker expands it; with its
// own wire type, the same pod decodes and expands.
func TestWrongWireTypeFails(t *testing.T) {
	paths := keptPaths(keepPod, nil)
	if len(paths) < 50 {
		t.Fatalf("only %d kept fields", len(paths))
	}
	for _, path := range paths {
		k := path[len(path)-1]
		t.Run(pathName(path), func(t *testing.T) {
			good := protowire.AppendTag(nil, k.num, k.wire)
			var wrong [][]byte
			switch k.wire {
			case protowire.BytesType:
				value := ""
				if k.valid != nil {
					value = "1Mi"
				}
				good = protowire.AppendString(good, value)
				wrong = append(wrong, protowire.AppendVarint(protowire.AppendTag(nil, k.num, protowire.VarintType), 1))
			case protowire.VarintType:
				good = protowire.AppendVarint(good, 1)
				wrong = append(wrong, protowire.AppendString(protowire.AppendTag(nil, k.num, protowire.BytesType), "x"))
			default:
				t.Fatalf("wire type %d", k.wire)
			}
			wrong = append(wrong, protowire.AppendFixed32(protowire.AppendTag(nil, k.num, protowire.Fixed32Type), 1),
				protowire.AppendFixed64(protowire.AppendTag(nil, k.num, protowire.Fixed64Type), 1))

			c, err := decodeCompactPod(podWith(path, good), newInterner(16))
			if err != nil {
				t.Fatalf("with its own wire type: %v", err)
			}
			if _, err := c.Pod(); err != nil {
				t.Fatalf("with its own wire type, expanding: %v", err)
			}
			for _, leaf := range wrong {
				_, err := decodeCompactPod(podWith(path, leaf), newInterner(16))
				var fe *fieldError
				if !errors.As(err, &fe) || fe.path != pathName(path) {
					t.Errorf("%x: got error %v, want one naming %s", leaf, err, pathName(path))
				}
			}
		})
	}
}

// TestInvalidMemoryLimitFails: a memory limit that does not parse fails
// at decode, as the typed decode fails; another resource's limit is
// dropped unread.
func TestInvalidMemoryLimitFails(t *testing.T) {
	for _, path := range keptPaths(keepPod, nil) {
		if pathName(path) != "Spec.Containers.Resources.Limits.value.string" {
			continue
		}
		leaf := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "lots")
		_, err := decodeCompactPod(podWith(path, leaf), newInterner(16))
		var fe *fieldError
		if !errors.As(err, &fe) || fe.path != pathName(path) || !strings.Contains(err.Error(), "quantities must match") {
			t.Errorf("got error %v, want one naming %s", err, pathName(path))
		}
		if _, err := decodeCompactPod(podWithKey(path, leaf, "cpu"), newInterner(16)); err != nil {
			t.Errorf("cpu limit: %v", err)
		}
		return
	}
	t.Fatal("no memory limit kept")
}

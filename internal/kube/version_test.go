package kube

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// storedConfigMap is a ConfigMap as the API server echoes a ledger write:
// every metadata field around resourceVersion set, managed fields, data.
func storedConfigMap() *corev1.ConfigMap {
	gen := int64(3)
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: "herald-ledger-0", GenerateName: "herald-", Namespace: "herald", SelfLink: "/x",
			UID: "0b5e", ResourceVersion: "918273", Generation: 7, DeletionGracePeriodSeconds: &gen,
			CreationTimestamp: metav1.Unix(1700000000, 0),
			Labels:            map[string]string{"herald.io/ledger": "herald"},
			Annotations:       map[string]string{"herald.io/generation": "12"},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "herald", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1"}},
		},
		Data:       map[string]string{"incidents": strings.Repeat("i", 20<<10)},
		BinaryData: map[string][]byte{"b": {1, 2, 3}},
	}
}

// protobufOf encodes obj as the API server sends it (client-go's
// protobuf serializer).
func protobufOf(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), protobufContentType)
	var buf bytes.Buffer
	if err := Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// drainCounter says how much of the answer was read.
type drainCounter struct {
	r    io.Reader
	read int
}

func (d *drainCounter) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.read += n
	return n, err
}

func TestResourceVersionFromTheAnswer(t *testing.T) {
	cm := storedConfigMap()
	pb := protobufOf(t, cm)
	js, _ := json.Marshal(cm)
	for name, body := range map[string][]byte{"protobuf": pb, "json": js} {
		d := &drainCounter{r: bytes.NewReader(body)}
		rv, err := resourceVersionFrom(d)
		if err != nil || rv != "918273" {
			t.Errorf("%s: %q, %v; want 918273", name, rv, err)
		}
		if d.read != len(body) {
			t.Errorf("%s: read %d of %d bytes; the answer must be read to its end so the connection is reused", name, d.read, len(body))
		}
	}
}

func TestResourceVersionFromAnAnswerWithoutOne(t *testing.T) {
	cm := storedConfigMap()
	cm.ResourceVersion = ""
	rv, err := resourceVersionFrom(bytes.NewReader(protobufOf(t, cm)))
	if err != nil || rv != "" {
		t.Errorf("no resourceVersion: %q, %v; want \"\" and no error (the ledger then reads the shard again)", rv, err)
	}
	if rv, err = resourceVersionFrom(bytes.NewReader(protobufPrefix)); err == nil {
		t.Errorf("an envelope without an object: %q and no error", rv)
	}
}

// Every truncation of a real answer is an error or, when it ends after
// the resourceVersion, the right one: never a wrong version, never a
// panic.
func TestResourceVersionFromATruncatedAnswer(t *testing.T) {
	cm := storedConfigMap()
	cm.Data = map[string]string{"k": "v"}
	pb := protobufOf(t, cm)
	at := bytes.Index(pb, []byte("918273")) + len("918273")
	for n := len(protobufPrefix); n < len(pb); n++ {
		rv, err := resourceVersionFrom(bytes.NewReader(pb[:n]))
		switch {
		case n < at && err == nil:
			t.Fatalf("cut at %d of %d bytes (before the resourceVersion ends): %q and no error", n, len(pb), rv)
		case n >= at && (err != nil || rv != "918273"):
			t.Fatalf("cut at %d of %d bytes (after the resourceVersion): %q, %v", n, len(pb), rv, err)
		}
	}
}

func TestResourceVersionFromAMalformedAnswer(t *testing.T) {
	for name, body := range map[string][]byte{
		"a group wire type":          append(append([]byte(nil), protobufPrefix...), 0x13),
		"a length past its message":  append(append([]byte(nil), protobufPrefix...), 0x12, 0x02, 0x0a, 0x09, 0x32, 0x01, 0x31),
		"a huge resourceVersion":     append(append(append([]byte(nil), protobufPrefix...), 0x12, 0x86, 0x04, 0x0a, 0x83, 0x04, 0x32, 0x80, 0x04), bytes.Repeat([]byte("9"), 512)...),
		"a varint of eleven bytes":   append(append([]byte(nil), protobufPrefix...), bytes.Repeat([]byte{0xff}, 11)...),
		"JSON that is not an object": []byte(`["metadata"]`),
	} {
		if rv, err := resourceVersionFrom(bytes.NewReader(body)); err == nil {
			t.Errorf("%s: %q and no error", name, rv)
		}
	}
}

// encodeConfigMap's bytes are what client-go's protobuf encoder makes
// of the same ConfigMap, once decoded: the API server reads them alike.
func TestEncodeConfigMapDecodesAsTheStandardEncoding(t *testing.T) {
	cm := storedConfigMap()
	mine, err := encodeConfigMap(cm)
	if err != nil {
		t.Fatal(err)
	}
	if len(mine) != cap(mine) {
		t.Errorf("a buffer of %d bytes for %d: the size is not computed exactly", cap(mine), len(mine))
	}
	info, _ := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), protobufContentType)
	obj, gvk, err := Codecs.DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion).Decode(mine, nil, nil)
	if err != nil {
		t.Fatalf("decoding herald's encoding: %v", err)
	}
	if gvk.Kind != "ConfigMap" || gvk.Version != "v1" {
		t.Errorf("decoded as %s, want v1 ConfigMap", gvk)
	}
	got := obj.(*corev1.ConfigMap)
	got.TypeMeta = metav1.TypeMeta{} // the decoder sets it; cm has none
	if !apiequality.Semantic.DeepEqual(got, cm) {
		t.Errorf("decoded %s/%s differs from what was encoded:\ngot  %+v\nwant %+v", got.Namespace, got.Name, got, cm)
	}
	standard := protobufOf(t, cm)
	if len(standard) > len(mine)+4 || len(mine) > len(standard) {
		t.Errorf("%d bytes against the standard encoder's %d (which adds two empty envelope fields)", len(mine), len(standard))
	}
}

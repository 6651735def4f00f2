package watcher

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFieldNumbersMatchGoTypes holds every field number and wire type
// podwire.go hard-codes to the protobuf tag of the Go field it names,
// table by table from keepPod down: a renumbering in a k8s.io/api bump
// fails here, naming the Go field, instead of trimming the wrong
// fields. What has no tag is checked by its encoding: a map's entries,
// a Quantity, and a metav1.Time (encoded as a metav1.Timestamp).
func TestFieldNumbersMatchGoTypes(t *testing.T) {
	checkTable(t, keepPod, reflect.TypeFor[corev1.Pod](), map[*trim]bool{})
	// The spec replicas share is the kept spec but its node name.
	checkTable(t, keepSharedSpec, reflect.TypeFor[corev1.PodSpec](), map[*trim]bool{})
	if got, want := len(keepSharedSpec.fields), len(keepSpec.fields)-1; got != want || keepSharedSpec.field(specNodeName) != nil {
		t.Errorf("the shared spec keeps %d fields (node name: %v), want keepSpec's %d but the node name", got, keepSharedSpec.field(specNodeName) != nil, want)
	}
	// metav1.Time has no fields of its own: it is encoded as a
	// Timestamp, which keepTime describes.
	raw, err := (&metav1.Time{Time: time.Unix(1700000000, 0)}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var ts metav1.Timestamp
	if err := ts.Unmarshal(raw); err != nil || ts.Seconds != 1700000000 {
		t.Errorf("a metav1.Time is not encoded as a metav1.Timestamp: %v, %+v", err, ts)
	}
}

// encodedAs names the Go type whose fields describe another type's
// encoding.
var encodedAs = map[reflect.Type]reflect.Type{
	reflect.TypeFor[metav1.Time](): reflect.TypeFor[metav1.Timestamp](),
}

// checkTable checks tab, which describes goType, and the tables below
// that are not in checked.
func checkTable(t *testing.T, tab *trim, goType reflect.Type, checked map[*trim]bool) {
	t.Helper()
	if checked[tab] {
		if tab.goType != goType {
			t.Errorf("the table for %s describes %v", goType, tab.goType)
		}
		return
	}
	checked[tab] = true
	if tab.goType != goType {
		t.Errorf("the table for %s describes %v", goType, tab.goType)
		return
	}
	if goType == reflect.TypeFor[resource.Quantity]() {
		q := resource.MustParse("256Mi")
		raw, err := q.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		checkEncoding(t, "resource.Quantity", tab, raw)
		return
	}
	for i := range tab.fields {
		k := &tab.fields[i]
		name := goType.PkgPath() + "." + goType.Name() + "." + k.name
		if tab.field(k.num).name != k.name {
			t.Errorf("%s: field %d is also %s", name, k.num, tab.field(k.num).name)
		}
		sf, ok := goType.FieldByName(k.name)
		if !ok || len(sf.Index) != 1 {
			t.Errorf("%s: no such field", name)
			continue
		}
		wire, n, ok := protobufTag(sf.Tag.Get("protobuf"))
		if !ok {
			t.Errorf("%s: protobuf tag %q unreadable", name, sf.Tag.Get("protobuf"))
			continue
		}
		if k.num != n || k.wire != wire {
			t.Errorf("%s: podwire.go has field %d, %s; the Go type's protobuf tag %q says field %d, %s",
				name, k.num, wireName(k.wire), sf.Tag.Get("protobuf"), n, wireName(wire))
		}
		if k.sub == nil {
			continue
		}
		ft := sf.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Map {
			checkMapEntry(t, name, goType, sf, k, checked)
			continue
		}
		if enc, ok := encodedAs[ft]; ok {
			ft = enc
		}
		checkTable(t, k.sub, ft, checked)
	}
}

// checkMapEntry checks the entry table of map field k (Go field sf of
// goType) against an encoding of goType holding one entry.
func checkMapEntry(t *testing.T, name string, goType reflect.Type, sf reflect.StructField, k *protoField, checked map[*trim]bool) {
	t.Helper()
	if k.sub.goType != nil {
		t.Errorf("%s: an entry table describes %v", name, k.sub.goType)
	}
	m := reflect.MakeMap(sf.Type)
	m.SetMapIndex(reflect.ValueOf("key").Convert(sf.Type.Key()), reflect.New(sf.Type.Elem()).Elem())
	v := reflect.New(goType)
	v.Elem().FieldByIndex(sf.Index).Set(m)
	raw, err := v.Interface().(interface{ Marshal() ([]byte, error) }).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	entry, err := lastString(raw, k.num)
	if err != nil || entry == nil {
		t.Fatalf("%s: no entry in %x: %v", name, raw, err)
	}
	checkEncoding(t, name+" entry", k.sub, entry)
	if val := k.sub.field(entryValue); val != nil && val.sub != nil {
		checkTable(t, val.sub, sf.Type.Elem(), checked)
	}
}

// checkEncoding checks that each field tab keeps is in raw, an encoding
// of the message it describes, with that number and wire type.
func checkEncoding(t *testing.T, name string, tab *trim, raw []byte) {
	t.Helper()
	seen := map[protowire.Number]protowire.Type{}
	for msg := raw; len(msg) > 0; {
		f, rest, err := nextField(msg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		seen[f.num], msg = f.wire, rest
	}
	for _, k := range tab.fields {
		if wire, ok := seen[k.num]; !ok || wire != k.wire {
			t.Errorf("%s.%s: podwire.go has field %d, %s; the encoding %x has not", name, k.name, k.num, wireName(k.wire), raw)
		}
	}
}

// protobufTag reads the wire type and number of a protobuf struct tag
// ("bytes,2,rep,name=containers").
func protobufTag(tag string) (protowire.Type, protowire.Number, bool) {
	parts := strings.Split(tag, ",")
	if len(parts) < 2 {
		return 0, 0, false
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		return 0, 0, false
	}
	switch parts[0] {
	case "bytes":
		return protowire.BytesType, protowire.Number(n), true
	case "varint":
		return protowire.VarintType, protowire.Number(n), true
	}
	return 0, 0, false
}

// lastString returns the payload of the last length-delimited field num
// of msg.
func lastString(msg []byte, num protowire.Number) ([]byte, error) {
	var val []byte
	for len(msg) > 0 {
		f, rest, err := nextField(msg)
		if err != nil {
			return nil, err
		}
		if f.num == num && f.wire == protowire.BytesType {
			val = f.val
		}
		msg = rest
	}
	return val, nil
}

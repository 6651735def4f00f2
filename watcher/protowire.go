package watcher

// Walking a Kubernetes object's protobuf encoding field by field (with
// the protobuf module's protowire) to copy the fields herald keeps
// without decoding the rest
// (https://protobuf.dev/programming-guides/encoding/).

import (
	"fmt"
	"reflect"

	"google.golang.org/protobuf/encoding/protowire"
)

// field is one field of an encoded message.
type field struct {
	num  protowire.Number
	wire protowire.Type
	// val is the payload of a length-delimited field, else the encoded
	// value.
	val []byte
	// all is the field's whole encoding, key included.
	all []byte
}

// nextField splits the first field off b.
func nextField(b []byte) (field, []byte, error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return field{}, nil, protowire.ParseError(n)
	}
	var val []byte
	var m int
	if typ == protowire.BytesType { // most fields: their length read once
		val, m = protowire.ConsumeBytes(b[n:])
	} else {
		m = protowire.ConsumeFieldValue(num, typ, b[n:])
	}
	if m < 0 {
		return field{}, nil, fmt.Errorf("field %d: %w", num, protowire.ParseError(m))
	}
	if typ != protowire.BytesType {
		val = b[n : n+m]
	}
	return field{num: num, wire: typ, val: val, all: b[:n+m]}, b[n+m:], nil
}

// protoField is a field that herald keeps of a Kubernetes message: its
// number and wire type as k8s.io/api's generated.proto declares them,
// and the Go field the generated code decodes it into.
// TestFieldNumbersMatchGoTypes holds each to that Go field's protobuf
// tag, so that a renumbering in a k8s.io/api bump fails there.
//
// The wire type is checked where the field is met: a kept field of
// the wrong type fails the decode naming the field, where it would
// otherwise fail later, when a worker expands the cached pod.
type protoField struct {
	num  protowire.Number
	wire protowire.Type
	// name is the Go field's name, for errors; "" in a trim's table
	// is a field not kept.
	name string
	// sub, for an embedded message (or a map's entries), says what of
	// it is kept; nil keeps the field whole: a scalar, a string, or a
	// message decoded by its own Unmarshal, which checks it.
	sub *trim
	// valid, for a string, checks its value as the generated Unmarshal
	// would (a quantity must parse).
	valid func([]byte) error
}

// trim says what a copy of an encoded message keeps.
type trim struct {
	// goType is the Go type the message decodes into; nil for the
	// entries of a map.
	goType reflect.Type
	// fields are the kept fields as declared; byNum holds them indexed
	// by number (small numbers all: a slice is faster than a map here).
	fields, byNum []protoField
	// whole keeps the message's encoding as it is once its kept fields
	// check: metav1.Time decodes an empty message as the zero time but
	// one holding only fields it does not know as the epoch, so a
	// trimmed copy could change it.
	whole bool
	// onlyKey, for the entries of a map field, keeps only the entry whose
	// key (entryKey) is this string.
	onlyKey string
}

// The fields of a map entry, by the protobuf specification.
const (
	entryKey   protowire.Number = 1
	entryValue protowire.Number = 2
)

// field returns the kept field num, or nil.
func (t *trim) field(num protowire.Number) *protoField {
	if uint64(num) < uint64(len(t.byNum)) && t.byNum[num].name != "" {
		return &t.byNum[num]
	}
	return nil
}

// fieldError says which kept field failed to decode: path holds the
// Go field names from the outermost message in.
type fieldError struct {
	path string
	err  error
}

func (e *fieldError) Error() string { return e.path + ": " + e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

// inField says err happened in field name.
func inField(name string, err error) error {
	if fe, ok := err.(*fieldError); ok {
		return &fieldError{path: name + "." + fe.path, err: fe.err}
	}
	return &fieldError{path: name, err: err}
}

// check returns an error if f, met where k is expected, has another wire
// type or an invalid value.
func (k *protoField) check(f field) error {
	if f.wire != k.wire {
		return &fieldError{path: k.name, err: fmt.Errorf("field %d is %s, want %s", f.num, wireName(f.wire), wireName(k.wire))}
	}
	if k.valid != nil {
		if err := k.valid(f.val); err != nil {
			return &fieldError{path: k.name, err: err}
		}
	}
	return nil
}

func wireName(t protowire.Type) string {
	switch t {
	case protowire.VarintType:
		return "a varint"
	case protowire.Fixed32Type:
		return "fixed32"
	case protowire.Fixed64Type:
		return "fixed64"
	case protowire.BytesType:
		return "length-delimited"
	case protowire.StartGroupType, protowire.EndGroupType:
		return "a group"
	}
	return fmt.Sprintf("wire type %d", t)
}

// appendTrimmed appends to out the fields of message msg that t keeps.
func appendTrimmed(out, msg []byte, t *trim) ([]byte, error) {
	for len(msg) > 0 {
		f, rest, err := nextField(msg)
		if err != nil {
			return nil, err
		}
		msg = rest
		k := t.field(f.num)
		if k == nil {
			continue
		}
		if err := k.check(f); err != nil {
			return nil, err
		}
		switch sub := k.sub; {
		case sub == nil:
			out = append(out, f.all...)
		case sub.onlyKey != "":
			key, err := entryKeyOf(f.val, sub)
			if err != nil {
				return nil, inField(k.name, err)
			}
			if string(key) != sub.onlyKey {
				continue
			}
			if err := checkKept(f.val, sub); err != nil {
				return nil, inField(k.name, err)
			}
			out = append(out, f.all...)
		case sub.whole:
			if err := checkKept(f.val, sub); err != nil {
				return nil, inField(k.name, err)
			}
			out = append(out, f.all...)
		default:
			if out, err = appendEmbedded(out, f.num, f.val, sub); err != nil {
				return nil, inField(k.name, err)
			}
		}
	}
	return out, nil
}

// checkKept returns an error if a field of msg that t keeps has the
// wrong wire type or an invalid value, in msg or the messages it embeds.
func checkKept(msg []byte, t *trim) error {
	for len(msg) > 0 {
		f, rest, err := nextField(msg)
		if err != nil {
			return err
		}
		msg = rest
		k := t.field(f.num)
		if k == nil {
			continue
		}
		if err := k.check(f); err != nil {
			return err
		}
		if k.sub != nil {
			if err := checkKept(f.val, k.sub); err != nil {
				return inField(k.name, err)
			}
		}
	}
	return nil
}

// appendEmbedded appends field num holding the trimmed copy of msg. The
// copy is written in place after a one-byte length, which is widened
// afterwards if the copy is 128 bytes or longer.
func appendEmbedded(out []byte, num protowire.Number, msg []byte, t *trim) ([]byte, error) {
	out = protowire.AppendTag(out, num, protowire.BytesType)
	at := len(out)
	out = append(out, 0)
	out, err := appendTrimmed(out, msg, t)
	if err != nil {
		return nil, err
	}
	size := len(out) - at - 1
	if size < 0x80 {
		out[at] = byte(size)
		return out, nil
	}
	var lenBuf [10]byte
	l := protowire.AppendVarint(lenBuf[:0], uint64(size))
	out = append(out, l[1:]...) // room for the longer length
	copy(out[at+len(l):], out[at+1:at+1+size])
	copy(out[at:], l)
	return out, nil
}

// entryKeyOf returns the key of map entry msg, checked against entry
// table t: the last key field, the one a decoder keeps.
func entryKeyOf(msg []byte, t *trim) ([]byte, error) {
	k := t.field(entryKey)
	var key []byte
	for len(msg) > 0 {
		f, rest, err := nextField(msg)
		if err != nil {
			return nil, err
		}
		msg = rest
		if f.num == entryKey {
			if err := k.check(f); err != nil {
				return nil, err
			}
			key = f.val
		}
	}
	return key, nil
}

// messageOf returns the trim keeping fields of the message that Go type
// T decodes.
func messageOf[T any](fields ...protoField) *trim { return keeping(reflect.TypeFor[T](), fields) }

// mapEntries returns the trim keeping fields of a map field's entries;
// with onlyKey, of the entry with that key only.
func mapEntries(onlyKey string, fields ...protoField) *trim {
	t := keeping(nil, fields)
	t.onlyKey = onlyKey
	return t
}

func keeping(goType reflect.Type, fields []protoField) *trim {
	t := &trim{goType: goType, fields: fields}
	for _, f := range fields {
		if int(f.num) >= len(t.byNum) {
			t.byNum = append(t.byNum, make([]protoField, int(f.num)+1-len(t.byNum))...)
		}
		t.byNum[f.num] = f
	}
	return t
}

// keptWhole makes t keep its message whole, once checked.
func (t *trim) keptWhole() *trim {
	t.whole = true
	return t
}

const wireBytes, wireVarint = protowire.BytesType, protowire.VarintType

// stringField is a string (or bytes) field, kept whole.
func stringField(num protowire.Number, name string) protoField {
	return protoField{num: num, wire: wireBytes, name: name}
}

// varintField is an integer or bool field, kept whole.
func varintField(num protowire.Number, name string) protoField {
	return protoField{num: num, wire: wireVarint, name: name}
}

// messageField is an embedded message (or map) field, of which sub says
// what is kept (see protoField.sub).
func messageField(num protowire.Number, name string, sub *trim) protoField {
	return protoField{num: num, wire: wireBytes, name: name, sub: sub}
}

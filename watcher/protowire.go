package watcher

// Walking a Kubernetes object's protobuf encoding field by field (with
// the protobuf module's protowire) to copy the fields herald keeps
// without decoding the rest
// (https://protobuf.dev/programming-guides/encoding/).

import (
	"fmt"

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
	m := protowire.ConsumeFieldValue(num, typ, b[n:])
	if m < 0 {
		return field{}, nil, fmt.Errorf("field %d: %w", num, protowire.ParseError(m))
	}
	f := field{num: num, wire: typ, val: b[n : n+m], all: b[:n+m]}
	if typ == protowire.BytesType {
		f.val, _ = protowire.ConsumeBytes(f.val)
	}
	return f, b[n+m:], nil
}

// trim says what a trimmed copy of an encoded message keeps.
type trim struct {
	// fields kept, by number; a nil *trim keeps the field's encoding
	// whole, another trims the embedded message (every occurrence of a
	// repeated one). A field not listed is dropped.
	fields map[protowire.Number]*trim
	// onlyKey, for the entries of a map field, keeps only the entry whose
	// key (field 1) is this string.
	onlyKey string
}

// appendTrimmed appends to out the fields of message msg that t keeps.
func appendTrimmed(out, msg []byte, t *trim) ([]byte, error) {
	for len(msg) > 0 {
		f, rest, err := nextField(msg)
		if err != nil {
			return nil, err
		}
		msg = rest
		sub, ok := t.fields[f.num]
		switch {
		case !ok:
		case sub == nil:
			out = append(out, f.all...)
		case f.wire != protowire.BytesType:
			return nil, fmt.Errorf("protobuf: field %d is not a message", f.num)
		case sub.onlyKey != "":
			key, err := stringField(f.val, 1)
			if err != nil {
				return nil, err
			}
			if string(key) == sub.onlyKey {
				out = append(out, f.all...)
			}
		default:
			if out, err = appendEmbedded(out, f.num, f.val, sub); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
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

// stringField returns the value of the first field num of msg, which
// must be length-delimited (nil if absent).
func stringField(msg []byte, num protowire.Number) ([]byte, error) {
	for len(msg) > 0 {
		f, rest, err := nextField(msg)
		if err != nil {
			return nil, err
		}
		if f.num == num {
			if f.wire != protowire.BytesType {
				return nil, fmt.Errorf("protobuf: field %d is not length-delimited", num)
			}
			return f.val, nil
		}
		msg = rest
	}
	return nil, nil
}

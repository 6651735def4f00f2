package kube

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
)

// resourceVersionFrom reads metadata.resourceVersion out of an object the
// API server sends, as it arrives, and reads the rest of it into nothing:
// the ledger writes shards of up to 900 KB and needs only their new
// version back, so the echo is not kept in memory (issue #34). Protobuf:
// the envelope's raw object (2), its metadata (1), ObjectMeta's
// resourceVersion (6), field numbers from k8s.io/apimachinery's
// generated.proto; the generated encoders write fields in ascending
// order, so metadata comes first. JSON is read whole.
func resourceVersionFrom(body io.Reader) (string, error) {
	br := bufio.NewReaderSize(body, 4<<10)
	if prefix, _ := br.Peek(len(protobufPrefix)); !bytes.Equal(prefix, protobufPrefix) {
		all, err := io.ReadAll(br)
		if err != nil {
			return "", fmt.Errorf("reading the API server's answer: %w", err)
		}
		return jsonResourceVersion(all)
	}
	br.Discard(len(protobufPrefix))
	rv, err := streamedResourceVersion(br)
	if err != nil {
		return "", fmt.Errorf("reading the resourceVersion of the API server's answer: %w", err)
	}
	// Read to the end, so that the connection can carry the next request.
	if _, err := io.Copy(io.Discard, br); err != nil {
		return "", fmt.Errorf("reading the API server's answer: %w", err)
	}
	return rv, nil
}

// maxResourceVersion bounds what is read as a resourceVersion (etcd's are
// decimal 64-bit numbers).
const maxResourceVersion = 256

// streamedResourceVersion walks envelope → raw object → metadata →
// resourceVersion, skipping every other field unread. An answer without
// an object or metadata is an error (it may have been cut short); an
// object without a resourceVersion is not: "" is returned, and the
// ledger reads the shard (or its claim) before writing it again.
func streamedResourceVersion(r *bufio.Reader) (string, error) {
	msg := fieldReader{r: r, left: -1}
	for _, field := range []struct {
		num  protowire.Number
		what string
	}{{2, "object"}, {1, "metadata"}, {6, ""}} {
		n, found, err := msg.find(field.num)
		if err != nil {
			return "", err
		}
		if !found && field.what != "" {
			return "", fmt.Errorf("no %s in it", field.what)
		}
		if !found {
			return "", nil
		}
		msg.left = n
	}
	if msg.left > maxResourceVersion {
		return "", fmt.Errorf("a resourceVersion of %d bytes", msg.left)
	}
	rv := make([]byte, msg.left)
	if _, err := io.ReadFull(r, rv); err != nil {
		return "", unexpectedEOF(err)
	}
	return string(rv), nil
}

// fieldReader reads the fields of one protobuf message from a stream:
// left is how many bytes of it are unread (-1: up to the end of the
// stream).
type fieldReader struct {
	r    *bufio.Reader
	left int64
}

// find skips fields until the length-delimited field num, and returns its
// length. Not found at the end of the message: false.
func (m *fieldReader) find(num protowire.Number) (int64, bool, error) {
	for m.left != 0 {
		key, err := m.varint()
		if err == io.EOF && m.left < 0 {
			return 0, false, nil // the end of the stream is the end of the envelope
		}
		if err != nil {
			return 0, false, unexpectedEOF(err)
		}
		fieldNum, typ := protowire.DecodeTag(key)
		var skip int64
		switch typ {
		case protowire.VarintType:
			if _, err := m.varint(); err != nil {
				return 0, false, unexpectedEOF(err)
			}
			continue
		case protowire.Fixed32Type:
			skip = 4
		case protowire.Fixed64Type:
			skip = 8
		case protowire.BytesType:
			n, err := m.varint()
			if err != nil {
				return 0, false, unexpectedEOF(err)
			}
			if n > 1<<40 {
				return 0, false, fmt.Errorf("field %d: a length of %d bytes", fieldNum, n)
			}
			skip = int64(n)
			if fieldNum == num {
				if m.left >= 0 && skip > m.left {
					return 0, false, fmt.Errorf("field %d is longer (%d bytes) than what holds it (%d)", num, skip, m.left)
				}
				return skip, true, nil
			}
		default:
			return 0, false, fmt.Errorf("field %d: unsupported wire type %d", fieldNum, typ)
		}
		if m.left >= 0 {
			if skip > m.left {
				return 0, false, fmt.Errorf("field %d is longer (%d bytes) than what holds it (%d)", fieldNum, skip, m.left)
			}
			m.left -= skip
		}
		if _, err := m.r.Discard(int(skip)); err != nil {
			return 0, false, unexpectedEOF(err)
		}
	}
	return 0, false, nil
}

// varint reads one varint of the message.
func (m *fieldReader) varint() (uint64, error) {
	var v uint64
	for i := 0; ; i++ {
		if m.left == 0 {
			return 0, io.ErrUnexpectedEOF
		}
		b, err := m.r.ReadByte()
		if err != nil {
			if i > 0 {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		if m.left > 0 {
			m.left--
		}
		if i == 9 && b > 1 {
			return 0, errors.New("a varint overflows 64 bits")
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, nil
		}
	}
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// jsonResourceVersion reads metadata.resourceVersion out of a JSON
// object.
func jsonResourceVersion(body []byte) (string, error) {
	var obj struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &obj); err != nil {
		return "", fmt.Errorf("reading the resourceVersion of the API server's answer: %w", err)
	}
	return obj.Metadata.ResourceVersion, nil
}

package kube

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
)

// protobufContentType is the media type of Kubernetes' protobuf encoding.
const protobufContentType = "application/vnd.kubernetes.protobuf"

// configMapTypeMeta is the envelope's TypeMeta (1) for a v1 ConfigMap:
// its apiVersion (1) and kind (2).
var configMapTypeMeta = func() []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, "v1")
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, "ConfigMap")
	return b
}()

// encodeConfigMap encodes cm as the API server takes it in protobuf: the
// prefix "k8s\x00", then a runtime.Unknown with the TypeMeta (1) and the
// object's own encoding (2) (k8s.io/apimachinery's runtime/generated.proto).
// One buffer of the final size, written once: client-go's encoder fills a
// buffer and copies it into another.
func encodeConfigMap(cm *corev1.ConfigMap) ([]byte, error) {
	size := cm.Size()
	header := len(protobufPrefix) + 1 + protowire.SizeBytes(len(configMapTypeMeta)) + 1 + protowire.SizeVarint(uint64(size))
	b := make([]byte, 0, header+size)
	b = append(b, protobufPrefix...)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, configMapTypeMeta)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	if len(b) != header {
		return nil, fmt.Errorf("encoding ConfigMap %s/%s: a header of %d bytes, expected %d", cm.Namespace, cm.Name, len(b), header)
	}
	b = b[:header+size]
	if n, err := cm.MarshalToSizedBuffer(b[header:]); err != nil || n != size {
		return nil, fmt.Errorf("encoding ConfigMap %s/%s: %d of %d bytes: %v", cm.Namespace, cm.Name, n, size, err)
	}
	return b, nil
}

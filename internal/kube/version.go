package kube

import (
	"bytes"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// resourceVersionOf reads metadata.resourceVersion out of an object the
// API server sent, without decoding the rest: from protobuf (the
// envelope's raw object, its metadata (1), ObjectMeta's resourceVersion
// (6); field numbers from k8s.io/apimachinery's generated.proto), or JSON.
func resourceVersionOf(body []byte) (string, error) {
	if data, ok := bytes.CutPrefix(body, protobufPrefix); ok {
		_, _, raw, err := envelope(data)
		var rv string
		if err == nil {
			err = eachField(raw, func(num protowire.Number, meta []byte) error {
				if num != 1 {
					return nil
				}
				return eachField(meta, func(num protowire.Number, val []byte) error {
					if num == 6 {
						rv = string(val)
					}
					return nil
				})
			})
		}
		if err != nil {
			return "", fmt.Errorf("reading the resourceVersion of the API server's answer: %w", err)
		}
		return rv, nil
	}
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

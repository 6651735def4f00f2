package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/herald-k8s/herald/sinks"
)

// SigningKey decodes a Standard Webhooks secret: "whsec_" followed by
// base64; any other string is used as raw bytes.
func SigningKey(secret string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(secret, "whsec_"); ok {
		key, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, errors.New("a whsec_ secret must be base64 after the prefix")
		}
		return key, nil
	}
	if secret == "" {
		return nil, errors.New("empty secret")
	}
	return []byte(secret), nil
}

// Sign returns the webhook-signature header: "v1,<base64 HMAC-SHA256 of
// id.timestamp.body>" for each key, separated by spaces.
func Sign(keys [][]byte, id string, timestamp int64, body []byte) string {
	content := []byte(id + "." + strconv.FormatInt(timestamp, 10) + ".")
	content = append(content, body...)
	sigs := make([]string, len(keys))
	for i, k := range keys {
		mac := hmac.New(sha256.New, k)
		mac.Write(content)
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}
	return strings.Join(sigs, " ")
}

// Verify checks a request the way a receiver should: one of the
// signatures matches key, and the timestamp is within tolerance of now.
func Verify(key []byte, id, timestamp, signatures string, body []byte, now time.Time, tolerance time.Duration) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return errors.New("bad webhook-timestamp")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return errors.New("webhook-timestamp outside the tolerance")
	}
	want := Sign([][]byte{key}, id, ts, body)
	for _, sig := range strings.Fields(signatures) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("no matching signature")
}

// source is the CloudEvents source: herald, and which cluster's when the
// configuration names it ("herald/prod-eu"), so that events from many
// clusters differ in source as the spec intends.
func source(cluster string) string {
	if cluster == "" {
		return "herald"
	}
	return "herald/" + url.PathEscape(cluster)
}

// cloudEvent encodes a payload as a CloudEvents 1.0 structured-mode event.
func cloudEvent(p sinks.Payload) ([]byte, error) {
	subject := p.Object.Kind + "/" + p.Object.Name
	if p.Object.Namespace != "" {
		subject = p.Object.Kind + "/" + p.Object.Namespace + "/" + p.Object.Name
	}
	data, err := p.AppendJSON(nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"specversion":     "1.0",
		"id":              p.ID,
		"source":          source(p.Cluster),
		"type":            "io.herald.incident." + p.Transition,
		"subject":         subject,
		"time":            p.Time,
		"datacontenttype": "application/json",
		"data":            json.RawMessage(data),
	})
}

package testenv

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Reaching past the API server to etcd, for tests of compaction and of
// API server restarts.

// etcdPost calls etcd's JSON gateway.
func (e *Env) etcdPost(path, body string) (map[string]any, error) {
	resp, err := http.Post(e.EtcdURL+path, "application/json", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("etcd %s: %s: %v", path, resp.Status, out)
	}
	return out, nil
}

// CompactEtcd compacts etcd's history up to its current revision, through
// etcd's JSON gateway: watches from an older resourceVersion then fail
// with 410 Gone (when the API server's watch cache is off).
func (e *Env) CompactEtcd() error {
	out, err := e.etcdPost("/v3/kv/range", `{"key":"AA=="}`) // any key: the header has the revision
	if err != nil {
		return err
	}
	header, _ := out["header"].(map[string]any)
	rev, _ := header["revision"].(string)
	if rev == "" {
		return fmt.Errorf("no revision in etcd's answer %v", out)
	}
	_, err = e.etcdPost("/v3/kv/compaction", `{"revision":"`+rev+`","physical":true}`)
	return err
}

// AdvanceEtcdRevision writes n times to a key outside the API server's
// prefix, as the other API servers of a highly available control plane
// keep writing while one is down. A restarted API server's watch cache
// then starts after every resourceVersion a client has seen, so watches
// from before the restart get 410 Gone and clients list again.
func (e *Env) AdvanceEtcdRevision(n int) error {
	for range n {
		// key and value: base64 of "herald-testenv-filler" and "x"
		if _, err := e.etcdPost("/v3/kv/put", `{"key":"aGVyYWxkLXRlc3RlbnYtZmlsbGVy","value":"eA=="}`); err != nil {
			return err
		}
	}
	return nil
}

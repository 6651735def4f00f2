package testenv

// Ports and readiness: a control plane's ports are picked free, then
// bound by its processes, which are ready when they answer as themselves.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// freePorts asks the kernel for n unused loopback ports. Another process
// could take one before we bind it; the start then fails with the port in
// the log, which is rare enough on a test machine.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// etcdIsOurs probes the etcd at EtcdURL once: healthy, and ours — its
// one member has this environment's peer URL. With control planes
// starting side by side, the etcd answering on a port picked free may be
// another test's, ours having failed to bind it: /health alone would
// take that one for ours.
func (e *Env) etcdIsOurs() bool {
	if !httpOK(http.DefaultClient, e.EtcdURL+"/health") {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.EtcdURL+"/v3/cluster/member/list", strings.NewReader("{}"))
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var list struct {
		Members []struct {
			PeerURLs []string `json:"peerURLs"`
		} `json:"members"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Members) != 1 {
		return false
	}
	return slices.Contains(list.Members[0].PeerURLs, e.etcdPeerURL)
}

// httpOK probes url once. Each probe is bounded: a port another listener
// took (tests run in parallel) may accept and never answer, and waitFor
// must still see the process exit.
func httpOK(client *http.Client, url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitFor polls ready until it holds, the process exits, or the timeout.
func waitFor(ctx context.Context, p *process, timeout time.Duration, ready func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !ready() {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited: %v", filepath.Base(p.cmd.Path), p.waitErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

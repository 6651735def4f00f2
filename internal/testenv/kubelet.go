package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Kubelet stands in for one node's kubelet, as far as the API server needs
// one: it serves GET /containerLogs/{namespace}/{pod}/{container} over TLS
// on a loopback port, which the Node object names (InternalIP 127.0.0.1,
// the kubelet endpoint's port), so that pods/log requests to the API
// server reach it through the API server's own proxy, as on a cluster.
// Without a kubelet CA the API server does not verify its certificate.
type Kubelet struct {
	Node   string
	server *httptest.Server

	mu       sync.Mutex
	requests []LogRequest
	logs     func(context.Context, LogRequest) (lines []string, status int)
}

// LogRequest is one containerLogs request the kubelet got.
type LogRequest struct {
	Namespace, Pod, Container string
	Previous                  bool
	TailLines, LimitBytes     int64 // -1: not given
}

// StartKubelet registers node (Ready) and serves its kubelet API. logs
// answers each request (its context ends with the request): the
// container's whole log as lines, or a status other than 200 to fail; the
// kubelet applies tailLines and limitBytes as the real one does (the last
// N lines, then at most M bytes of them).
func StartKubelet(ctx context.Context, client kubernetes.Interface, node string, logs func(context.Context, LogRequest) ([]string, int)) (*Kubelet, error) {
	k := &Kubelet{Node: node, logs: logs}
	k.server = httptest.NewUnstartedServer(http.HandlerFunc(k.serve))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	k.server.Listener = ln
	k.server.StartTLS()
	if err := k.Register(ctx, client, node); err != nil {
		k.server.Close()
		return nil, err
	}
	return k, nil
}

// Register adds another Node (Ready) whose kubelet is this one: many
// nodes, one stand-in.
func (k *Kubelet) Register(ctx context.Context, client kubernetes.Interface, node string) error {
	port := k.server.Listener.Addr().(*net.TCPAddr).Port
	n, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("registering node %s: %w", node, err)
	}
	n.Status = corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
		Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
	}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s status: %w", node, err)
	}
	return nil
}

// Close stops the kubelet (the Node stays, as after a kubelet crash).
func (k *Kubelet) Close() { k.server.Close() }

// Requests returns the containerLogs requests so far.
func (k *Kubelet) Requests() []LogRequest {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]LogRequest(nil), k.requests...)
}

func (k *Kubelet) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/containerLogs/") || len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	number := func(name string) int64 {
		if v, err := strconv.ParseInt(q.Get(name), 10, 64); err == nil {
			return v
		}
		return -1
	}
	req := LogRequest{Namespace: parts[0], Pod: parts[1], Container: parts[2], Previous: q.Get("previous") == "true",
		TailLines: number("tailLines"), LimitBytes: number("limitBytes")}
	k.mu.Lock()
	k.requests = append(k.requests, req)
	k.mu.Unlock()
	lines, status := k.logs(r.Context(), req)
	if status != http.StatusOK {
		http.Error(w, "stand-in kubelet: failing as told", status)
		return
	}
	if req.TailLines >= 0 && int64(len(lines)) > req.TailLines {
		lines = lines[int64(len(lines))-req.TailLines:]
	}
	body := strings.Join(lines, "\n")
	if len(lines) > 0 {
		body += "\n"
	}
	if req.LimitBytes >= 0 && int64(len(body)) > req.LimitBytes {
		body = body[:req.LimitBytes]
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprint(w, body)
}

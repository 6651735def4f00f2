package testenv

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Node is one real node beside the control plane: kube-scheduler and
// kube-controller-manager (so Deployments, ReplicaSets, Jobs and the node
// lifecycle are real), and a kubelet running real containers through
// containerd and runc, inside the node's network namespace.
type Node struct {
	// Name is the Node object's name.
	Name string
	// IP is the node's InternalIP (the kubelet listens there).
	IP string
	// HostIP is the host end of the node's link: the node and its pods
	// reach this machine there (the API server, a test's registry or
	// receivers listening on it).
	HostIP string

	dir        string
	network    *nodeNetwork
	forwarder  net.Listener
	runtime    *containerd
	cgroupRoot string

	mu                 sync.Mutex
	kubelet            *process
	kubeletArgs        []string
	kubeProxy          *process
	scheduler, ctrlMgr *process
	forwardWG          sync.WaitGroup
}

// kubeletUser is the API server's client certificate's user when it
// calls a kubelet (logs, exec); the kubelet asks the API server whether
// it may (Webhook authorization).
const kubeletUser = "kube-apiserver-kubelet-client"

// nodePlan is what Start must know of the node before the API server
// starts: its address, its credentials.
type nodePlan struct {
	network       *nodeNetwork
	name          string
	token         string
	dir           string
	ca            *certAuthority
	caFile        string
	apiserverArgs []string
}

// planNode sets up the node's network and certificates and returns the
// API server flags the node needs.
func planNode(dir string) (*nodePlan, error) {
	if err := checkNodePrerequisites(); err != nil {
		return nil, err
	}
	network, err := setUpNodeNetwork()
	if err != nil {
		return nil, err
	}
	p := &nodePlan{network: network, name: network.Namespace, dir: filepath.Join(dir, "node"), token: rand.Text()}
	fail := func(err error) (*nodePlan, error) { network.tearDown(); return nil, err }
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return fail(err)
	}
	if p.ca, err = newCertAuthority("herald-testenv-kubelet-client-ca"); err != nil {
		return fail(err)
	}
	p.caFile = filepath.Join(p.dir, "kubelet-client-ca.crt")
	certFile, keyFile := filepath.Join(p.dir, "apiserver-kubelet-client.crt"), filepath.Join(p.dir, "apiserver-kubelet-client.key")
	if err := p.ca.writeCert(p.caFile); err != nil {
		return fail(err)
	}
	if err := p.ca.issueClient(kubeletUser, certFile, keyFile); err != nil {
		return fail(err)
	}
	// Start also makes the API server advertise the host end of the veth
	// pair (its serving certificate then names it: the kubelet reaches
	// the API server there, forwarded to its loopback port) and
	// authorizes the kubelet as a node.
	p.apiserverArgs = []string{
		"--kubelet-client-certificate=" + certFile,
		"--kubelet-client-key=" + keyFile,
	}
	return p, nil
}

// startNode brings the planned node up against the running env.
func (e *Env) startNode(ctx context.Context, p *nodePlan, bins Binaries, logf func(string, ...any)) (n *Node, err error) {
	n = &Node{Name: p.name, IP: p.network.NodeIP, HostIP: p.network.HostIP, dir: p.dir, network: p.network, cgroupRoot: "/" + p.name}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, n.tails())
			n.stop(ctx, nil)
			n = nil
		}
	}()
	client, err := e.Client()
	if err != nil {
		return n, err
	}
	start := time.Now()
	// The API server may call the kubelet as kubeletUser.
	_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "herald-testenv:kubelet-api-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: kubeletUser}},
	}, metav1.CreateOptions{})
	if err != nil {
		return n, fmt.Errorf("binding the API server's kubelet client: %w", err)
	}
	port, _ := strconv.Atoi(e.Config.Host[strings.LastIndex(e.Config.Host, ":")+1:])
	if err := n.forwardAPIServer(port); err != nil {
		return n, err
	}

	// The images, built while nothing else needs the CPU.
	imageDir := filepath.Join(n.dir, "images")
	if err := os.MkdirAll(imageDir, 0o755); err != nil {
		return n, err
	}
	var archives []string
	for _, img := range nodeImages {
		archive, err := buildImageArchive(ctx, img.program, img.ref, imageDir)
		if err != nil {
			return n, err
		}
		archives = append(archives, archive)
	}
	if n.runtime, err = startContainerd(ctx, n.network, filepath.Join(n.dir, "containerd")); err != nil {
		return n, err
	}
	for _, archive := range archives {
		if err := n.runtime.importImage(ctx, archive); err != nil {
			return n, err
		}
	}
	if err := prepareCgroupRoot(n.cgroupRoot); err != nil {
		return n, err
	}

	// Scheduler and controller-manager: admin credentials, loopback.
	adminKubeconfig := filepath.Join(n.dir, "admin.kubeconfig")
	if err := writeKubeconfig(adminKubeconfig, e.Config.Host, e.Config.CAData, e.Config.BearerToken); err != nil {
		return n, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return n, err
	}
	n.scheduler, err = startProcess(bins.KubeScheduler, filepath.Join(n.dir, "kube-scheduler.log"),
		"--kubeconfig="+adminKubeconfig, "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[0]), "--leader-elect=false")
	if err != nil {
		return n, err
	}
	n.ctrlMgr, err = startProcess(bins.KubeControllerManager, filepath.Join(n.dir, "kube-controller-manager.log"),
		"--kubeconfig="+adminKubeconfig, "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[1]), "--leader-elect=false",
		// Every namespace gets kube-root-ca.crt, which the token volume
		// of a pod's ServiceAccount carries as its ca.crt.
		"--root-ca-file="+filepath.Join(e.Dir, "pki", "apiserver.crt"),
		// A stopped kubelet's node goes NotReady 10 s after its last
		// lease renewal (the default is 50 s).
		"--node-monitor-grace-period=10s", "--node-monitor-period=1s")
	if err != nil {
		return n, err
	}

	if err := n.writeKubeletConfig(e, p, bins.Kubelet); err != nil {
		return n, err
	}
	if err := n.StartKubelet(ctx); err != nil {
		return n, err
	}
	if err := n.startKubeProxy(ctx, e, bins.KubeProxy); err != nil {
		return n, err
	}
	if err := n.waitReady(ctx, client, corev1.ConditionTrue, 90*time.Second); err != nil {
		return n, fmt.Errorf("node %s did not become Ready: %w", n.Name, err)
	}
	// The API server refuses a pod whose namespace has no default
	// ServiceAccount yet ("error looking up service account"). The
	// controller-manager makes it soon after it starts, but beside a
	// busy suite once only after the node was Ready.
	if err := waitDefaultServiceAccount(ctx, client, "default", 60*time.Second); err != nil {
		return n, fmt.Errorf("node %s: the controller-manager made no default ServiceAccount: %w", n.Name, err)
	}
	logf("testenv: node %s (%s) Ready in %s: kubelet %s, kube-proxy, containerd, kube-scheduler, kube-controller-manager", n.Name, n.IP, time.Since(start).Round(100*time.Millisecond), KubeVersion)
	return n, nil
}

// TrustRegistry lets the node's containerd pull from the plain-HTTP
// registry at host (host:port, e.g. a Registry on the node's HostIP).
func (n *Node) TrustRegistry(host string) error { return n.runtime.trustRegistry(host) }

// LoadImage imports another image archive (the "docker save" layout) into
// the node's containerd; pods use it with imagePullPolicy: Never.
func (n *Node) LoadImage(ctx context.Context, archive string) error {
	return n.runtime.importImage(ctx, archive)
}

// waitReady waits until the Node's Ready condition has status want.
func (n *Node) waitReady(ctx context.Context, client kubernetes.Interface, want corev1.ConditionStatus, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n.mu.Lock()
		kubelet := n.kubelet
		n.mu.Unlock()
		if want == corev1.ConditionTrue && kubelet != nil {
			select {
			case <-kubelet.exited:
				return false, fmt.Errorf("kubelet exited: %v", kubelet.waitErr)
			default:
			}
		}
		node, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == want, nil
			}
		}
		return false, nil
	})
}

// waitDefaultServiceAccount waits until namespace has its default
// ServiceAccount, which pods that name none run as.
func waitDefaultServiceAccount(ctx context.Context, client kubernetes.Interface, namespace string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// tails returns the last lines of the node's logs, for start-up errors.
func (n *Node) tails() string {
	var b strings.Builder
	for _, p := range []*process{n.kubelet, n.kubeProxy, n.scheduler, n.ctrlMgr} {
		if p != nil {
			b.WriteString(p.tail(20) + "\n")
		}
	}
	if n.runtime != nil {
		b.WriteString(n.runtime.proc.tail(20))
	}
	return b.String()
}

// stop tears the node down so that nothing is left: the controllers
// stopped and every pod deleted (so the kubelet stops their containers and
// sandboxes, and no shim lingers), then the kubelet, containerd and
// whatever containers and pod network namespaces remain, the mounts under
// the node's directory, its cgroups, and its network.
func (n *Node) stop(ctx context.Context, client kubernetes.Interface) []error {
	var errs []error
	// The controllers first: a deleted pod of a ReplicaSet is replaced at
	// once, and the kubelet would be starting new sandboxes during the
	// teardown.
	n.ctrlMgr.stop()
	n.scheduler.stop()
	if client != nil && n.kubelet != nil {
		n.deleteAllPods(ctx, client)
	}
	n.mu.Lock()
	n.kubelet.stop()
	n.mu.Unlock()
	n.kubeProxy.stop()
	n.runtime.stop()
	if err := unmountUnder(n.dir); err != nil {
		errs = append(errs, err)
	}
	if err := removeCgroupRoot(n.cgroupRoot); err != nil {
		errs = append(errs, err)
	}
	if n.forwarder != nil {
		n.forwarder.Close()
	}
	if err := n.network.tearDown(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// deleteAllPods deletes every pod at once and waits (bounded) until the
// node runs no container.
func (n *Node) deleteAllPods(ctx context.Context, client kubernetes.Interface) {
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
	if err != nil {
		return
	}
	zero := int64(0)
	for _, pod := range pods.Items {
		client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		out, err := n.runtime.ctr(ctx, "tasks", "list", "--quiet")
		return err == nil && strings.TrimSpace(out) == "", nil
	})
}

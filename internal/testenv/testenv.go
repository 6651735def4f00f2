// Package testenv runs a real etcd and kube-apiserver on loopback ports for
// tests and the demo. By default there is no kubelet and no
// controller-manager: tests write pod status through the /status
// subresource themselves, for exact control. With Options.Node it also
// runs a real node: kube-scheduler, kube-controller-manager, and a kubelet
// with containerd and runc in a network namespace of its own (node.go).
package testenv

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// AdminUser is the user behind Env.Config; it is in system:masters.
const AdminUser = "herald-admin"

// ServiceCIDR is the Services' address range: 198.19.0.0/24, in the
// benchmarking range beside the test nodes' pod subnets (198.19.S.0/24
// for slots S from 1).
const ServiceCIDR = "198.19.0.0/24"

// Options tune Start.
type Options struct {
	// Logf receives progress lines (binary builds, start-up). Optional.
	Logf func(format string, args ...any)
	// Dir holds data, certificates and logs; a new temporary directory
	// (removed by Stop) when empty.
	Dir string
	// APIServerArgs are extra kube-apiserver flags (e.g.
	// --watch-cache=false, so that a compacted etcd answers an old watch
	// with 410 Gone).
	APIServerArgs []string
	// APIServerMemoryLimit, if set, is the API server's GOMEMLIMIT (as
	// "14GiB"): a benchmark at the size of the largest clusters holds the
	// API server's garbage to what the machine has.
	APIServerMemoryLimit string
	// Audit writes the API server's audit log (every request, metadata
	// level) to Dir/audit.log, for tests that count requests.
	Audit bool
	// Node starts a real node too (WithNode): scheduler,
	// controller-manager, containerd and a kubelet. Needs root and
	// Debian's containerd, runc and containernetworking-plugins.
	Node bool
	// freePorts picks the ports of each attempt (nil: freePorts); a test
	// hands out a taken one.
	freePorts func(n int) ([]int, error)
}

// WithNode is Options with a real node.
func WithNode(opts Options) Options {
	opts.Node = true
	return opts
}

// Env is a running control plane.
type Env struct {
	// Config is an admin client configuration.
	Config *rest.Config
	// EtcdURL is etcd's client URL, for tests that reach past the API.
	EtcdURL string
	// Dir holds the data, certificates and logs.
	Dir string
	// Node is the real node (Options.Node), or nil.
	Node *Node

	etcd, apiserver *process
	// etcdPeerURL tells our etcd from another answering on our port.
	etcdPeerURL   string
	ownDir        bool
	bins          Binaries
	etcdArgs      []string
	apiserverArgs []string
	apiserverEnv  []string
	// restarted: StopEtcd or StopAPIServer was called (Pool reuses
	// only control planes that ran without a break).
	restarted bool
}

// Start builds the binaries if needed, then starts etcd and kube-apiserver
// and waits until the API server is ready. On failure it stops whatever it
// started and returns an error with the tail of both logs.
func Start(ctx context.Context, opts Options) (env *Env, err error) {
	// The ports are picked free (freePorts) and bound a moment later by
	// etcd and the API server: with tests running in parallel, another
	// listener may take one in between. Such a start is made again on
	// new ports, in a directory of its own.
	for attempt := 1; ; attempt++ {
		try := opts
		if attempt > 1 && opts.Dir != "" {
			try.Dir = filepath.Join(opts.Dir, "attempt-"+strconv.Itoa(attempt))
			if err := os.MkdirAll(try.Dir, 0o700); err != nil {
				return nil, err
			}
		}
		env, err = start(ctx, try)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "bind: address already in use") {
			return env, err
		}
		if opts.Logf != nil {
			opts.Logf("testenv: a port was taken before it was bound; starting again on new ports: %v", err)
		}
	}
}

func start(ctx context.Context, opts Options) (env *Env, err error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	bins, err := EnsureBinaries(ctx, logf)
	if err != nil {
		return nil, err
	}
	var plan *nodePlan
	env = &Env{Dir: opts.Dir}
	if env.Dir == "" {
		if env.Dir, err = os.MkdirTemp("", "herald-testenv-"); err != nil {
			return nil, err
		}
		env.ownDir = true
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s\n%s", err, env.etcd.tail(30), env.apiserver.tail(30))
			if plan != nil && env.Node == nil {
				plan.network.tearDown()
			}
			env.Stop()
			env = nil
		}
	}()

	pick := opts.freePorts
	if pick == nil {
		pick = freePorts
	}
	ports, err := pick(3)
	if err != nil {
		return env, err
	}
	env.EtcdURL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
	env.etcdPeerURL = "http://127.0.0.1:" + strconv.Itoa(ports[1])
	env.bins = bins
	env.etcdArgs = []string{
		"--data-dir=" + filepath.Join(env.Dir, "etcd"),
		"--listen-client-urls=" + env.EtcdURL,
		"--advertise-client-urls=" + env.EtcdURL,
		"--listen-peer-urls=http://127.0.0.1:" + strconv.Itoa(ports[1]),
		"--initial-advertise-peer-urls=http://127.0.0.1:" + strconv.Itoa(ports[1]),
		"--initial-cluster=default=http://127.0.0.1:" + strconv.Itoa(ports[1]),
		"--unsafe-no-fsync",
		"--log-level=warn",
		// A soak writes ~1 MB/s of pod revisions; the default 2 GiB
		// backend quota filled in 54 minutes ("database space exceeded").
		"--quota-backend-bytes=8589934592",
	}
	if err := env.StartEtcd(ctx); err != nil {
		return env, err
	}

	certDir := filepath.Join(env.Dir, "pki")
	saKey := filepath.Join(env.Dir, "sa.key")
	tokens := filepath.Join(env.Dir, "tokens.csv")
	adminToken := rand.Text()
	if err := writeServiceAccountKey(saKey); err != nil {
		return env, err
	}
	tokenLines := adminToken + "," + AdminUser + ",uid-admin,\"system:masters\"\n"
	authorization := "--authorization-mode=RBAC"
	advertise := "127.0.0.1"
	if !opts.Node {
		// Without a controller-manager nobody creates the default
		// ServiceAccount that this admission plugin insists on. With a
		// node it stays: it gives pods their token volume, which
		// in-cluster configuration reads.
		env.apiserverArgs = append(env.apiserverArgs, "--disable-admission-plugins=ServiceAccount")
	}
	if opts.Node {
		if plan, err = planNode(env.Dir); err != nil {
			return env, err
		}
		tokenLines += plan.token + ",system:node:" + plan.name + ",uid-node,\"system:nodes\"\n"
		authorization = "--authorization-mode=Node,RBAC"
		advertise = plan.network.HostIP
	}
	if err := os.WriteFile(tokens, []byte(tokenLines), 0o600); err != nil {
		return env, err
	}
	port := strconv.Itoa(ports[2])
	if opts.APIServerMemoryLimit != "" {
		env.apiserverEnv = []string{"GOMEMLIMIT=" + opts.APIServerMemoryLimit}
	}
	env.apiserverArgs = append(env.apiserverArgs,
		"--etcd-servers="+env.EtcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address="+advertise,
		"--secure-port="+port,
		"--cert-dir="+certDir,
		"--token-auth-file="+tokens,
		authorization,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+saKey,
		"--service-account-signing-key-file="+saKey,
		// Service addresses from the benchmarking range, like the
		// node's (netns.go): the kubernetes Service is 198.19.0.1, the
		// API server's serving certificate names it, and a packet to a
		// Service that kube-proxy has not translated goes nowhere but
		// the test's own network.
		"--service-cluster-ip-range="+ServiceCIDR,
		// pods/log is proxied to the node's kubelet; a test's stand-in
		// kubelet (StartKubelet) listens on loopback, its InternalIP.
		"--kubelet-preferred-address-types=InternalIP",
	)
	if opts.Audit {
		policy := filepath.Join(env.Dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Metadata\n"), 0o600); err != nil {
			return env, err
		}
		env.apiserverArgs = append(env.apiserverArgs, "--audit-policy-file="+policy, "--audit-log-path="+env.AuditLog(),
			"--audit-log-mode=blocking", "--audit-log-format=json")
	}
	if plan != nil {
		env.apiserverArgs = append(env.apiserverArgs, plan.apiserverArgs...)
	}
	env.apiserverArgs = append(env.apiserverArgs, opts.APIServerArgs...)
	env.Config = &rest.Config{
		Host:        "https://127.0.0.1:" + port,
		BearerToken: adminToken,
		QPS:         1000,
		Burst:       2000,
	}
	if err := env.StartAPIServer(ctx); err != nil {
		return env, err
	}
	logf("testenv: kube-apiserver %s ready at %s (dir %s)", KubeVersion, env.Config.Host, env.Dir)
	if plan != nil {
		if env.Node, err = env.startNode(ctx, plan, bins, logf); err != nil {
			return env, err
		}
	}
	return env, nil
}

// AuditLog is where the API server writes its audit log (Options.Audit).
func (e *Env) AuditLog() string { return filepath.Join(e.Dir, "audit.log") }

// StartEtcd starts etcd on its port and data (again, after StopEtcd) and
// waits until it is healthy.
func (e *Env) StartEtcd(ctx context.Context) error {
	var err error
	if e.etcd, err = startProcess(e.bins.Etcd, filepath.Join(e.Dir, "etcd.log"), e.etcdArgs...); err != nil {
		return err
	}
	if err := waitFor(ctx, e.etcd, 30*time.Second, func() bool { return e.etcdIsOurs() }); err != nil {
		return fmt.Errorf("etcd did not become healthy: %w", err)
	}
	return nil
}

// StopEtcd stops etcd; the API server stays up and fails its requests.
func (e *Env) StopEtcd() { e.restarted = true; e.etcd.stop() }

// StartAPIServer starts kube-apiserver on its port with its certificates
// (again, after StopAPIServer) and waits until /readyz answers.
func (e *Env) StartAPIServer(ctx context.Context) error {
	var err error
	if e.apiserver, err = startProcessWithEnv(e.bins.KubeAPIServer, filepath.Join(e.Dir, "apiserver.log"), e.apiserverEnv, e.apiserverArgs...); err != nil {
		return err
	}
	certDir := filepath.Join(e.Dir, "pki")
	err = waitFor(ctx, e.apiserver, 60*time.Second, func() bool {
		ca, err := os.ReadFile(filepath.Join(certDir, "apiserver.crt"))
		if err != nil {
			return false
		}
		e.Config.CAData = ca
		client, err := rest.HTTPClientFor(e.Config)
		return err == nil && httpOK(client, e.Config.Host+"/readyz")
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver did not become ready: %w", err)
	}
	return nil
}

// StopAPIServer stops kube-apiserver (SIGTERM, as a rolling upgrade of
// the control plane would); etcd keeps its data.
func (e *Env) StopAPIServer() { e.restarted = true; e.apiserver.stop() }

// Client returns an admin clientset.
func (e *Env) Client() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(e.Config)
}

// ConfigFor returns a configuration that acts as user (and groups) through
// impersonation, so RBAC rules can be tested without minting credentials.
func (e *Env) ConfigFor(user string, groups ...string) *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return cfg
}

// WriteKubeconfig writes a kubeconfig of Config (admin, or the user it
// impersonates), for running herald as a separate process against this
// control plane.
func (e *Env) WriteKubeconfig(path string) error {
	return WriteKubeconfigOf(path, e.Config)
}

// WriteKubeconfigOf writes a kubeconfig of cfg (a token, maybe an
// impersonated user), e.g. one of ServiceAccountConfig.
func WriteKubeconfigOf(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["testenv"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken,
		Impersonate: cfg.Impersonate.UserName, ImpersonateGroups: cfg.Impersonate.Groups}
	kc.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: "admin"}
	kc.CurrentContext = "testenv"
	return clientcmd.WriteToFile(*kc, path)
}

// PIDs are the process ids of the API server and etcd, for tests that
// check nothing is left running.
func (e *Env) PIDs() []int {
	var pids []int
	for _, p := range []*process{e.apiserver, e.etcd} {
		if p != nil {
			pids = append(pids, p.cmd.Process.Pid)
		}
	}
	return pids
}

// Stop stops the node (if any), the API server, then etcd, and removes a
// temporary Dir. It is safe to call more than once.
func (e *Env) Stop() {
	_ = e.StopChecked()
}

// StopChecked is Stop, returning what the node's teardown could not
// remove (mounts, cgroups, network), for tests that check nothing is left.
func (e *Env) StopChecked() error {
	var errs []error
	if e.Node != nil {
		client, _ := e.Client()
		errs = e.Node.stop(context.Background(), client)
		e.Node = nil
	}
	e.apiserver.stop()
	e.etcd.stop()
	if e.ownDir {
		os.RemoveAll(e.Dir)
	}
	return errors.Join(errs...)
}

func writeServiceAccountKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	return os.WriteFile(path, pem.EncodeToMemory(block), 0o600)
}

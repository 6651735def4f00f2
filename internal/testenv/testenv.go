// Package testenv runs a real etcd and kube-apiserver on loopback ports for
// tests and the demo. There is no kubelet and no controller-manager: tests
// write pod status through the /status subresource themselves.
package testenv

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// AdminUser is the user behind Env.Config; it is in system:masters.
const AdminUser = "herald-admin"

// Options tune Start.
type Options struct {
	// Logf receives progress lines (binary builds, start-up). Optional.
	Logf func(format string, args ...any)
	// Dir holds data, certificates and logs; a new temporary directory
	// (removed by Stop) when empty.
	Dir string
}

// Env is a running control plane.
type Env struct {
	// Config is an admin client configuration.
	Config *rest.Config
	// EtcdURL is etcd's client URL, for tests that reach past the API.
	EtcdURL string
	// Dir holds the data, certificates and logs.
	Dir string

	etcd, apiserver *process
	ownDir          bool
}

// Start builds the binaries if needed, then starts etcd and kube-apiserver
// and waits until the API server is ready. On failure it stops whatever it
// started and returns an error with the tail of both logs.
func Start(ctx context.Context, opts Options) (env *Env, err error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	bins, err := EnsureBinaries(ctx, logf)
	if err != nil {
		return nil, err
	}
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
			env.Stop()
			env = nil
		}
	}()

	ports, err := freePorts(3)
	if err != nil {
		return env, err
	}
	env.EtcdURL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
	env.etcd, err = startProcess(bins.Etcd, filepath.Join(env.Dir, "etcd.log"),
		"--data-dir="+filepath.Join(env.Dir, "etcd"),
		"--listen-client-urls="+env.EtcdURL,
		"--advertise-client-urls="+env.EtcdURL,
		"--listen-peer-urls=http://127.0.0.1:"+strconv.Itoa(ports[1]),
		"--initial-advertise-peer-urls=http://127.0.0.1:"+strconv.Itoa(ports[1]),
		"--initial-cluster=default=http://127.0.0.1:"+strconv.Itoa(ports[1]),
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	if err != nil {
		return env, err
	}
	if err := waitFor(ctx, env.etcd, 30*time.Second, func() bool { return httpOK(http.DefaultClient, env.EtcdURL+"/health") }); err != nil {
		return env, fmt.Errorf("etcd did not become healthy: %w", err)
	}

	certDir := filepath.Join(env.Dir, "pki")
	saKey := filepath.Join(env.Dir, "sa.key")
	tokens := filepath.Join(env.Dir, "tokens.csv")
	adminToken := rand.Text()
	if err := writeServiceAccountKey(saKey); err != nil {
		return env, err
	}
	if err := os.WriteFile(tokens, []byte(adminToken+","+AdminUser+",uid-admin,\"system:masters\"\n"), 0o600); err != nil {
		return env, err
	}
	port := strconv.Itoa(ports[2])
	env.apiserver, err = startProcess(bins.KubeAPIServer, filepath.Join(env.Dir, "apiserver.log"),
		"--etcd-servers="+env.EtcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+port,
		"--cert-dir="+certDir,
		"--token-auth-file="+tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+saKey,
		"--service-account-signing-key-file="+saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		// Without a controller-manager nobody creates the default
		// ServiceAccount that this admission plugin insists on.
		"--disable-admission-plugins=ServiceAccount",
	)
	if err != nil {
		return env, err
	}
	env.Config = &rest.Config{
		Host:        "https://127.0.0.1:" + port,
		BearerToken: adminToken,
		QPS:         1000,
		Burst:       2000,
	}
	err = waitFor(ctx, env.apiserver, 60*time.Second, func() bool {
		ca, err := os.ReadFile(filepath.Join(certDir, "apiserver.crt"))
		if err != nil {
			return false
		}
		env.Config.CAData = ca
		client, err := rest.HTTPClientFor(env.Config)
		return err == nil && httpOK(client, env.Config.Host+"/readyz")
	})
	if err != nil {
		return env, fmt.Errorf("kube-apiserver did not become ready: %w", err)
	}
	logf("testenv: kube-apiserver %s ready at %s (dir %s)", KubeVersion, env.Config.Host, env.Dir)
	return env, nil
}

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
	kc := clientcmdapi.NewConfig()
	kc.Clusters["testenv"] = &clientcmdapi.Cluster{Server: e.Config.Host, CertificateAuthorityData: e.Config.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: e.Config.BearerToken,
		Impersonate: e.Config.Impersonate.UserName, ImpersonateGroups: e.Config.Impersonate.Groups}
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

// Stop stops the API server, then etcd, and removes a temporary Dir.
// It is safe to call more than once.
func (e *Env) Stop() {
	e.apiserver.stop()
	e.etcd.stop()
	if e.ownDir {
		os.RemoveAll(e.Dir)
	}
}

func writeServiceAccountKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	return os.WriteFile(path, pem.EncodeToMemory(block), 0o600)
}

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

func httpOK(client *http.Client, url string) bool {
	resp, err := client.Get(url)
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

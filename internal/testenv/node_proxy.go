package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// startKubeProxy runs kube-proxy in iptables mode inside the node's
// network namespace, so Services work for the node's pods as on a
// cluster: a pod with in-cluster configuration reaches the API server
// through the kubernetes Service (KUBERNETES_SERVICE_HOST), translated
// to the API server's advertised address, the host end of the node's
// link.
func (n *Node) startKubeProxy(ctx context.Context, e *Env, bin string) error {
	kubeconfig := filepath.Join(n.dir, "kube-proxy.kubeconfig")
	port := e.Config.Host[strings.LastIndex(e.Config.Host, ":")+1:]
	if err := writeKubeconfig(kubeconfig, "https://"+net.JoinHostPort(n.network.HostIP, port), e.Config.CAData, e.Config.BearerToken); err != nil {
		return err
	}
	// conntrack maxPerCore 0 and the zero timeouts: leave the
	// machine-wide conntrack settings alone (a network namespace cannot
	// set them). localhostNodePorts off: no route_localnet. Pods of the
	// node's subnet are the cluster's (detectLocalMode ClusterCIDR).
	// masqueradeAll: a pod reaching another pod of the node's bridge
	// through a Service gets the answer back through the node (which
	// undoes the translation) and not straight over the bridge, which
	// would need br_netfilter on the machine.
	config := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: %s:10256
metricsBindAddress: %s:10249
mode: iptables
clusterCIDR: %s
detectLocalMode: ClusterCIDR
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  masqueradeAll: true
  localhostNodePorts: false
  minSyncPeriod: 1s
  syncPeriod: 30s
`, kubeconfig, n.Name, n.IP, n.IP, n.IP, n.network.PodSubnet)
	configPath := filepath.Join(n.dir, "kube-proxy.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return err
	}
	prog, argv := n.network.nsenter(bin, "--config="+configPath, "--v=2")
	var err error
	if n.kubeProxy, err = startProcess(prog, filepath.Join(n.dir, "kube-proxy.log"), argv...); err != nil {
		return err
	}
	// Healthy once it has written the Services' rules.
	client := &http.Client{Timeout: time.Second}
	healthz := "http://" + net.JoinHostPort(n.IP, "10256") + "/healthz"
	if err := waitFor(ctx, n.kubeProxy, 60*time.Second, func() bool { return httpOK(client, healthz) }); err != nil {
		return fmt.Errorf("kube-proxy did not become healthy: %w\n%s", err, n.kubeProxy.tail(20))
	}
	return nil
}

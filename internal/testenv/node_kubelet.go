package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// The node's kubelet: its configuration, and starting and stopping it
// (a test stops it to make the node go NotReady).

func (n *Node) writeKubeletConfig(e *Env, p *nodePlan, kubeletBin string) error {
	kubeconfig := filepath.Join(n.dir, "kubelet.kubeconfig")
	port := e.Config.Host[strings.LastIndex(e.Config.Host, ":")+1:]
	if err := writeKubeconfig(kubeconfig, "https://"+net.JoinHostPort(n.network.HostIP, port), e.Config.CAData, p.token); err != nil {
		return err
	}
	// syncFrequency 5 s: the waiting/CrashLoopBackOff state only shows
	// when a sync lands inside a back-off; with the default 1 m the
	// first appeared after ~4 min. failCgroupV1: these VMs mount cgroup
	// v1 (the kubelet then emits a CgroupV1 warning event). Eviction and
	// image GC thresholds low: a busy build machine's disk must not evict
	// test pods or delete the local images. volumeStatsAggPeriod 2s (1m
	// by default): the volume-filling test sees a volume fill within a
	// minute, measured as the kubelet measures.
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: 10250
readOnlyPort: 0
healthzPort: 0
cgroupDriver: cgroupfs
cgroupRoot: %s
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://%s
podLogsDir: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization:
  mode: Webhook
clusterDNS: [%s]
clusterDomain: cluster.local
syncFrequency: 5s
nodeStatusUpdateFrequency: 2s
nodeLeaseDurationSeconds: 8
evictionHard: {memory.available: "1%%", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
volumeStatsAggPeriod: 2s
`, n.IP, n.cgroupRoot, n.runtime.socket, filepath.Join(n.dir, "pod-logs"), p.caFile, n.network.HostIP)
	configPath := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return err
	}
	n.kubeletArgs = []string{kubeletBin,
		"--config=" + configPath,
		"--kubeconfig=" + kubeconfig,
		"--hostname-override=" + n.Name,
		"--node-ip=" + n.IP,
		"--root-dir=" + filepath.Join(n.dir, "kubelet"),
		"--cert-dir=" + filepath.Join(n.dir, "kubelet-pki"),
		"--v=2",
	}
	return nil
}

// StartKubelet starts the node's kubelet (again, after StopKubelet).
func (n *Node) StartKubelet(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	prog, argv := n.network.nsenter(n.kubeletArgs...)
	var err error
	n.kubelet, err = startProcess(prog, filepath.Join(n.dir, "kubelet.log"), argv...)
	return err
}

// StopKubelet stops the kubelet, as a crashed or stopped kubelet would
// be: the containers keep running; the node lifecycle controller marks the
// node NotReady after its grace period (10 s here).
func (n *Node) StopKubelet() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.kubelet.stop()
}

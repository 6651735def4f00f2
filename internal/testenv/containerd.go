package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Debian's packages the test node runs on: containerd 1.6 (kubelet 1.36
// supports it and warns that 1.37 will not), runc, the CNI plugins and
// iptables.
var nodePackages = []struct{ program, pkg string }{
	{"containerd", "containerd"},
	{"containerd-shim-runc-v2", "containerd"},
	{"ctr", "containerd"},
	{"runc", "runc"},
	{"/usr/lib/cni/bridge", "containernetworking-plugins"},
	{"nsenter", "util-linux"},
	{"ip", "iproute2"},
	// kube-proxy's iptables mode (Services, the kubernetes Service
	// among them, for pods that use in-cluster config).
	{"iptables-restore", "iptables"},
}

// cniBinDir is where Debian's containernetworking-plugins installs.
const cniBinDir = "/usr/lib/cni"

// checkNodePrerequisites says what the machine lacks for a real node:
// root (namespaces, cgroups, mounts) and the packages above.
func checkNodePrerequisites() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("a real test node needs root (network namespaces, cgroups, mounts); run as root or use the fast mode without WithNode")
	}
	var missing []string
	for _, p := range nodePackages {
		if _, err := exec.LookPath(p.program); err != nil && !slices.Contains(missing, p.pkg) {
			missing = append(missing, p.pkg)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("a real test node needs Debian's %s: apt-get install -y %s (make test does this)",
			strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	return nil
}

// containerd is the node's container runtime, with all of its state under
// dir so that it never meets the machine's own containerd, if any.
type containerd struct {
	dir, socket string
	proc        *process
}

func (c *containerd) runcRoot() string { return filepath.Join(c.dir, "runc") }

// hostsDir holds a hosts.toml per registry (containerd's registry host
// configuration, read at every pull: no restart to add one).
func (c *containerd) hostsDir() string { return filepath.Join(c.dir, "certs.d") }

// trustRegistry lets the node pull from a plain-HTTP registry at host
// (host:port), as a cluster's nodes are configured for a registry of
// their own.
func (c *containerd) trustRegistry(host string) error {
	dir := filepath.Join(c.hostsDir(), host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	hosts := fmt.Sprintf("server = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", host, host)
	return os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(hosts), 0o644)
}

// startContainerd writes containerd's config and starts it inside the
// node's network namespace (the CRI plugin sets up pod networks there).
func startContainerd(ctx context.Context, n *nodeNetwork, dir string) (*containerd, error) {
	c := &containerd{dir: dir, socket: filepath.Join(dir, "containerd.sock")}
	cniConf := filepath.Join(dir, "cni", "net.d")
	if err := os.MkdirAll(cniConf, 0o755); err != nil {
		return nil, err
	}
	// A bridge inside the node, pod addresses from the node's slot, and
	// a default route through the node: to Services (kube-proxy) and
	// the host end of its link, which is all the node itself reaches.
	bridge := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "herald-test",
  "plugins": [{
    "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
    "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}
  }]
}`, filepath.Join(dir, "cni", "ipam"), n.PodSubnet)
	if err := os.WriteFile(filepath.Join(cniConf, "10-herald.conflist"), []byte(bridge), 0o644); err != nil {
		return nil, err
	}
	// restrict_oom_score_adj: these VMs lack CAP_SYS_RESOURCE; without
	// it every sandbox fails with "can't get final child's PID from
	// pipe: EOF". The runc root is ours too, so teardown finds every
	// container of this node and no other.
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %q

[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  enable_cdi = false
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      Root = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), c.socket, PauseImage, c.hostsDir(), cniBinDir, cniConf, c.runcRoot())
	configPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return nil, err
	}
	prog, args := n.nsenter("containerd", "--config", configPath)
	var err error
	if c.proc, err = startProcess(prog, filepath.Join(dir, "containerd.log"), args...); err != nil {
		return nil, err
	}
	err = waitFor(ctx, c.proc, 30*time.Second, func() bool {
		conn, err := net.Dial("unix", c.socket)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	if err != nil {
		c.proc.stop()
		return nil, fmt.Errorf("containerd did not start: %w\n%s", err, c.proc.tail(20))
	}
	return c, nil
}

// ctr runs containerd's client against this containerd, in the
// namespace the CRI plugin (and so the kubelet) uses.
func (c *containerd) ctr(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", c.socket, "--namespace", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// importImage loads an image archive into the node.
func (c *containerd) importImage(ctx context.Context, archive string) error {
	_, err := c.ctr(ctx, "images", "import", archive)
	return err
}

// podNetworkNamespaces lists the network namespaces containerd made for
// the node's pod sandboxes: containerd 1.6 puts them in the machine's
// /var/run/netns, whatever its state directory.
func (c *containerd) podNetworkNamespaces(ctx context.Context) []string {
	ids, err := c.ctr(ctx, "containers", "list", "--quiet")
	if err != nil {
		return nil
	}
	var paths []string
	for _, id := range strings.Fields(ids) {
		info, err := c.ctr(ctx, "containers", "info", id)
		if err != nil {
			continue
		}
		var record struct {
			Spec struct {
				Linux struct {
					Namespaces []struct{ Type, Path string }
				}
			}
		}
		if json.Unmarshal([]byte(info), &record) != nil {
			continue
		}
		for _, ns := range record.Spec.Linux.Namespaces {
			if ns.Type == "network" && (strings.HasPrefix(ns.Path, "/var/run/netns/") || strings.HasPrefix(ns.Path, "/run/netns/")) {
				paths = append(paths, ns.Path)
			}
		}
	}
	return paths
}

// stop kills what is left of the node's containers (runc, under our own
// root), then containerd, then the shims, which outlive containerd by
// design, and removes the pods' network namespaces containerd left.
func (c *containerd) stop() {
	if c == nil {
		return
	}
	podNetNS := c.podNetworkNamespaces(context.Background())
	defer func() {
		for _, p := range podNetNS {
			syscall.Unmount(p, syscall.MNT_DETACH)
			os.Remove(p)
		}
	}()
	runcRoot := filepath.Join(c.runcRoot(), "k8s.io")
	if out, err := exec.Command("runc", "--root", runcRoot, "list", "-q").Output(); err == nil {
		for _, id := range strings.Fields(string(out)) {
			exec.Command("runc", "--root", runcRoot, "kill", id, "KILL").Run()
			exec.Command("runc", "--root", runcRoot, "delete", "--force", id).Run()
		}
	}
	c.proc.stop()
	// The shims name our socket on their command line.
	exec.Command("pkill", "-KILL", "-f", "containerd-shim-runc-v2 .*-address "+c.socket).Run()
}

// EnsureNodePackages installs the Debian packages a real node needs
// (apt-get, as root) when any is missing; make test and make demo call it
// through internal/testenv/build. Where that cannot be done it says what
// is missing and how to get it.
func EnsureNodePackages(ctx context.Context, logf func(format string, args ...any)) error {
	var missing []string
	for _, p := range nodePackages {
		if _, err := exec.LookPath(p.program); err != nil && !slices.Contains(missing, p.pkg) {
			missing = append(missing, p.pkg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("the real-node tests need Debian's %s and root to install them: sudo apt-get install -y %s",
			strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	logf("testenv: installing %s for the real test node (apt-get)", strings.Join(missing, ", "))
	install := exec.CommandContext(ctx, "apt-get", append([]string{"install", "-y", "--no-install-recommends"}, missing...)...)
	install.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	out, err := install.CombinedOutput()
	if err != nil {
		// A fresh machine's package lists may be missing or stale.
		if upd, uerr := exec.CommandContext(ctx, "apt-get", "update").CombinedOutput(); uerr != nil {
			return fmt.Errorf("apt-get update: %w\n%s", uerr, upd)
		}
		install = exec.CommandContext(ctx, "apt-get", append([]string{"install", "-y", "--no-install-recommends"}, missing...)...)
		install.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err = install.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get install %s: %w\n%s", strings.Join(missing, " "), err, out)
		}
	}
	return checkNodePrerequisites()
}

package testenv

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// nodeNetwork is the test node's network: a network namespace (the node,
// as a kind node is a container) joined to the host by a veth pair. Every
// address is from 198.18.0.0/15, the benchmarking range, which is neither
// a private nor a public range: the host end 198.18.S.1/30, the node
// 198.18.S.2/30, its pods 198.19.S.0/24 on a bridge inside the node. S is
// the slot, which keeps concurrent test nodes apart.
type nodeNetwork struct {
	Slot      int
	Namespace string // ip netns name
	HostIP    string // the host end: the API server is reachable here
	NodeIP    string
	PodSubnet string
	hostLink  string
}

// slotDir records which process holds each slot, so that a node whose
// test binary was killed (and could not tear it down) is removed by the
// next one.
const slotDir = "/run/herald-testenv"

// setUpNodeNetwork takes a free slot (its veth name is the claim: link
// names are unique, so two callers cannot both create it) and wires it.
func setUpNodeNetwork() (*nodeNetwork, error) {
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("the test node needs iproute2's ip (apt-get install iproute2): %w", err)
	}
	sweepAbandonedSlots()
	start := 1 + rand.IntN(250)
	for i := range 250 {
		slot := 1 + (start+i)%250
		n := &nodeNetwork{
			Slot:      slot,
			Namespace: fmt.Sprintf("herald-node-%d", slot),
			HostIP:    fmt.Sprintf("198.18.%d.1", slot),
			NodeIP:    fmt.Sprintf("198.18.%d.2", slot),
			PodSubnet: fmt.Sprintf("198.19.%d.0/24", slot),
			hostLink:  fmt.Sprintf("hrld%d", slot),
		}
		nodeLink := n.hostLink + "n"
		if err := ip("link", "add", n.hostLink, "type", "veth", "peer", "name", nodeLink); err != nil {
			if strings.Contains(err.Error(), "File exists") {
				continue // another test node's slot
			}
			return nil, err
		}
		steps := [][]string{
			{"netns", "add", n.Namespace},
			{"link", "set", nodeLink, "netns", n.Namespace},
			{"addr", "add", n.HostIP + "/30", "dev", n.hostLink},
			{"link", "set", n.hostLink, "up"},
			{"-n", n.Namespace, "addr", "add", n.NodeIP + "/30", "dev", nodeLink},
			{"-n", n.Namespace, "link", "set", nodeLink, "up"},
			{"-n", n.Namespace, "link", "set", "lo", "up"},
			// The pods' answers come back to the host (the API server
			// behind the kubernetes Service, a test's receivers on
			// HostIP): their subnet is behind the node.
			{"route", "add", n.PodSubnet, "via", n.NodeIP, "dev", n.hostLink},
		}
		for _, step := range steps {
			if err := ip(step...); err != nil {
				n.tearDown()
				return nil, err
			}
		}
		if err := os.MkdirAll(slotDir, 0o755); err == nil {
			os.WriteFile(n.slotFile(), []byte(strconv.Itoa(os.Getpid())), 0o644)
		}
		return n, nil
	}
	return nil, fmt.Errorf("no free test-node slot in 198.18.0.0/15 (every hrldN link exists)")
}

// nsenter returns the command line that runs argv inside the node's
// network namespace only: unlike `ip netns exec`, it keeps the host's
// mount namespace, so the volumes the kubelet mounts are the ones
// containerd sees.
func (n *nodeNetwork) nsenter(argv ...string) (string, []string) {
	return "nsenter", append([]string{"--net=/run/netns/" + n.Namespace, "--"}, argv...)
}

// tearDown deletes the veth pair (both ends go with one) and the
// namespace. Safe to call more than once.
func (n *nodeNetwork) tearDown() error {
	var errs []string
	if err := ip("link", "del", n.hostLink); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
		errs = append(errs, err.Error())
	}
	if err := ip("netns", "del", n.Namespace); err != nil && !strings.Contains(err.Error(), "No such file") {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("tearing down the test node's network: %s", strings.Join(errs, "; "))
	}
	os.Remove(n.slotFile())
	return nil
}

func (n *nodeNetwork) slotFile() string { return filepath.Join(slotDir, "slot-"+strconv.Itoa(n.Slot)) }

// sweepAbandonedSlots removes the nodes of test processes that died
// without tearing down: their containers (cgroups), network and claim.
func sweepAbandonedSlots() {
	files, _ := filepath.Glob(filepath.Join(slotDir, "slot-*"))
	for _, f := range files {
		pid, _ := os.ReadFile(f)
		p, err := strconv.Atoi(strings.TrimSpace(string(pid)))
		if err == nil && syscall.Kill(p, 0) == nil {
			continue // its process lives
		}
		slot, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(f), "slot-"))
		if err != nil {
			continue
		}
		n := &nodeNetwork{Slot: slot, Namespace: fmt.Sprintf("herald-node-%d", slot), hostLink: fmt.Sprintf("hrld%d", slot)}
		removeCgroupRoot("/" + n.Namespace)
		n.tearDown()
	}
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

package testenv

// The node's footprint on the host: the API server's forward for the
// kubelet, the mounts the node leaves to unmount, kubeconfig files.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// forwardAPIServer listens on the host end of the veth pair and forwards
// to the API server's loopback port: the API server binds one address,
// and the node cannot reach the host's loopback.
func (n *Node) forwardAPIServer(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(n.network.HostIP, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("listening for the node on the host end of its veth: %w", err)
	}
	n.forwarder = l
	n.forwardWG.Go(func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			n.forwardWG.Go(func() {
				defer conn.Close()
				upstream, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
				if err != nil {
					return
				}
				defer upstream.Close()
				done := make(chan struct{})
				go func() { io.Copy(upstream, conn); upstream.(*net.TCPConn).CloseWrite(); close(done) }()
				io.Copy(conn, upstream)
				conn.(*net.TCPConn).CloseWrite()
				<-done
			})
		}
	})
	return nil
}

// unmountUnder unmounts every mount point below dir (volumes, container
// root filesystems, sandbox shm), deepest first.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, fields[4])
		}
	}
	slices.Sort(points)
	slices.Reverse(points)
	var left []string
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
			left = append(left, p+": "+err.Error())
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("test node mounts left: %s", strings.Join(left, "; "))
	}
	return nil
}

// writeKubeconfig writes a token kubeconfig for server.
func writeKubeconfig(path, server string, caData []byte, token string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["testenv"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: "user"}
	kc.CurrentContext = "testenv"
	return clientcmd.WriteToFile(*kc, path)
}

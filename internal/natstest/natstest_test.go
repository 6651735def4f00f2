package natstest

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStartBelowEphemeralRange: a server started on port 0 listens
// below the kernel's ephemeral range, where no outgoing connection takes
// its port while it is down, and comes back on that port.
func TestStartBelowEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ip_local_port_range to check against: %v", err)
	}
	low, err := strconv.Atoi(strings.Fields(string(b))[0])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := Start(t, dir, 0)
	port := s.Addr().(*net.TCPAddr).Port
	if port >= low {
		t.Errorf("listening on %d, in the ephemeral range (from %d)", port, low)
	}
	s.Shutdown()
	s.WaitForShutdown()
	again := Start(t, dir, port)
	defer again.Shutdown()
	if got := again.Addr().(*net.TCPAddr).Port; got != port {
		t.Errorf("back on %d, want %d", got, port)
	}
}

// TestStartSaysWhy: a server that cannot listen says so, with the
// server's own words, rather than only "not ready".
func TestStartSaysWhy(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = start(t.TempDir(), l.Addr().(*net.TCPAddr).Port, time.Second)
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("starting on a taken port: %v; want an error naming the listen that failed", err)
	}
}

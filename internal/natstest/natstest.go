// Package natstest runs a real nats-server inside the test process, with
// JetStream, for the tests of the NATS sink and of delivery through
// outages. Only tests import it.
package natstest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Start runs a nats-server with JetStream that stores in dir and listens
// on port. Start it again with the same dir and port to bring a stopped
// server back with its streams.
//
// Port 0 picks a free port below the kernel's ephemeral range. A port
// from that range (what listening on port 0 gives) may be handed to an
// outgoing connection of another test while the server is down for an
// outage, and the server could not come back on it.
func Start(t testing.TB, dir string, port int) *server.Server {
	t.Helper()
	if port != 0 {
		s, err := start(dir, port, readyWithin)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var errs []string
	for range 5 {
		s, err := start(dir, freePortBelowEphemeral(t), readyWithin)
		if err == nil {
			return s
		}
		errs = append(errs, err.Error()) // taken between the check and the start
	}
	t.Fatalf("nats-server did not start on any of 5 ports: %s", strings.Join(errs, "; "))
	return nil
}

// readyWithin bounds the wait for a server to take connections.
const readyWithin = 10 * time.Second

// start runs the server on port and waits until it takes connections;
// if it does not within wait, the error says why, from the server's own
// log.
func start(dir string, port int, wait time.Duration) (*server.Server, error) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true})
	if err != nil {
		return nil, err
	}
	log := &errorLog{}
	s.SetLoggerV2(log, false, false, false)
	go s.Start()
	if !s.ReadyForConnections(wait) {
		s.Shutdown()
		return nil, fmt.Errorf("nats-server not ready on 127.0.0.1:%d within %v: %s", port, wait, log.String())
	}
	return s, nil
}

// freePortBelowEphemeral is a port under the kernel's ephemeral range
// (ip_local_port_range) that nothing listens on now.
func freePortBelowEphemeral(t testing.TB) int {
	t.Helper()
	low := 32768 // the kernel's default
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	from := max(1024, low-12000)
	if low <= from {
		t.Fatalf("no ports below the ephemeral range (it starts at %d)", low)
	}
	for range 100 {
		port := from + rand.IntN(low-from)
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			l.Close()
			return port
		}
	}
	t.Fatalf("no free port between %d and %d", from, low)
	return 0
}

// errorLog keeps the server's warnings and errors, for the message of a
// start that failed.
type errorLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *errorLog) add(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) < 20 {
		l.lines = append(l.lines, fmt.Sprintf(format, v...))
	}
}

func (l *errorLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return "it logged no error"
	}
	return strings.Join(l.lines, "; ")
}

func (l *errorLog) Noticef(string, ...any)         {}
func (l *errorLog) Debugf(string, ...any)          {}
func (l *errorLog) Tracef(string, ...any)          {}
func (l *errorLog) Warnf(format string, v ...any)  { l.add(format, v...) }
func (l *errorLog) Errorf(format string, v ...any) { l.add(format, v...) }
func (l *errorLog) Fatalf(format string, v ...any) { l.add(format, v...) }

// CreateStream makes the stream HERALD for the subjects herald.>, which
// drops a message whose Nats-Msg-Id it has seen within duplicates.
func CreateStream(t testing.TB, url string, duplicates time.Duration) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "HERALD", Subjects: []string{"herald.>"}, Duplicates: duplicates}); err != nil {
		t.Fatal(err)
	}
}

// Package natstest runs a real nats-server inside the test process, with
// JetStream, for the tests of the NATS sink and of delivery through
// outages. Only tests import it.
package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Start runs a nats-server with JetStream that stores in dir and listens
// on port (0: any free port). Start it again with the same dir and port
// to bring a stopped server back with its streams.
func Start(t testing.TB, dir string, port int) *server.Server {
	t.Helper()
	if port == 0 {
		port = -1 // nats-server's "any free port"
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return s
}

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

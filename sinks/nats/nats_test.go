package nats

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/natstest"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/sinks"
)

func notification(i int) incident.Notification {
	return incident.Notification{
		Incident: incident.Incident{
			ID: fmt.Sprintf("fp%04d-x", i), Fingerprint: fmt.Sprintf("fp%04d", i), Rule: "pod-oomkilled", Severity: "critical", Reason: "OOMKilled",
			Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: fmt.Sprintf("cache-%d", i), UID: "u"}, Container: "redis",
			Title: "OOMKilled", Text: "OOMKilled", Sinks: []string{"bus"},
		},
		Transition: incident.Firing, Seq: 1, Time: time.Now(),
	}
}

func TestSubject(t *testing.T) {
	p := sinks.NewPayload(notification(1))
	p.Object.Namespace = "team.a"
	if got := Subject("herald.{namespace}.{kind}.{reason}", p); got != "herald.team_a.Pod.OOMKilled" {
		t.Errorf("subject %q", got)
	}
	p.Object.Namespace = ""
	if got := Subject("x.{namespace}.{rule}.{transition}", p); got != "x._.pod-oomkilled.firing" {
		t.Errorf("subject %q", got)
	}
	// The cluster is a token too (a clusterName with a dot splits none).
	if got := Subject("{cluster}.{kind}", sinks.NewPayloadIn(notification(1), "prod.eu")); got != "prod_eu.Pod" {
		t.Errorf("subject with the cluster %q", got)
	}
	// An Event's reason is anyone's text: one token whatever it holds,
	// never a server subject.
	p.Incident.Reason = "$SYS.a\u00a0b\x00c\u2028d\xff*>"
	if got := Subject("{reason}.herald", p); got != "_SYS_a_b_c_d___.herald" {
		t.Errorf("subject %q", got)
	}
	// Nor any length: a subject past the server's 4 KB control line
	// would close herald's connection at every retry.
	p.Incident.Reason = strings.Repeat("r", 1<<20)
	if got := Subject("herald.{reason}", p); len(got) > len("herald.")+128 {
		t.Errorf("a subject of %d bytes from a reason of 1 MiB", len(got))
	}
}

// TestJetStreamSurvivesServerRestart sends 1,000 notifications through the
// dispatcher while the server is stopped for 10 s in the middle: all 1,000
// end up in the stream, none twice.
func TestJetStreamSurvivesServerRestart(t *testing.T) {
	dir := t.TempDir()
	srv := natstest.Start(t, dir, 0)
	port := srv.Addr().(*net.TCPAddr).Port
	addr := srv.ClientURL()
	var mu sync.Mutex
	current := srv
	defer func() { mu.Lock(); current.Shutdown(); mu.Unlock() }()

	natstest.CreateStream(t, addr, 5*time.Minute)
	ctx := context.Background()

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	sink, err := New(Options{Name: "bus", URL: addr, Subject: "herald.{namespace}.{kind}.{reason}", JetStream: true, Timeout: 2 * time.Second, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	d := sinks.NewDispatcher(logger, nil, sinks.LaneOptions{Sink: sink, QueueSize: 2000})
	delivered := make(chan string, 2000)
	d.OnDelivered(func(n incident.Notification, _ string) { delivered <- n.ID() })
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go d.Run(runCtx)

	restarted := make(chan struct{})
	for i := range 1000 {
		if i == 300 { // the server goes away for 10 s
			mu.Lock()
			current.Shutdown()
			mu.Unlock()
			go func() {
				time.Sleep(10 * time.Second) // the outage itself, not a wait for a condition
				s := natstest.Start(t, dir, port)
				mu.Lock()
				current = s
				mu.Unlock()
				close(restarted)
			}()
		}
		if err := d.Dispatch(ctx, notification(i)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // pace the load over ~5 s
	}
	<-restarted
	got := map[string]bool{}
	timeout := time.After(90 * time.Second)
	for len(got) < 1000 {
		select {
		case id := <-delivered:
			got[id] = true
		case <-timeout:
			t.Fatalf("%d of 1000 delivered", len(got))
		}
	}

	nc, err := nats.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	stream, err := js.Stream(ctx, "HERALD")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := stream.Info(ctx)
	if info.State.Msgs != 1000 {
		t.Errorf("stream holds %d messages, want 1000 (no loss, no duplicate)", info.State.Msgs)
	}
	cons, _ := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	ids := map[string]bool{}
	for len(ids) < int(info.State.Msgs) {
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			id := m.Headers().Get(jetstream.MsgIDHeader)
			if ids[id] {
				t.Errorf("duplicate %s in the stream", id)
			}
			ids[id] = true
		}
		if n == 0 {
			break
		}
	}
	for i := range 1000 {
		if !ids[fmt.Sprintf("fp%04d-x-1", i)] {
			t.Errorf("notification %d missing from the stream", i)
		}
	}
}

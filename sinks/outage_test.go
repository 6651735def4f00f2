package sinks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/natstest"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/sinks"
	natssink "github.com/herald-k8s/herald/sinks/nats"
	"github.com/herald-k8s/herald/sinks/slack"
	"github.com/herald-k8s/herald/sinks/webhook"
)

// idSet is what one receiver has got, by notification ID.
type idSet struct {
	mu  sync.Mutex
	ids map[string]int
}

func (s *idSet) add(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.ids[id]++
	}
}

func (s *idSet) missing(want []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range want {
		if s.ids[id] == 0 {
			out = append(out, id)
		}
	}
	return out
}

// TestTwoMinuteSinkOutages: each kind of sink is unreachable for two
// minutes while notifications keep coming — the webhook answers 503, the
// NATS server is stopped, Slack answers 429 with Retry-After — and after
// it recovers every notification arrives.
func TestTwoMinuteSinkOutages(t *testing.T) {
	if testing.Short() {
		t.Skip("two minutes of outage")
	}
	const outage, count = 2 * time.Minute, 60
	var down atomic.Bool
	down.Store(true)

	hookGot := &idSet{ids: map[string]int{}}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		var p sinks.Payload
		json.NewDecoder(r.Body).Decode(&p)
		hookGot.add(p.ID)
	}))
	defer hook.Close()

	slackGot := &idSet{ids: map[string]int{}}
	var slack429 atomic.Int32
	slackSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			slack429.Add(1)
			w.Header().Set("Retry-After", "5")
			http.Error(w, `{"ok":false,"error":"ratelimited"}`, http.StatusTooManyRequests)
			return
		}
		r.ParseForm()
		var meta struct {
			Payload struct {
				IDs []string `json:"ids"`
			} `json:"event_payload"`
		}
		json.Unmarshal([]byte(r.Form.Get("metadata")), &meta)
		slackGot.add(meta.Payload.IDs...)
		fmt.Fprint(w, `{"ok":true,"channel":"C1","ts":"1700000000.000100"}`)
	}))
	defer slackSrv.Close()

	dir := t.TempDir()
	ns := natstest.Start(t, dir, 0)
	port := ns.Addr().(*net.TCPAddr).Port
	natstest.CreateStream(t, ns.ClientURL(), 10*time.Minute)
	ctx := context.Background()

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	wh, err := webhook.New(webhook.Options{Name: "hook", URL: hook.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	bus, err := natssink.New(natssink.Options{Name: "bus", URL: ns.ClientURL(), Subject: "herald.{namespace}.{kind}.{reason}",
		JetStream: true, Timeout: 2 * time.Second, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	chat := slack.New(slack.Options{Name: "chat", Token: "xoxb-test", Channel: "#alerts", APIURL: slackSrv.URL + "/api/"})
	d := sinks.NewDispatcher(logger, nil,
		sinks.LaneOptions{Sink: wh, MaxAge: time.Hour},
		sinks.LaneOptions{Sink: bus, MaxAge: time.Hour},
		sinks.LaneOptions{Sink: chat, MaxAge: time.Hour, RateLimit: 1}, // Slack's default
	)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go d.Run(runCtx)

	ns.Shutdown() // NATS goes away with the others
	start := time.Now()
	var want []string
	for i := range count {
		n := incident.Notification{
			Incident: incident.Incident{ID: fmt.Sprintf("fp%03d-1", i), Fingerprint: fmt.Sprintf("fp%03d", i), Rule: "pod-crashloop",
				Severity: "critical", Reason: "CrashLoopBackOff", Title: "CrashLoopBackOff", Text: "crash",
				Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: fmt.Sprintf("web-%d", i), UID: "u"},
				Sinks:  []string{"hook", "bus", "chat"}, FirstSeen: time.Now()},
			Transition: incident.Firing, Seq: 1, Time: time.Now(),
		}
		want = append(want, n.ID())
		if err := d.Dispatch(ctx, n); err != nil {
			t.Fatal(err)
		}
		time.Sleep(outage / count) // notifications keep coming through the outage
	}
	time.Sleep(time.Until(start.Add(outage))) // the rest of the outage
	ns = natstest.Start(t, dir, port)
	defer ns.Shutdown()
	down.Store(false)
	recovered := time.Now()

	got := func() map[string]int {
		out := map[string]int{}
		for name, set := range map[string]*idSet{"hook": hookGot, "chat": slackGot} {
			out[name] = len(set.missing(want))
		}
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			out["bus"] = count
			return out
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		s, err := js.Stream(ctx, "HERALD")
		if err != nil {
			out["bus"] = count
			return out
		}
		info, _ := s.Info(ctx)
		out["bus"] = count - int(info.State.Msgs)
		return out
	}
	var missing map[string]int
	wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		missing = got()
		return missing["hook"]+missing["chat"]+missing["bus"] == 0, nil
	})
	for name, n := range missing {
		if n != 0 {
			t.Errorf("%s: %d of %d notifications missing after the outage", name, n, count)
		}
	}
	if slack429.Load() == 0 {
		t.Error("Slack never answered 429: the outage was not exercised")
	}
	t.Logf("%d notifications per sink during a %s outage; all delivered %s after recovery (%d Slack 429s)",
		count, outage, time.Since(recovered).Round(100*time.Millisecond), slack429.Load())
}

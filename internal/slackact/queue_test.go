package slackact

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/actions"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/slackstandin"
	slacksink "github.com/herald-k8s/herald/sinks/slack"
)

// knownIncidents is the executor's view of the ledger.
type knownIncidents struct {
	mu   sync.Mutex
	incs map[string]incident.Incident
}

func (k *knownIncidents) Lookup(id string) (incident.Incident, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	inc, ok := k.incs[id]
	return inc, ok
}
func (k *knownIncidents) Acks() incident.Acks { return incident.Acks{} } // no button here acknowledges

// TestPressesOfOnePersonHoldNoOneElse: on Slack's stand-in, over Socket
// Mode: ana's More logs hangs (its log fetch does not answer); bob's More
// logs on another incident is answered meanwhile. And eve, pressing a
// button she may not use a dozen times, is told once, not a dozen times.
func TestPressesOfOnePersonHoldNoOneElse(t *testing.T) {
	sl, err := slackstandin.Start(slackstandin.Options{Users: map[string]string{"U0ANA1": "ana", "U0BOB1": "bob", "U0EVE1": "eve"}, RetryAfter: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sl.Close)
	api := slack.New("xoxb-test", slack.OptionAPIURL(sl.URL()+"/api/"))
	post := func(id string) (channel, ts string) {
		button := slack.NewButtonBlockElement(slacksink.ActionMoreLogs, id, slack.NewTextBlockObject(slack.PlainTextType, "More logs", false, false))
		channel, ts, err := api.PostMessage("C0ALERTS", slack.MsgOptionText("alert "+id, false), slack.MsgOptionBlocks(slack.NewActionBlock("a", button)))
		if err != nil {
			t.Fatal(err)
		}
		return channel, ts
	}
	known := &knownIncidents{incs: map[string]incident.Incident{}}
	msgs := map[string][2]string{}
	for _, id := range []string{"slow-1", "fast-1", "other-1"} {
		c, ts := post(id)
		msgs[id] = [2]string{c, ts}
		known.incs[id] = incident.Incident{ID: id, Refs: map[string]string{"slack": c + ":" + ts}}
	}
	decoyChannel, decoyTS := post("other-1") // a second message of other-1: not the one herald posted
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	x := actions.New(actions.Options{Incidents: known, Logger: slog.New(slog.DiscardHandler),
		Logs: func(ctx context.Context, inc incident.Incident, _ int) (*incident.Logs, error) {
			if inc.ID == "slow-1" {
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return &incident.Logs{Container: "app", Lines: []string{"log of " + inc.ID}}, nil
		}})
	r := New(Options{Sink: "slack", BotToken: "xoxb-test", AppToken: "xapp-1-A0STANDIN-1-0123abcd", APIURL: sl.URL() + "/api/",
		Interactive: &config.Interactive{}, Executor: x, Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(prometheus.NewRegistry())})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Run(ctx)

	press := func(id, user string, where [2]string) string {
		t.Helper()
		var env string
		err := sl.WaitFor(ctx, func(s *slackstandin.Server) bool {
			env, err = s.Press(ctx, slackstandin.Press{Channel: where[0], TS: where[1], ActionID: slacksink.ActionMoreLogs, User: user})
			return err == nil // until the Socket Mode connection is live
		})
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	replied := func(id string) bool {
		for _, m := range sl.Replies(msgs[id][0], msgs[id][1]) {
			if strings.Contains(m.Text, "log of "+id) {
				return true
			}
		}
		return false
	}
	press("slow-1", "U0ANA1", msgs["slow-1"])
	press("fast-1", "U0BOB1", msgs["fast-1"])
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if err := sl.WaitFor(wait, func(*slackstandin.Server) bool { return replied("fast-1") }); err != nil {
		t.Fatal("bob's More logs was not answered while ana's hung: one person's slow press holds everyone's")
	}
	if replied("slow-1") {
		t.Fatal("ana's press was answered before its fetch returned: the test shows nothing")
	}
	close(release)
	// Each step that follows has 10 s of its own: one budget shared by
	// all of them ran out on a machine busy with other packages' tests.
	step := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 10*time.Second) }
	answered, stopAnswered := step()
	defer stopAnswered()
	if err := sl.WaitFor(answered, func(*slackstandin.Server) bool { return replied("slow-1") }); err != nil {
		t.Fatal("ana's More logs was never answered")
	}

	// Eve's presses one after another, each acknowledged before the
	// next: sent at once, 12 outran the queue of 10 whenever her worker
	// was slow to start, and a press left unacknowledged for Slack to
	// deliver again (queue.go) waits the stand-in's RetryAfter, a minute.
	for range 12 {
		env := press("other-1", "U0EVE1", [2]string{decoyChannel, decoyTS})
		acked, stopAcked := step()
		err := sl.WaitAcked(acked, env)
		stopAcked()
		if err != nil {
			t.Fatal(err)
		}
	}
	if eph := sl.Ephemerals("U0EVE1"); len(eph) != 1 || !strings.Contains(eph[0].Text, "not on the message herald posted") {
		t.Errorf("eve's 12 refused presses were answered %d times, want once: %+v", len(eph), eph)
	}
}

// Package slack posts notifications to Slack as Block Kit messages. With a
// bot token, an incident is one message edited in place as it evolves
// (chat.update) with a short reply in its thread for each change; through
// an incoming webhook, which cannot edit, every change is a new message.
package slack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/herald-k8s/herald/internal/fence"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// RefStore remembers where an incident's message is (channel and ts), so
// later notifications edit it; the incident ledger implements it, so the
// link survives restarts.
type RefStore interface {
	Ref(incidentID, sink string) string
	SetRef(incidentID, sink, ref string)
}

// Options configure a Slack sink. Exactly one of Token and WebhookURL.
type Options struct {
	Name        string
	Token       string
	WebhookURL  string
	Channel     string
	APIURL      string // default Slack's
	ClusterName string
	Refs        RefStore
	Timeout     time.Duration
	// Interactive: the operator configured Socket Mode, so presses of
	// herald's buttons reach it; with a bot token, messages about open
	// incidents then carry them (actions.go). Off: no buttons.
	Interactive bool
	// NoSilence leaves the Silence and Unsilence buttons out (nobody may
	// press them).
	NoSilence bool
}

// Sink is a Slack sink.
type Sink struct {
	opts   Options
	api    *slack.Client
	client *http.Client
	now    func() time.Time
	// misrouted is told when a message meant for a channel went to the
	// default one because Slack refused it there (sinks.Misrouter).
	misrouted func(channel, reason string)
}

// OnMisrouted implements sinks.Misrouter; call before the first Send.
func (s *Sink) OnMisrouted(report func(channel, reason string)) { s.misrouted = report }

// New makes a Slack sink with its own HTTP client.
func New(opts Options) *Sink {
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	// Fenced: a request made for a leader whose hold has ended is not sent.
	client := &http.Client{Timeout: opts.Timeout, Transport: fence.Transport(http.DefaultTransport.(*http.Transport).Clone()), CheckRedirect: sinks.SameHostRedirects}
	s := &Sink{opts: opts, client: client, now: time.Now}
	if opts.Token != "" {
		apiOpts := []slack.Option{slack.OptionHTTPClient(client)}
		if opts.APIURL != "" {
			apiOpts = append(apiOpts, slack.OptionAPIURL(strings.TrimSuffix(opts.APIURL, "/")+"/"))
		}
		s.api = slack.New(opts.Token, apiOpts...)
	}
	return s
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.opts.Name }

// channel is where n goes: its route's or rule's channel, else the
// sink's default.
func (s *Sink) channel(n incident.Notification) string {
	if ch := sinks.Destination(n, s.opts.Name); ch != "" {
		return ch
	}
	return s.opts.Channel
}

// Send implements sinks.Sink.
func (s *Sink) Send(ctx context.Context, n incident.Notification) error {
	if n.Transition == incident.Digest {
		return s.postDigest(ctx, s.channel(n), RenderStartup(n, s.opts.ClusterName))
	}
	msg := RenderWith(n, s.now(), RenderOptions{Cluster: s.opts.ClusterName, Buttons: s.opts.Interactive && s.api != nil, NoSilence: s.opts.NoSilence})
	if s.api == nil {
		return s.postWebhook(ctx, msg)
	}
	ref := ""
	if s.opts.Refs != nil {
		ref = s.opts.Refs.Ref(n.Incident.ID, s.opts.Name)
	}
	channel, ts, found := strings.Cut(ref, ":")
	if n.Transition == incident.Firing || !found {
		ch, newTS, err := s.postOrFallBack(ctx, s.channel(n), msg)
		if err != nil {
			return classify("chat.postMessage", err)
		}
		if s.opts.Refs != nil {
			s.opts.Refs.SetRef(n.Incident.ID, s.opts.Name, ch+":"+newTS)
		}
		return nil
	}
	// Later changes edit the first message, so the channel shows the
	// incident's current state once, and note the change in its thread.
	if _, _, _, err := s.api.UpdateMessageContext(ctx, channel, ts, msg.options()...); err != nil {
		return classify("chat.update", err)
	}
	if _, _, err := s.api.PostMessageContext(ctx, channel, slack.MsgOptionTS(ts), slack.MsgOptionText(ThreadNote(n, s.now()), false)); err != nil {
		return classify("chat.postMessage (thread)", err)
	}
	return nil
}

// SendBatch implements sinks.BatchSender: one digest message for many
// notifications (a first start, or a storm under the rate limit).
func (s *Sink) SendBatch(ctx context.Context, ns []incident.Notification) error {
	return s.postDigest(ctx, s.channel(ns[0]), RenderDigest(ns, s.opts.ClusterName))
}

// postDigest posts a digest to channel: the dispatcher (and the first
// start) split digests by destination, so its notifications share one.
func (s *Sink) postDigest(ctx context.Context, channel string, msg Message) error {
	if s.api == nil {
		return s.postWebhook(ctx, msg)
	}
	if _, _, err := s.postOrFallBack(ctx, channel, msg); err != nil {
		return classify("chat.postMessage (digest)", err)
	}
	return nil
}

func (s *Sink) postWebhook(ctx context.Context, msg Message) error {
	blocks := slack.Blocks{BlockSet: msg.Blocks}
	err := slack.PostWebhookCustomHTTPContext(ctx, s.opts.WebhookURL, s.client, &slack.WebhookMessage{Text: msg.Text, Blocks: &blocks})
	if err != nil {
		return classify("incoming webhook", err)
	}
	return nil
}

// classify maps Slack's errors onto the dispatcher's: rate limits and
// server or network errors are retried; Slack's refusals (bad token,
// unknown channel) are not. Errors never carry the token or webhook URL.
func classify(call string, err error) error {
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return &sinks.Retryable{After: rl.RetryAfter, Err: fmt.Errorf("slack %s: rate limited", call)}
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) {
		if sc.Retryable() {
			return &sinks.Retryable{Err: fmt.Errorf("slack %s: HTTP %d", call, sc.Code)}
		}
		return fmt.Errorf("slack %s: HTTP %d", call, sc.Code)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return &sinks.Retryable{Err: fmt.Errorf("slack %s: %v", call, redact(err))}
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return fmt.Errorf("slack %s: %s (not retried: fix the token, scopes or channel)", call, se.Err)
	}
	return fmt.Errorf("slack %s: %v", call, redact(err))
}

// redact drops the URL net/http repeats in its errors (a webhook URL's
// path is its secret).
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

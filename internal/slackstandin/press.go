package slackstandin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// envelope is one Socket Mode delivery as Slack keeps it until it is
// acknowledged: the payload is fixed when the envelope is made, so every
// redelivery carries the same envelope_id, action_ts and trigger_id.
type envelope struct {
	id         string
	typ        string
	payload    json.RawMessage
	attempt    int       // retry_attempt of the latest delivery
	deliveries int       // how many times it was sent
	conn       *wsConn   // in flight on; nil = acked, given up, or waiting for a connection
	deadline   time.Time // when an unacknowledged delivery is retried
	acked      bool
	gaveUp     bool
	ackPayload json.RawMessage
	respond    responseTarget // what its response_url acts on
}

// Press is a user clicking a button on a stored message.
type Press struct {
	// Channel and TS name the message whose button is pressed. It must
	// exist: its blocks are sent as payload.message.
	Channel, TS string
	// ActionID is the button's action_id. Its value and block_id are read
	// from the stored message's blocks (the button element with that
	// action_id in an "actions" block).
	ActionID string
	// User is the presser's user ID; the name comes from Options.Users.
	User string
}

// Press delivers a block_actions interactive envelope to one live Socket
// Mode connection and returns its envelope_id. It returns once the envelope
// is queued; use WaitAcked to wait for the client's acknowledgement. It
// fails if the message, the button or the user is unknown, or if no
// connection is live (Slack would not deliver either).
func (s *Server) Press(ctx context.Context, p Press) (envelopeID string, err error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", errClosed
	}
	m := s.byKey[messageKey(p.Channel, p.TS)]
	if m == nil {
		return "", fmt.Errorf("slackstandin: press: no message %s in %s", p.TS, p.Channel)
	}
	name, ok := s.opts.Users[p.User]
	if !ok {
		return "", fmt.Errorf("slackstandin: press: unknown user %q (add it to Options.Users)", p.User)
	}
	btn, err := findButton(m.Blocks, p.ActionID)
	if err != nil {
		return "", fmt.Errorf("slackstandin: press on %s/%s: %w", p.Channel, p.TS, err)
	}
	c := s.pickConnLocked()
	if c == nil {
		return "", fmt.Errorf("slackstandin: press: no live Socket Mode connection")
	}

	e := &envelope{id: s.nextIDLocked("env"), typ: "interactive",
		respond: responseTarget{channel: m.Channel, ts: m.TS, user: p.User}}
	now := time.Now()
	container := map[string]any{"type": "message", "message_ts": m.TS, "channel_id": m.Channel, "is_ephemeral": false}
	if m.ThreadTS != "" {
		container["thread_ts"] = m.ThreadTS
	}
	payload := map[string]any{
		"type":         "block_actions",
		"team":         map[string]any{"id": TeamID, "domain": TeamDomain},
		"user":         map[string]any{"id": p.User, "username": name, "name": name, "team_id": TeamID},
		"api_app_id":   AppID,
		"token":        "standin-verification-token",
		"container":    container,
		"trigger_id":   fmt.Sprintf("%d.%d.%s", now.Unix(), s.seq, e.id),
		"channel":      map[string]any{"id": m.Channel, "name": strings.TrimPrefix(m.Channel, "#")},
		"message":      messageJSON(m),
		"state":        map[string]any{"values": map[string]any{}},
		"response_url": s.url + "/actions/" + TeamID + "/" + e.id,
		"actions": []map[string]any{{
			"action_id": p.ActionID, "block_id": btn.blockID, "text": btn.text, "value": btn.value,
			"type": "button", "action_ts": fmt.Sprintf("%d.%06d", now.Unix(), now.Nanosecond()/1000),
		}},
	}
	if e.payload, err = json.Marshal(payload); err != nil {
		return "", fmt.Errorf("slackstandin: press: %w", err)
	}
	s.envelopes = append(s.envelopes, e)
	s.byEnvelope[e.id] = e
	s.opts.Logf("slackstandin: %s presses %s on %s/%s", p.User, p.ActionID, p.Channel, p.TS)
	s.deliverLocked(e, c, "")
	return e.id, nil
}

type button struct {
	blockID, value string
	text           json.RawMessage
}

// findButton finds the button with actionID in the "actions" blocks. A
// block posted without a block_id gets one derived from its position, as
// Slack generates one for it (the stored blocks are left as posted).
func findButton(blocks json.RawMessage, actionID string) (button, error) {
	var bs []struct {
		Type     string            `json:"type"`
		BlockID  string            `json:"block_id"`
		Elements []json.RawMessage `json:"elements"`
	}
	if len(blocks) == 0 {
		return button{}, fmt.Errorf("the message has no blocks")
	}
	if err := json.Unmarshal(blocks, &bs); err != nil {
		return button{}, fmt.Errorf("its blocks: %w", err)
	}
	for i, b := range bs {
		if b.Type != "actions" {
			continue
		}
		for _, raw := range b.Elements {
			var el struct {
				Type     string          `json:"type"`
				ActionID string          `json:"action_id"`
				Value    string          `json:"value"`
				Text     json.RawMessage `json:"text"`
			}
			if json.Unmarshal(raw, &el) != nil || el.Type != "button" || el.ActionID != actionID {
				continue
			}
			id := b.BlockID
			if id == "" {
				id = fmt.Sprintf("standin-block-%d", i)
			}
			return button{blockID: id, value: el.Value, text: el.Text}, nil
		}
	}
	return button{}, fmt.Errorf("no button with action_id %q in an actions block", actionID)
}

// Acked reports whether the envelope has been acknowledged.
func (s *Server) Acked(envelopeID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byEnvelope[envelopeID]
	return e != nil && e.acked
}

// AckPayload is the payload the client sent with its acknowledgement, if any.
func (s *Server) AckPayload(envelopeID string) json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byEnvelope[envelopeID]; e != nil {
		return cloneRaw(e.ackPayload)
	}
	return nil
}

// WaitAcked waits until the envelope is acknowledged. It fails at once for
// an envelope the stand-in never made, and when Slack would have given up
// on it (every retry unacknowledged).
func (s *Server) WaitAcked(ctx context.Context, envelopeID string) error {
	var gaveUp, unknown bool
	err := s.WaitFor(ctx, func(s *Server) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		e := s.byEnvelope[envelopeID]
		unknown = e == nil
		gaveUp = e != nil && e.gaveUp && !e.acked
		return unknown || gaveUp || e.acked
	})
	switch {
	case err != nil:
		return err
	case unknown:
		return fmt.Errorf("slackstandin: no envelope %q", envelopeID)
	case gaveUp:
		return fmt.Errorf("slackstandin: envelope %s never acknowledged (%d retries)", envelopeID, maxRetries)
	}
	return nil
}

// DropAcks makes the stand-in ignore the next n acknowledgements it
// receives, as if the connection broke before they arrived: those
// envelopes stay unacknowledged and are delivered again.
func (s *Server) DropAcks(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropAcks += n
}

// DroppedAcks is how many acknowledgements DropAcks has made the stand-in
// ignore so far; a test waits on it to know the drop has happened before
// it, say, breaks the connection.
func (s *Server) DroppedAcks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Deliveries is how many times the envelope was sent (1 + retries).
func (s *Server) Deliveries(envelopeID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byEnvelope[envelopeID]; e != nil {
		return e.deliveries
	}
	return 0
}

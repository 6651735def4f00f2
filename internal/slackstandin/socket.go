package slackstandin

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

// wsConn is one live Socket Mode connection. Gorilla's connections allow
// one writer at a time, so everything sent on it goes through its queue to
// a single writer goroutine; the queue lets delivery happen under s.mu
// without blocking on the network.
type wsConn struct {
	id    int
	ws    *websocket.Conn
	queue [][]byte      // guarded by Server.mu
	wake  chan struct{} // capacity 1: "the queue is not empty"
	done  chan struct{} // closed when the connection is over
}

// sendLocked queues one frame. Callers hold s.mu.
func (c *wsConn) sendLocked(frame []byte) {
	c.queue = append(c.queue, frame)
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Connections is the number of live Socket Mode connections.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// WaitConnected waits until at least one Socket Mode connection is live
// (its hello has been queued).
func (s *Server) WaitConnected(ctx context.Context) error {
	return s.WaitFor(ctx, func(s *Server) bool { return s.Connections() > 0 })
}

// Disconnect sends Slack's "disconnect" message with the given reason
// ("refresh_requested", "warning", "link_disabled") to every live
// connection, as Slack does before it recycles a connection; a well-behaved
// client opens a new one. It returns how many connections were told.
func (s *Server) Disconnect(reason string) int {
	frame, _ := json.Marshal(map[string]any{"type": "disconnect", "reason": reason, "debug_info": debugInfo()})
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.sendLocked(frame)
	}
	return len(s.conns)
}

// DropConnections closes every live connection without a close frame, as
// a network failure would. It returns how many it closed; each is counted
// out of Connections once its reader has noticed.
func (s *Server) DropConnections() int {
	s.mu.Lock()
	conns := append([]*wsConn(nil), s.conns...)
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.ws.Close()
	}
	return len(conns)
}

func debugInfo() map[string]any {
	return map[string]any{"host": "slackstandin", "build_number": 1, "approximate_connection_time": 18060}
}

// serveSocket is the Socket Mode endpoint, reached through a URL that
// apps.connections.open issued. Each ticket admits one connection.
func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	if s.closed || !s.tickets[ticket] {
		s.mu.Unlock()
		http.Error(w, "invalid or used ticket", http.StatusUnauthorized)
		return
	}
	delete(s.tickets, ticket)
	s.wg.Add(1) // while s.closed is false, so before Close's Wait
	s.mu.Unlock()
	defer s.wg.Done()

	// slack-go sends Origin: https://api.slack.com, which is not this host.
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the client
	}
	ws.SetReadLimit(1 << 20)
	c := &wsConn{ws: ws, wake: make(chan struct{}, 1), done: make(chan struct{})}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ws.Close()
		return
	}
	s.connSeq++
	c.id = s.connSeq
	s.conns = append(s.conns, c)
	hello, _ := json.Marshal(map[string]any{"type": "hello", "num_connections": len(s.conns),
		"debug_info": debugInfo(), "connection_info": map[string]any{"app_id": AppID}})
	c.sendLocked(hello)
	s.opts.Logf("slackstandin: socket connection %d open (%d live)", c.id, len(s.conns))
	s.deliverPendingLocked(c)
	s.changedLocked()
	s.wg.Add(1)
	s.mu.Unlock()

	go s.writeLoop(c)
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			break
		}
		s.receive(c, data)
	}
	close(c.done)
	_ = ws.Close()
	s.mu.Lock()
	s.connClosedLocked(c)
	s.mu.Unlock()
}

// writeLoop is the connection's only writer: queued frames, and a ping
// every PingInterval, because slack-go's socketmode client takes a
// connection that Slack has not pinged for 30 s for a dead one.
func (s *Server) writeLoop(c *wsConn) {
	defer s.wg.Done()
	ping := time.NewTicker(s.opts.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(10*time.Second)); err != nil {
				_ = c.ws.Close()
				return
			}
		case <-c.wake:
			s.mu.Lock()
			q := c.queue
			c.queue = nil
			s.mu.Unlock()
			for _, frame := range q {
				_ = c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if err := c.ws.WriteMessage(websocket.TextMessage, frame); err != nil {
					_ = c.ws.Close() // the reader sees it and cleans up
					return
				}
			}
		}
	}
}

// receive handles one frame from the client: an acknowledgement,
// {"envelope_id": "…", "payload": …}.
func (s *Server) receive(c *wsConn, data []byte) {
	var ack struct {
		EnvelopeID string          `json:"envelope_id"`
		Payload    json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(data, &ack); err != nil || ack.EnvelopeID == "" {
		s.opts.Logf("slackstandin: connection %d sent a frame that is no ack: %.200s", c.id, data)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropAcks > 0 {
		s.dropAcks--
		s.dropped++
		s.opts.Logf("slackstandin: ack for %s dropped on purpose", ack.EnvelopeID)
		s.changedLocked()
		return
	}
	e := s.byEnvelope[ack.EnvelopeID]
	if e == nil {
		s.opts.Logf("slackstandin: ack for unknown envelope %s", ack.EnvelopeID)
		return
	}
	if e.acked {
		return // a late ack of an earlier delivery
	}
	e.acked, e.conn = true, nil
	e.ackPayload = cloneRaw(ack.Payload)
	s.opts.Logf("slackstandin: envelope %s acked on connection %d", e.id, c.id)
	s.changedLocked()
}

// connClosedLocked forgets a connection. Envelopes in flight on it and not
// acknowledged are delivered again: at once on another live connection if
// there is one, else on the next connection that opens.
func (s *Server) connClosedLocked(c *wsConn) {
	for i, x := range s.conns {
		if x == c {
			s.conns = append(s.conns[:i], s.conns[i+1:]...)
			break
		}
	}
	if !s.closed {
		s.opts.Logf("slackstandin: socket connection %d closed (%d live)", c.id, len(s.conns))
	}
	for _, e := range s.envelopes {
		if e.conn == c && !e.acked {
			e.conn = nil
			if next := s.pickConnLocked(); next != nil && !s.closed {
				s.redeliverLocked(e, next, "connection_closed")
			}
		}
	}
	s.changedLocked()
}

// deliverPendingLocked sends a new connection the envelopes waiting for one.
func (s *Server) deliverPendingLocked(c *wsConn) {
	for _, e := range s.envelopes {
		if e.conn == nil && !e.acked && !e.gaveUp {
			s.redeliverLocked(e, c, "connection_closed")
		}
	}
}

// pickConnLocked chooses a live connection, round-robin, as Slack spreads
// envelopes over an app's connections; nil if there is none.
func (s *Server) pickConnLocked() *wsConn {
	if len(s.conns) == 0 {
		return nil
	}
	c := s.conns[s.nextConn%len(s.conns)]
	s.nextConn++
	return c
}

// redeliverLocked sends e once more with retry_attempt+1, unless it has
// had its maxRetries retries, when Slack gives up on it.
func (s *Server) redeliverLocked(e *envelope, c *wsConn, reason string) {
	if e.attempt >= maxRetries {
		e.gaveUp, e.conn = true, nil
		s.opts.Logf("slackstandin: envelope %s not acked after %d retries: given up", e.id, e.attempt)
		s.changedLocked()
		return
	}
	if c == nil {
		e.conn = nil // waits for the next connection
		return
	}
	e.attempt++
	s.deliverLocked(e, c, reason)
}

// deliverLocked sends e on c as it stands (retry_attempt e.attempt) and
// arms its retry deadline.
func (s *Server) deliverLocked(e *envelope, c *wsConn, reason string) {
	frame, _ := json.Marshal(map[string]any{
		"envelope_id": e.id, "type": e.typ, "accepts_response_payload": false,
		"retry_attempt": e.attempt, "retry_reason": reason, "payload": e.payload,
	})
	c.sendLocked(frame)
	e.conn = c
	e.deliveries++
	e.deadline = time.Now().Add(s.opts.RetryAfter)
	select {
	case s.retryWake <- struct{}{}:
	default:
	}
	s.opts.Logf("slackstandin: envelope %s sent on connection %d (retry_attempt %d %s)", e.id, c.id, e.attempt, reason)
	s.changedLocked()
}

// retryLoop delivers again every envelope whose retry deadline has passed
// without an ack. One goroutine with one timer, rather than a timer per
// envelope, so that Close can wait for it.
func (s *Server) retryLoop() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		s.mu.Lock()
		next := s.retryDueLocked(time.Now())
		s.mu.Unlock()
		var due <-chan time.Time
		if !next.IsZero() {
			timer.Reset(time.Until(next))
			due = timer.C
		}
		select {
		case <-s.quit:
			timer.Stop()
			return
		case <-s.retryWake:
		case <-due:
		}
		timer.Stop()
	}
}

// retryDueLocked retries what is due at now and returns the next deadline
// (zero if none).
func (s *Server) retryDueLocked(now time.Time) time.Time {
	if s.closed {
		return time.Time{}
	}
	var next time.Time
	for _, e := range s.envelopes {
		if e.conn == nil || e.acked {
			continue
		}
		if !now.Before(e.deadline) {
			s.redeliverLocked(e, s.pickConnLocked(), "timeout")
			if e.conn == nil {
				continue
			}
		}
		if next.IsZero() || e.deadline.Before(next) {
			next = e.deadline
		}
	}
	return next
}

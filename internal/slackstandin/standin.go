// Package slackstandin is a stand-in for Slack on a loopback port: the subset
// of the Web API herald calls and a Socket Mode WebSocket endpoint, so that
// herald's real slack-go client (and its socketmode client) can be tested —
// and demonstrated — end to end without a Slack workspace.
//
// Point the client at it with slack.OptionAPIURL(s.URL()+"/api/"). The
// stand-in keeps every message it is sent, lets a test press a button on one
// of them (Press), and behaves like Slack where herald's correctness depends
// on it: envelopes that are not acknowledged are delivered again, after a
// timeout or on the next connection, with the same envelope_id and payload.
//
// The package does not import "testing" on purpose: the demo uses it too.
package slackstandin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// The stand-in's fixed identity. Payloads carry these where real Slack puts
// the workspace's, the app's and the bot's IDs, so tests can compare them.
const (
	TeamID     = "T0STANDIN"
	TeamDomain = "herald-standin"
	AppID      = "A0STANDIN"
	BotID      = "B0STANDIN"
	BotUserID  = "U0STANDINBOT"
	BotName    = "herald"
)

// Options configure a stand-in. The zero value works.
type Options struct {
	// Logf receives one line per notable event (a message posted, an
	// envelope sent, an ack dropped). nil discards. It must not call back
	// into the Server: it may be called with the Server's lock held.
	Logf func(string, ...any)
	// Users the stand-in knows: ID -> display name (users.info answers them).
	Users map[string]string
	// Groups: user group ID (S…) -> member user IDs (usergroups.users.list).
	Groups map[string][]string
	// BotToken and AppToken are the bearer tokens the stand-in expects.
	// "" accepts any token of the right kind (xoxb- or xapp-).
	BotToken, AppToken string
	// RetryAfter is how long an envelope may stay unacknowledged on a live
	// connection before it is delivered again (Slack: about 3 s). Default 3 s.
	RetryAfter time.Duration
	// Addr is where to listen, host:port; "" is 127.0.0.1 with a port
	// of the kernel's choice (a test node's pods reach the host at the
	// host end of their node's link instead).
	Addr string
	// PingInterval is how often the stand-in pings each Socket Mode
	// connection. slack-go's socketmode client treats a connection that has
	// not been pinged for 30 s as dead, so this must stay well below that.
	// Default 5 s.
	PingInterval time.Duration
}

// maxRetries is how often Slack retries an unacknowledged envelope before it
// gives up on it.
const maxRetries = 3

// Message is one message as the stand-in stores it.
type Message struct {
	Channel, TS, ThreadTS string
	Text                  string
	Blocks                json.RawMessage // as posted / last updated
	Metadata              json.RawMessage
	Updates               int // how many chat.update calls edited it
	// Ephemeral messages (chat.postEphemeral) are seen only by User.
	Ephemeral bool
	User      string
}

// clone returns a copy that shares no memory with m, so callers may keep
// or change what Messages and friends return without touching the store.
func (m Message) clone() Message {
	m.Blocks = cloneRaw(m.Blocks)
	m.Metadata = cloneRaw(m.Metadata)
	return m
}

func cloneRaw(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	return bytes.Clone(r)
}

// Server is a running stand-in. All methods are safe for concurrent use.
type Server struct {
	opts Options
	ln   net.Listener
	http *http.Server
	url  string

	// wg counts the goroutines Close must wait for (Socket Mode connection
	// handlers and the retry loop), so nothing logs after Close returns.
	wg         sync.WaitGroup
	quit       chan struct{}
	retryWake  chan struct{}
	closeOnce  sync.Once
	mu         sync.Mutex
	changed    chan struct{} // closed and replaced on every change (WaitFor)
	closed     bool
	lastTS     int64 // microseconds of the last ts handed out
	seq        int   // for envelope IDs, tickets, trigger IDs
	connSeq    int   // numbers connections 1, 2, … in the log
	messages   []*Message
	byKey      map[string]*Message // channel + "/" + ts; not ephemerals
	tickets    map[string]bool     // issued by apps.connections.open, unused
	conns      []*wsConn           // live, in connection order
	nextConn   int                 // round-robin over conns
	envelopes  []*envelope         // in press order
	byEnvelope map[string]*envelope
	dropAcks   int
	dropped    int
}

// Start starts a stand-in on Options.Addr, by default 127.0.0.1 with a
// port of the kernel's choice.
func Start(opts Options) (*Server, error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = 3 * time.Second
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = 5 * time.Second
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("slackstandin: listen: %w", err)
	}
	s := &Server{
		opts:       opts,
		ln:         ln,
		url:        "http://" + ln.Addr().String(),
		quit:       make(chan struct{}),
		retryWake:  make(chan struct{}, 1),
		changed:    make(chan struct{}),
		byKey:      map[string]*Message{},
		tickets:    map[string]bool{},
		byEnvelope: map[string]*envelope{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.serveAPI)
	mux.HandleFunc("/link/", s.serveSocket)
	mux.HandleFunc("/actions/", s.serveResponseURL)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.http.Serve(ln) }()
	s.wg.Add(1)
	go s.retryLoop()
	return s, nil
}

// URL is the stand-in's base URL, http://127.0.0.1:port. The Web API is at
// URL()+"/api/".
func (s *Server) URL() string { return s.url }

// Close stops the stand-in: it closes every Socket Mode connection, stops
// serving HTTP and waits for its goroutines, so no Logf call happens after
// Close returns (a test's t.Logf would panic).
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		conns := append([]*wsConn(nil), s.conns...)
		s.changedLocked()
		s.mu.Unlock()
		close(s.quit)
		for _, c := range conns {
			_ = c.ws.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.http.Shutdown(ctx); err != nil {
			_ = s.http.Close()
		}
		s.wg.Wait()
	})
}

// changedLocked wakes every WaitFor. Callers hold s.mu.
func (s *Server) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// WaitFor returns nil as soon as cond(s) is true, or ctx's error. cond is
// evaluated again after every change to the stand-in's state (a message,
// a connection, a delivery, an ack), never by polling on a clock; it is
// called without the lock held, so it may call any Server method.
func (s *Server) WaitFor(ctx context.Context, cond func(*Server) bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		// ch is taken before cond runs, so a change cond misses closes ch.
		if cond(s) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Messages returns every message — top-level messages, thread replies and
// ephemerals — in the order they were posted, as copies.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, 0, len(s.messages))
	for _, m := range s.messages {
		out = append(out, m.clone())
	}
	return out
}

// Message returns the non-ephemeral message with that channel (as posted)
// and ts.
func (s *Server) Message(channel, ts string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.byKey[messageKey(channel, ts)]
	if !ok {
		return Message{}, false
	}
	return m.clone(), true
}

// Replies returns the thread replies to the message channel/ts, in order.
func (s *Server) Replies(channel, ts string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages {
		if m.Channel == channel && m.ThreadTS == ts && m.TS != ts && !m.Ephemeral {
			out = append(out, m.clone())
		}
	}
	return out
}

// Ephemerals returns the ephemeral messages posted for user, in order.
func (s *Server) Ephemerals(user string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages {
		if m.Ephemeral && m.User == user {
			out = append(out, m.clone())
		}
	}
	return out
}

func messageKey(channel, ts string) string { return channel + "/" + ts }

// nextTSLocked hands out a message timestamp: the wall clock in Slack's
// "seconds.microseconds" form, strictly increasing even when two messages
// arrive within one microsecond, because a ts is a message's identity.
func (s *Server) nextTSLocked() string {
	now := time.Now().UnixMicro()
	if now <= s.lastTS {
		now = s.lastTS + 1
	}
	s.lastTS = now
	return fmt.Sprintf("%d.%06d", now/1e6, now%1e6)
}

// nextIDLocked returns a fresh identifier with the given prefix.
func (s *Server) nextIDLocked(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s%d-%d", prefix, time.Now().UnixNano()%1e9, s.seq)
}

var errClosed = errors.New("slackstandin: server closed")

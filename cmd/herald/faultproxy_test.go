package main

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// faultProxy forwards TCP connections to an upstream address (on
// loopback), adding a latency to every byte in each direction while one
// is set, and, while cut, closing every connection and refusing new ones:
// a replica's own bad network between it and the API server.
type faultProxy struct {
	t        *testing.T
	addr, to string
	latency  atomic.Int64 // nanoseconds added to each direction
	answers  atomic.Int64 // nanoseconds added to what comes back from upstream
	mu       sync.Mutex
	ln       net.Listener
	conns    []net.Conn
	held     *holding // while holding
}

// holding is one hold of a faultProxy: what it keeps goes on, once
// released, spaced as it came (a request and the cancellation its client
// sent seconds later arrive as far apart).
type holding struct {
	since      time.Time
	released   chan struct{}
	releasedAt time.Time // set before released is closed
}

func newFaultProxy(t *testing.T, to string) *faultProxy {
	p := &faultProxy{t: t, to: to}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

// setLatency delays what crosses the proxy from now on by d each way.
func (p *faultProxy) setLatency(d time.Duration) { p.latency.Store(int64(d)) }

// setAnswerLatency delays only what comes back from upstream by d: a
// request is applied at once, its answer arrives d later.
func (p *faultProxy) setAnswerLatency(d time.Duration) { p.answers.Store(int64(d)) }

// hold keeps what crosses the proxy from now on, in both directions,
// until release lets it through, in order.
func (p *faultProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = &holding{since: time.Now(), released: make(chan struct{})}
	}
}

func (p *faultProxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		p.held.releasedAt = time.Now()
		close(p.held.released)
		p.held = nil
	}
}

// holding is the hold a chunk read now waits for: nil unless the proxy
// holds.
func (p *faultProxy) holding() *holding {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

func (p *faultProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.to)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go p.pipe(up, c, &p.latency)
			go p.pipe(c, up, &p.latency, &p.answers)
		}
	}()
}

// pipe copies src to dst, each chunk when the latencies it was read under
// have passed, in order, and closes dst when src has ended and all it
// sent has gone on, or dst can take no more. It leaves src to the pipe
// of the other direction to close: a client that is gone does not take
// with it what the proxy still holds for the server.
func (p *faultProxy) pipe(dst, src net.Conn, latencies ...*atomic.Int64) {
	delay := func() (d time.Duration) {
		for _, l := range latencies {
			d += time.Duration(l.Load())
		}
		return d
	}
	type chunk struct {
		b    []byte
		due  time.Time
		held *holding // nil: not held
	}
	chunks, stop := make(chan chunk, 256), make(chan struct{})
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case chunks <- chunk{buf[:n], time.Now().Add(delay()), p.holding()}:
				case <-stop:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() { close(stop); dst.Close() }()
	for c := range chunks {
		if h := c.held; h != nil {
			<-h.released
			// As far after the release as it was read after the hold began.
			c.due = c.due.Add(h.releasedAt.Sub(h.since))
		}
		if wait := time.Until(c.due); wait > 0 {
			<-time.After(wait) // the latency being simulated
		}
		if _, err := dst.Write(c.b); err != nil {
			return
		}
	}
}

// cut closes every connection and refuses new ones until restore; what
// it held goes nowhere.
func (p *faultProxy) cut() {
	p.release()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *faultProxy) restore() {
	p.mu.Lock()
	cut := p.ln == nil
	p.mu.Unlock()
	if !cut {
		return
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.serve(ln)
}

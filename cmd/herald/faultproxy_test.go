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
// have passed, in order; either side closing closes both.
func (p *faultProxy) pipe(dst, src net.Conn, latencies ...*atomic.Int64) {
	delay := func() (d time.Duration) {
		for _, l := range latencies {
			d += time.Duration(l.Load())
		}
		return d
	}
	type chunk struct {
		b   []byte
		due time.Time
	}
	chunks, stop := make(chan chunk, 256), make(chan struct{})
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case chunks <- chunk{buf[:n], time.Now().Add(delay())}:
				case <-stop:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() { close(stop); dst.Close(); src.Close() }()
	for c := range chunks {
		if wait := time.Until(c.due); wait > 0 {
			<-time.After(wait) // the latency being simulated
		}
		if _, err := dst.Write(c.b); err != nil {
			return
		}
	}
}

// cut closes every connection and refuses new ones until restore.
func (p *faultProxy) cut() {
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

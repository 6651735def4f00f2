// Package logbuf batches herald's log lines into fewer writes.
//
// herald logs a line for every incident it opens or resolves. Written one
// by one, each line is a write(2) to the container's stderr pipe and a
// wake-up of the runtime's log reader on the other end: under churn that
// was 4–6% of herald's CPU (docs/performance.md, issue #34). A Writer
// keeps lines for at most a short delay and writes them out together;
// warnings and errors go out at once, with everything before them, so
// what an operator needs when something is wrong is never held back.
//
// What a buffer costs: if the process is killed (SIGKILL, the OOM killer)
// or a goroutine panics (outside the controller's workers, whose panics
// are logged as errors first), the lines of the last delay are lost. Go's
// own crash output does not pass through here and is kept.
package logbuf

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// maxBuffered is how many bytes a Writer holds before it writes them out
// without waiting for the delay: a burst of lines never grows the buffer
// beyond it (only a single line longer than it does, once).
const maxBuffered = 64 << 10

// Writer holds what is written to it for up to its delay, then writes it
// to the underlying writer in one call. It is safe for concurrent use.
type Writer struct {
	out   io.Writer
	delay time.Duration

	mu    sync.Mutex
	buf   []byte
	timer *time.Timer // armed while buf holds lines
	err   error       // the first write error since the last Flush, which reports it
}

// New returns a Writer that writes to out at most delay after a line
// arrives.
func New(out io.Writer, delay time.Duration) *Writer {
	w := &Writer{out: out, delay: delay}
	w.timer = time.AfterFunc(time.Hour, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.flushLocked() // an error waits for the next Flush
	})
	w.timer.Stop()
	return w
}

// Write keeps p to be written out later. It never fails: a failed write
// to the underlying writer is reported by Flush.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 && len(w.buf)+len(p) > maxBuffered {
		w.flushLocked() // p would not fit: what is held goes first
	}
	if len(w.buf) == 0 {
		if w.buf == nil {
			w.buf = make([]byte, 0, maxBuffered)
		}
		w.timer.Reset(w.delay)
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) >= maxBuffered {
		w.flushLocked()
	}
	return len(p), nil
}

// Flush writes out everything held now, and returns the first error of a
// write to the underlying writer since the last Flush.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	err := w.err
	w.err = nil
	return err
}

func (w *Writer) flushLocked() {
	w.timer.Stop()
	if len(w.buf) == 0 {
		return
	}
	if _, err := w.out.Write(w.buf); err != nil && w.err == nil {
		w.err = err
	}
	if cap(w.buf) > maxBuffered {
		w.buf = nil // grown by a single huge line: do not keep it
	} else {
		w.buf = w.buf[:0]
	}
}

// Urgent wraps h so that a record at level or above is written out at
// once, with every line before it, instead of after the Writer's delay.
func Urgent(h slog.Handler, w *Writer, level slog.Level) slog.Handler {
	return urgentHandler{Handler: h, w: w, level: level}
}

type urgentHandler struct {
	slog.Handler
	w     *Writer
	level slog.Level
}

func (h urgentHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= h.level {
		if ferr := h.w.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h urgentHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return urgentHandler{Handler: h.Handler.WithAttrs(attrs), w: h.w, level: h.level}
}

func (h urgentHandler) WithGroup(name string) slog.Handler {
	return urgentHandler{Handler: h.Handler.WithGroup(name), w: h.w, level: h.level}
}

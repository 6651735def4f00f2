package logbuf

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder counts the writes it is given.
type recorder struct {
	mu     sync.Mutex
	writes []string
	fail   error
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return 0, r.fail
	}
	r.writes = append(r.writes, string(p))
	return len(p), nil
}

func (r *recorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.writes...)
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLinesGoOutTogetherAfterTheDelay(t *testing.T) {
	out := &recorder{}
	w := New(out, 500*time.Millisecond)
	start := time.Now()
	for i := range 100 {
		w.Write([]byte(strings.Repeat("x", i%7) + "\n"))
	}
	if got := out.snapshot(); len(got) != 0 {
		t.Fatalf("%d writes before the delay, want none yet", len(got))
	}
	waitFor(t, func() bool { return len(out.snapshot()) > 0 })
	if waited := time.Since(start); waited < 500*time.Millisecond {
		t.Errorf("written out after %s, before the delay of 500 ms", waited)
	}
	got := out.snapshot()
	if len(got) != 1 || strings.Count(got[0], "\n") != 100 {
		t.Fatalf("%d writes (%d lines in the first), want all 100 lines in one write", len(got), strings.Count(got[0], "\n"))
	}
	// The next line starts a new delay.
	w.Write([]byte("later\n"))
	waitFor(t, func() bool { return len(out.snapshot()) == 2 })
	if got := out.snapshot()[1]; got != "later\n" {
		t.Errorf("second write %q, want the later line", got)
	}
}

func TestABurstIsWrittenOutWhenTheBufferIsFull(t *testing.T) {
	out := &recorder{}
	w := New(out, time.Hour)
	line := []byte(strings.Repeat("y", 1023) + "\n")
	for range maxBuffered / len(line) {
		w.Write(line)
	}
	got := out.snapshot()
	if len(got) != 1 || len(got[0]) != maxBuffered {
		t.Fatalf("after %d bytes: %d writes, want one of all of them", maxBuffered, len(got))
	}
	w.Write(line)
	if len(out.snapshot()) != 1 {
		t.Fatal("a line after the full buffer was written out at once")
	}
	w.Flush()
	if got := out.snapshot(); len(got) != 2 || got[1] != string(line) {
		t.Fatalf("Flush wrote %q, want the held line", got[1:])
	}
}

func TestALineThatDoesNotFitGoesAfterWhatIsHeld(t *testing.T) {
	out := &recorder{}
	w := New(out, time.Hour)
	held := []byte(strings.Repeat("h", 60<<10-1) + "\n")
	next := []byte(strings.Repeat("n", 8<<10-1) + "\n")
	w.Write(held)
	w.Write(next)
	if got := out.snapshot(); len(got) != 1 || got[0] != string(held) {
		t.Fatalf("after 60 KB and then 8 KB: %d writes, want the 60 KB held written out alone", len(got))
	}
	huge := []byte(strings.Repeat("u", 100<<10-1) + "\n")
	w.Write(huge)
	got := out.snapshot()
	if len(got) != 3 || got[1] != string(next) || got[2] != string(huge) {
		t.Fatalf("after a 100 KB line: %d writes, want the 8 KB line, then the 100 KB one at once", len(got))
	}
	if cap(w.buf) > maxBuffered {
		t.Errorf("the buffer kept %d bytes of capacity after a huge line", cap(w.buf))
	}
}

func TestWarningsGoOutAtOnceWithWhatCameBefore(t *testing.T) {
	out := &recorder{}
	w := New(out, time.Hour)
	logger := slog.New(Urgent(slog.NewJSONHandler(w, nil), w, slog.LevelWarn)).With("component", "test")
	logger.Info("incident firing", "n", 1)
	logger.Info("incident firing", "n", 2)
	if len(out.snapshot()) != 0 {
		t.Fatal("info lines written out before the delay")
	}
	logger.WithGroup("g").Warn("sink unreachable")
	got := out.snapshot()
	if len(got) != 1 {
		t.Fatalf("%d writes after a warning, want 1", len(got))
	}
	lines := strings.Split(strings.TrimSpace(got[0]), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], `"msg":"sink unreachable"`) || !strings.Contains(lines[0], `"n":1`) || !strings.Contains(lines[2], `"component":"test"`) {
		t.Fatalf("written out:\n%s\nwant both info lines, then the warning with the logger's attributes", got[0])
	}
	logger.Error("herald stopped with an error")
	if len(out.snapshot()) != 2 {
		t.Fatal("an error was held back")
	}
}

func TestAWriteErrorIsReportedByFlush(t *testing.T) {
	out := &recorder{fail: errors.New("broken pipe")}
	w := New(out, time.Hour)
	if _, err := w.Write([]byte("a\n")); err != nil {
		t.Fatalf("Write: %v, want no error (it only buffers)", err)
	}
	if err := w.Flush(); err == nil || err.Error() != "broken pipe" {
		t.Fatalf("Flush: %v, want the underlying writer's error", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("second Flush: %v, want the error reported once", err)
	}
	// A failed write made by the delay's timer is reported by the next
	// Flush too.
	w = New(out, time.Millisecond)
	w.Write([]byte("b\n"))
	waitFor(t, func() bool { w.mu.Lock(); defer w.mu.Unlock(); return len(w.buf) == 0 })
	if err := w.Flush(); err == nil || err.Error() != "broken pipe" {
		t.Fatalf("Flush after the timer's failed write: %v, want the underlying writer's error", err)
	}
}

// Under -race: writers on several goroutines, and the timer's flushes
// between them, never tear a line or lose one.
func TestConcurrentWritersKeepWholeLines(t *testing.T) {
	var out bytes.Buffer
	var mu sync.Mutex
	w := New(writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) }), time.Millisecond)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				w.Write([]byte(strings.Repeat(string(rune('a'+g)), 40) + "\n"))
			}
		}()
	}
	wg.Wait()
	w.Flush()
	mu.Lock()
	defer mu.Unlock()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4000 {
		t.Fatalf("%d lines, want 4000", len(lines))
	}
	for _, l := range lines {
		if len(l) != 40 || strings.Count(l, l[:1]) != 40 {
			t.Fatalf("a torn line: %q", l)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

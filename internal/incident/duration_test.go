package incident

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0 s"},
		{400 * time.Millisecond, "0 s"},
		{45 * time.Second, "45 s"},
		{59*time.Second + 600*time.Millisecond, "1 min"}, // rounded, not "60 s"
		{time.Minute, "1 min"},
		{12 * time.Minute, "12 min"},
		{12*time.Minute + 59*time.Second, "12 min"}, // seconds are noise past a minute
		{time.Hour, "1 h"},
		{3*time.Hour + 20*time.Minute + 17*time.Second, "3 h 20 min"},
		{24 * time.Hour, "1 d"},
		{50*time.Hour + 30*time.Minute, "2 d 2 h"},
		{-90 * time.Second, "1 min"}, // a clock skew never prints a minus sign
	} {
		if got := Duration(c.d); got != c.want {
			t.Errorf("Duration(%s) = %q, want %q", c.d, got, c.want)
		}
	}
}

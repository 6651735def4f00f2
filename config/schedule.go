package config

import (
	"fmt"
	"strings"
	"time"
)

// Schedule is a rule's maintenance windows: weekly time ranges, in a time
// zone, during which the rule's notifications are held back (its
// incidents still open and resolve; what is still firing when the window
// ends is sent then).
type Schedule struct {
	// TimeZone is an IANA name such as Europe/Berlin (default UTC).
	TimeZone string `yaml:"timeZone"`
	// Windows: notifications are held while any of them is open.
	Windows []Window `yaml:"windows"`

	loc *time.Location
}

// Window is one weekly time range.
type Window struct {
	// Days are weekdays (mon, tue, ..., or ranges such as mon-fri); empty
	// means every day. A window that crosses midnight belongs to the day
	// it starts on.
	Days []string `yaml:"days"`
	// From and To are HH:MM (To may be 24:00); To before From crosses
	// midnight. Both empty: the whole day.
	From string `yaml:"from"`
	To   string `yaml:"to"`

	days     [7]bool
	from, to int // minutes since midnight
}

var weekdays = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

// compile checks the schedule and prepares it, reporting each problem
// with add at its path.
func (s *Schedule) compile(p string, add func(path, format string, args ...any)) {
	s.loc = time.UTC
	if s.TimeZone != "" {
		loc, err := time.LoadLocation(s.TimeZone)
		if err != nil {
			add(p+".timeZone", "unknown time zone %q: use an IANA name such as Europe/Berlin or America/New_York", s.TimeZone)
		} else {
			s.loc = loc
		}
	}
	if len(s.Windows) == 0 {
		add(p+".windows", "list at least one window (days, from, to)")
	}
	for i := range s.Windows {
		w := &s.Windows[i]
		wp := fmt.Sprintf("%s.windows[%d]", p, i)
		if len(w.Days) == 0 {
			w.days = [7]bool{true, true, true, true, true, true, true}
		}
		for j, d := range w.Days {
			if !w.addDays(strings.ToLower(d)) {
				add(fmt.Sprintf("%s.days[%d]", wp, j), "%q is not a weekday: use mon, tue, wed, thu, fri, sat, sun or a range such as mon-fri", d)
			}
		}
		var ok bool
		if w.from, ok = minutes(w.From, 0); !ok || w.from >= 24*60 {
			add(wp+".from", "%q is not a time of day: use HH:MM, e.g. 22:00", w.From)
		}
		if w.to, ok = minutes(w.To, 24*60); !ok {
			add(wp+".to", "%q is not a time of day: use HH:MM, e.g. 06:00 (24:00 for midnight)", w.To)
		}
		if ok && w.from == w.to {
			add(wp+".to", "the window from %s to %s is empty", w.From, w.To)
		}
	}
}

func (w *Window) addDays(d string) bool {
	first, last, isRange := strings.Cut(d, "-")
	a, ok1 := weekdays[strings.TrimSpace(first)]
	b, ok2 := a, true
	if isRange {
		b, ok2 = weekdays[strings.TrimSpace(last)]
	}
	if !ok1 || !ok2 {
		return false
	}
	for day := a; ; day = (day + 1) % 7 {
		w.days[day] = true
		if day == b {
			return true
		}
	}
}

// minutes parses HH:MM ("" is def).
func minutes(s string, def int) (int, bool) {
	if s == "" {
		return def, true
	}
	var h, m int
	if n, err := fmt.Sscanf(s, "%d:%d", &h, &m); n != 2 || err != nil || len(s) != 5 || h < 0 || h > 24 || m < 0 || m > 59 || (h == 24 && m != 0) {
		return 0, false
	}
	return h*60 + m, true
}

// Open says whether a window is open at t and, if so, when the windows
// close (adjacent or overlapping windows count as one).
func (s *Schedule) Open(t time.Time) (until time.Time, open bool) {
	end, ok := s.openAt(t)
	if !ok {
		return time.Time{}, false
	}
	for range 14 { // a week of back-to-back windows at most
		next, ok := s.openAt(end)
		if !ok || !next.After(end) {
			break
		}
		end = next
	}
	return end, true
}

// openAt returns the latest end among the windows open at t.
func (s *Schedule) openAt(t time.Time) (time.Time, bool) {
	loc := s.loc
	if loc == nil {
		loc = time.UTC
	}
	t = t.In(loc)
	var best time.Time
	// A window may have started today or, crossing midnight, yesterday.
	for back := 0; back <= 1; back++ {
		y, m, d := t.AddDate(0, 0, -back).Date()
		// Wall-clock times via time.Date, so that a DST change day's
		// 22:00 is still 22:00.
		at := func(day, min int) time.Time { return time.Date(y, m, d+day, min/60, min%60, 0, 0, loc) }
		for _, w := range s.Windows {
			if !w.days[at(0, 0).Weekday()] {
				continue
			}
			start, end := at(0, w.from), at(0, w.to)
			if w.to <= w.from {
				end = at(1, w.to)
			}
			if !t.Before(start) && t.Before(end) && end.After(best) {
				best = end
			}
		}
	}
	return best, !best.IsZero()
}
